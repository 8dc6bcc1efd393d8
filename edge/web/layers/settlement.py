"""x402: a paid call is settled only once it answered 2xx; otherwise nothing is charged."""

from collections.abc import Awaitable

from edge.billing.admission import Admissions
from edge.billing.payments import Payment, PaymentInvalid, encode_header
from edge.billing.plans import units
from edge.web.http import Request, Response
from edge.web.layers import Next


class Settlement:
    """Releases a paid call's reservation when it fails, settles it when it answers 2xx, and
    puts the receipt on the answer."""

    def __init__(self, inner: Next, admissions: Admissions) -> None:
        self.inner = inner
        self.admissions = admissions

    def __call__(self, request: Request) -> Awaitable[Response]:
        payment = request.state.admission.payment
        if payment is None:
            return self.inner(request)
        return self._paid(request, payment)

    async def _paid(self, request: Request, payment: Payment) -> Response:
        ledger = self.admissions.cashier.ledger
        try:
            response = await self.inner(request)
        except BaseException:
            ledger.release(payment)
            raise
        if not 200 <= response.status < 300:
            ledger.release(payment)
            return response
        try:
            receipt = await self.admissions.cashier.settle(payment)
        except PaymentInvalid as err:
            operation = request.prepared.operation
            raise self.admissions.challenge(operation, units(operation.cost_cu), request.url,
                                            str(err)) from None
        response.headers.append((payment.response_header(), encode_header(receipt)))
        return response

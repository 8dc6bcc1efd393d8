"""Admission: who calls (a key's plan, keyless by address, or a payment) and what it spends."""

from edge.billing.admission import Admissions
from edge.web.http import Request, Response
from edge.web.layers import Next


class Gate:
    """Identifies the caller, validates the call, caps its page size by plan and spends its
    budget (or takes its payment) before the handler runs; the budget's headers go on the
    answer. Unmetered operations (the Hermes routes) pass straight through."""

    def __init__(self, inner: Next, admissions: Admissions) -> None:
        self.inner = inner
        self.admissions = admissions

    async def __call__(self, request: Request) -> Response:
        prepared = request.prepared
        operation = prepared.operation
        if not operation.metered:
            if prepared.error is not None:
                raise prepared.error
            return await self.inner(request)
        # A key is judged before the parameters: a caller with a bad key hears about the key.
        admission = await self.admissions.identify(request, operation, prepared.key_name)
        if prepared.error is not None:
            raise prepared.error
        params = prepared.params
        if operation.body is not None:
            params = {**params, "body": operation.body.parse(request.body)}
        if operation.limit_max is not None:
            ceiling = admission.plan.ceiling(operation.limit_max)
            if params["limit"] > ceiling:
                params = {**params, "limit": ceiling}
        await self.admissions.spend(request, operation, admission)
        request.params = params
        request.state.admission = admission
        response = await self.inner(request)
        if admission.verdict is not None:
            response.headers += admission.verdict.headers()
        return response

"""Who may make a call and what it spends: keys, plans, x402 payments and the token bucket."""

import re
from dataclasses import dataclass
from typing import Any

from edge.billing.keys import FileKeys, KeyRecord, RedisKeys
from edge.billing.metering import LocalMeter, RedisMeter, Verdict
from edge.billing.payments import Cashier, Payment, PaymentInvalid, decode, encode_header
from edge.billing.plans import KEYLESS, PLANS, Plan, units
from edge.clients import Network, client_address
from edge.web.http import Headers, Request
from edge.web.problems import ApiError
from edge.web.registry import Operation

PRINTABLE_KEY = re.compile(r"[!-~]{1,256}")
KEY_QUERY_NAMES = frozenset({"api_key", "apikey", "key", "x-api-key", "x_api_key", "access_token"})


class PaymentRequired(Exception):
    """A 402: the x402 challenge document for this call."""

    def __init__(self, document: dict[str, Any], headers: Headers) -> None:
        super().__init__(document.get("error", "payment required"))
        self.document = document
        self.headers = headers


@dataclass(slots=True)
class Admission:
    """The caller's plan, key, budget verdict and payment, for the handler and the answer."""

    plan: Plan
    client: str
    key: KeyRecord | None = None
    verdict: Verdict | None = None
    payment: Payment | None = None


def key_in_query(query: dict[str, list[str]]) -> str | None:
    """The first query parameter whose name says it carries an API key."""
    return next((name for name in query if name.lower() in KEY_QUERY_NAMES), None)


def presented_key(headers: Any, key_name: str | None = None) -> str | None:
    """The key from X-API-Key or Authorization: Bearer; `key_name` is a query parameter that
    looks like a key, which is refused: query strings end up in logs."""
    if key_name is not None:
        raise ApiError("key_in_query", "send the API key in X-API-Key or Authorization: "
                       "Bearer, never in the query string", key_name)
    key: str | None = headers.get("x-api-key")
    if key is None:
        auth = headers.get("authorization")
        if auth is not None and auth[:7].lower() == "bearer ":
            key = auth[7:].strip()
        elif auth is None and "authorization" in headers:
            key = ""
    if key is None and "x-api-key" in headers:
        key = ""  # sent, but not as text the server could read (granian yields None)
    if key is not None and not PRINTABLE_KEY.fullmatch(key):
        raise ApiError("invalid_api_key", "an API key was sent but is not a key: keys are "
                       "printable ASCII without spaces")
    return key


class Admissions:
    """Admits calls: authenticates keys, checks plans, takes payments, spends budgets."""

    def __init__(self, keys: FileKeys | RedisKeys, meter: LocalMeter | RedisMeter,
                 cashier: Cashier, trusted: tuple[Network, ...]) -> None:
        self.keys = keys
        self.meter = meter
        self.cashier = cashier
        self.trusted = trusted

    async def identify(self, request: Request, operation: Operation,
                       key_name: str | None = None) -> Admission:
        """The caller's plan: keyless, or the plan of a valid key that covers the operation."""
        headers = request.headers
        key = presented_key(headers, key_name)
        if key is None:
            forwarded = headers.get("x-forwarded-for") if self.trusted else None
            return Admission(KEYLESS, client_address(request.peer, forwarded, self.trusted))
        record = await self.keys.lookup(key)
        if record is None or not record.active:
            raise ApiError("invalid_api_key", "this API key is unknown or revoked")
        plan = PLANS.get(record.plan)
        if plan is None:
            raise ApiError("invalid_api_key", f"this key's plan {record.plan!r} is no longer "
                           "offered; ask for a new key")
        if not plan.covers(operation.domain):
            raise ApiError("plan_required", f"the {plan.name} plan does not cover "
                           f"{operation.method} {operation.path}; call without a key or with a "
                           "plan that covers it")
        return Admission(plan, f"key:{record.key_id}", record)

    async def spend(self, request: Request, operation: Operation, admission: Admission) -> None:
        """Take a keyless call's payment, or spend its budget; 402 or 429 when it cannot."""
        cost = units(operation.cost_cu)
        if admission.key is None:
            try:
                found = decode(request.headers)
                if found is not None:
                    admission.payment = await self.cashier.admit(*found, cost, request.url)
                    return
            except PaymentInvalid as err:
                raise self.challenge(operation, cost, request.url, str(err)) from None
        verdict = await self.meter.take(admission.client, admission.plan, cost)
        admission.verdict = verdict
        if verdict.allowed:
            return
        resource = request.url
        if admission.key is None and "x402" in _methods(request.headers.get("accept-payment")):
            raise self.challenge(operation, cost, resource, "keyless budget spent")
        offer = self.challenge(operation, cost, resource, "keyless budget spent").headers \
            if admission.key is None else []
        raise ApiError("rate_limited", f"the {admission.plan.name} budget is spent; retry in "
                       f"{verdict.retry_after} s", headers=(
                           ("retry-after", str(verdict.retry_after)),
                           *verdict.headers(), *offer))

    def challenge(self, operation: Operation, cost: int, resource: str,
                  error: str) -> PaymentRequired:
        """The 402 for this call."""
        document = self.cashier.offer.challenge(cost, resource, operation.summary, error)
        return PaymentRequired(document, [("payment-required", encode_header(document))])


def _methods(header: str | None) -> set[str]:
    return {part.strip().lower() for part in (header or "").split(",")}

"""x402 over a real socket, with the official x402 package as the paying client."""

import asyncio
import base64
import contextlib
import json
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import httpx
import pytest
from eth_account import Account
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from x402 import x402Client
from x402.http.clients import x402HttpxClient
from x402.http.utils import encode_payment_signature_header
from x402.mechanisms.evm.exact.register import register_exact_evm_client
from x402.schemas import PaymentRequired

from edge.billing.payments import Ledger, Offer, PaymentInvalid, authorization, decode, verify
from tests.conftest import edge_process
from tests.edge.conftest import first_refusal

pytestmark = pytest.mark.cost(seconds=18)

OFFER = Offer()
PAYER = Account.create()


def paying_client() -> x402Client:
    client = x402Client()
    register_exact_evm_client(client, PAYER)
    return client


def spend_budget(base: str) -> None:
    refused = first_refusal(base)[1]
    assert refused is not None and refused.status_code == 429


def challenge(base: str) -> dict:
    """The first call refused once calls that accept x402 spent the keyless budget."""
    answer = first_refusal(base, headers={"Accept-Payment": "USDC, X402"})[1]
    assert answer is not None and answer.status_code == 402
    header = json.loads(base64.b64decode(answer.headers["payment-required"]))
    assert header == answer.json()
    return header


def signed_header(document: dict) -> str:
    payload = asyncio.run(paying_client().create_payment_payload(
        PaymentRequired.model_validate(document)))
    return encode_payment_signature_header(payload)


def decoded(header: str) -> dict:
    return json.loads(base64.b64decode(header))


def test_challenge_names_scheme_network_asset_recipient_and_price(edge) -> None:
    doc = challenge(edge)
    assert doc["x402Version"] == 2 and doc["resource"]["url"].endswith("/api/v1/chains")
    (req,) = doc["accepts"]
    # /chains costs 10 CU, one unit, at 10 atomic USDC units per CU.
    assert req == {"scheme": "exact", "network": "eip155:84532", "asset": OFFER.asset,
                   "amount": "100", "payTo": OFFER.pay_to, "maxTimeoutSeconds": 300,
                   "extra": {"name": "USDC", "version": "2"}}
    offer = httpx.get(edge + "/api/v1/.well-known/x402",
                      headers={"PAYMENT-SIGNATURE": signed_header(doc)})
    assert offer.status_code == 402  # a payment for /chains does not pay for 20 CU


def test_the_official_client_pays_and_the_ledger_settles_once(home, edge) -> None:
    async def paid() -> httpx.Response:
        async with x402HttpxClient(paying_client(), headers={"Accept-Payment": "x402"}) as http:
            return await http.get(edge + "/api/v1/chains?limit=2")

    # The client asks unpaid first and pays once refused; a unit of budget comes back every
    # 0.2 s, so on a busy machine its first ask may find one and be answered free: then again.
    for _ in range(5):
        spend_budget(edge)
        answer = asyncio.run(paid())
        if "payment-response" in answer.headers:
            break
    assert answer.status_code == 200 and len(answer.json()["items"]) == 2
    receipt = decoded(answer.headers["payment-response"])
    assert receipt["success"] is True and receipt["payer"] == PAYER.address
    assert [row[1:] for row in Ledger(home / "x402-ledger.sqlite").settled()] == [
        (PAYER.address, "100")]


def test_replays_and_tampering_are_refused_and_failed_calls_are_not_charged(home, edge) -> None:
    doc = challenge(edge)
    header = signed_header(doc)
    failed = httpx.get(edge + "/api/v1/chains?cursor=forged", headers={"PAYMENT-SIGNATURE": header})
    assert failed.status_code == 400 and "payment-response" not in failed.headers
    assert Ledger(home / "x402-ledger.sqlite").settled() == []
    first = httpx.get(edge + "/api/v1/chains", headers={"PAYMENT-SIGNATURE": header})
    assert first.status_code == 200 and "payment-response" in first.headers
    replay = httpx.get(edge + "/api/v1/chains", headers={"PAYMENT-SIGNATURE": header})
    assert replay.status_code == 402
    assert replay.json()["error"] == "invalid_exact_evm_payload_nonce_used"

    payload = decoded(signed_header(doc))
    payload["payload"]["authorization"]["nonce"] = "0x" + "42" * 32
    forged = base64.b64encode(json.dumps(payload).encode()).decode()
    answer = httpx.get(edge + "/api/v1/chains", headers={"PAYMENT-SIGNATURE": forged})
    assert answer.json()["error"] == "invalid_exact_evm_payload_signature"


def test_v1_x_payment_header_is_accepted(home, edge) -> None:
    v2 = decoded(signed_header(challenge(edge)))
    v1 = {"x402Version": 1, "scheme": "exact", "network": "base-sepolia", "payload": v2["payload"]}
    answer = httpx.get(edge + "/api/v1/chains",
                       headers={"X-PAYMENT": base64.b64encode(json.dumps(v1).encode()).decode()})
    assert answer.status_code == 200
    assert decoded(answer.headers["x-payment-response"])["success"] is True


def test_verify_checks_amount_recipient_and_window_by_hand() -> None:
    doc = OFFER.challenge(1, "http://x/api/v1/chains", "", "")
    payload = decoded(signed_header(doc))
    auth = payload["payload"]["authorization"]
    now = time.time()
    assert verify(OFFER, 2, payload, 1, now).payer == PAYER.address
    with pytest.raises(PaymentInvalid, match="authorization_value"):
        verify(OFFER, 2, payload, 2, now)  # two units cost 200, the authorization says 100
    with pytest.raises(PaymentInvalid, match="valid_before"):
        verify(OFFER, 2, payload, 1, int(auth["validBefore"]))
    with pytest.raises(PaymentInvalid, match="recipient"):
        verify(Offer(pay_to="0x" + "11" * 20), 2, payload, 1, now)


class Facilitator(BaseHTTPRequestHandler):
    """A facilitator on loopback that records what it is asked and can be slow."""

    calls: list[str] = []
    delay = 0.0

    def do_POST(self) -> None:
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        type(self).calls.append(self.path)
        time.sleep(type(self).delay)
        payer = body["paymentPayload"]["payload"]["authorization"]["from"]
        answer = ({"isValid": True, "payer": payer} if self.path == "/verify" else
                  {"success": True, "transaction": "0x" + "ab" * 32, "network": "eip155:84532",
                   "payer": payer})
        data = json.dumps(answer).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        with contextlib.suppress(BrokenPipeError):  # the edge gave up waiting: the slow case
            self.wfile.write(data)

    def log_message(self, *args) -> None:
        pass


def test_a_configured_facilitator_verifies_and_settles_only_2xx(home) -> None:
    server = ThreadingHTTPServer(("127.0.0.1", 0), Facilitator)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    url = f"http://127.0.0.1:{server.server_address[1]}"
    try:
        with edge_process(home, CHAINTAPE_X402_FACILITATOR=url,
                          CHAINTAPE_UPSTREAM_TIMEOUT_SECONDS="1") as base:
            doc = challenge(base)
            bad = httpx.get(base + "/api/v1/chains?cursor=forged",
                            headers={"PAYMENT-SIGNATURE": signed_header(doc)})
            assert bad.status_code == 400 and Facilitator.calls == ["/verify"]
            good = httpx.get(base + "/api/v1/chains", headers={"PAYMENT-SIGNATURE": signed_header(doc)})
            assert good.status_code == 200 and Facilitator.calls == ["/verify"] * 2 + ["/settle"]
            assert decoded(good.headers["payment-response"])["transaction"] == "0x" + "ab" * 32
            Facilitator.delay = 2.0
            slow = httpx.get(base + "/api/v1/chains", headers={"PAYMENT-SIGNATURE": signed_header(doc)},
                             timeout=10)
            assert (slow.status_code, slow.json()["code"]) == (504, "upstream_timeout")
    finally:
        server.shutdown()
        server.server_close()
        Facilitator.delay = 0.0


def test_exact_means_exact_an_authorisation_above_the_price_is_refused() -> None:
    # One unit costs 100 atomic units; an authorisation for 1,000 would move 1,000 on settling.
    doc = OFFER.challenge(1, "http://x/api/v1/chains", "", "")
    over = OFFER.challenge(10, "http://x/api/v1/chains", "", "")
    over["accepts"][0]["amount"] = "1000"
    payload = decoded(signed_header(over))
    assert payload["payload"]["authorization"]["value"] == "1000"
    with pytest.raises(PaymentInvalid, match="authorization_value_mismatch"):
        verify(OFFER, 2, payload, 1, time.time())
    assert verify(OFFER, 2, decoded(signed_header(doc)), 1, time.time()).requirements["amount"] \
        == "100"


def test_an_overpaying_authorisation_is_402_over_http_and_nothing_is_settled(home, edge) -> None:
    doc = challenge(edge)
    doc["accepts"][0]["amount"] = str(10 * int(doc["accepts"][0]["amount"]))
    answer = httpx.get(edge + "/api/v1/chains", headers={"PAYMENT-SIGNATURE": signed_header(doc)})
    assert answer.status_code == 402
    assert answer.json()["error"] == "invalid_exact_evm_payload_authorization_value_mismatch"
    assert "payment-response" not in answer.headers
    assert Ledger(home / "x402-ledger.sqlite").settled() == []


VALID = decoded(signed_header(OFFER.challenge(1, "http://x/api/v1/chains", "", "")))
JSON = st.recursive(st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False)
                    | st.text(max_size=80), lambda inner: st.lists(inner, max_size=3)
                    | st.dictionaries(st.text(max_size=8), inner, max_size=3), max_leaves=6)
PATHS = [(), ("x402Version",), ("accepted",), ("accepted", "scheme"), ("accepted", "network"),
         ("accepted", "payTo"), ("accepted", "asset"), ("payload",), ("payload", "signature"),
         ("payload", "authorization"), *[("payload", "authorization", name) for name in
                                          ("from", "to", "value", "validAfter", "validBefore",
                                           "nonce")]]
HOSTILE = st.one_of(JSON, st.sampled_from([
    None, "", "abc", [], {}, 0, -1, True, "0x", "-1", str(2**256), str(2**256 - 1), 10**77,
    "0x" + "zz" * 20, "0x" + "11" * 19, "0x" + "11" * 65, "0x" + "00" * 65, "1e3", " 100"]))


def mutated(path: tuple[str, ...], value: object, drop: bool) -> dict:
    payload = json.loads(json.dumps(VALID))
    if not path:
        return value if isinstance(value, dict) else {"x402Version": value}
    parent = payload
    for name in path[:-1]:
        parent = parent[name]
    if drop:
        parent.pop(path[-1])
    else:
        parent[path[-1]] = value
    return payload


@settings(max_examples=600, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.sampled_from(PATHS), HOSTILE, st.booleans())
def test_any_malformed_payment_is_refused_as_invalid_never_raises(path, value, drop) -> None:
    payload = mutated(path, value, drop)
    header = {"payment-signature": base64.b64encode(json.dumps(payload).encode()).decode()}
    try:
        verify(OFFER, *decode(header), 1, time.time())
    except PaymentInvalid:
        return
    # Only a change that leaves the signed authorisation as it was (a uint256 may be sent as
    # a JSON integer or as its decimal string) may still verify.
    assert authorization(payload["payload"]) == authorization(VALID["payload"])


def test_the_reported_malformed_payments_are_402_over_http(home, edge) -> None:
    cases = [(("x402Version",), v) for v in (None, "", "abc", [], {})] + \
        [(("payload", "signature"), v) for v in (0, "", "0x", True, 10**77)] + \
        [(("payload", "authorization", name), v) for name in ("from", "to")
         for v in (None, -1, "0xnothex", ["0x" + "11" * 20])] + \
        [(("payload", "authorization", name), v) for name in ("value", "validAfter", "validBefore")
         for v in (str(2**256), "-1", -5, 2**300)]
    with httpx.Client() as client:
        for path, value in [*cases, (("payload", "authorization", "from"), None)]:
            payload = mutated(path, value, drop=value is None and path[-1] == "from")
            header = base64.b64encode(json.dumps(payload).encode()).decode()
            answer = client.get(edge + "/api/v1/chains", headers={"PAYMENT-SIGNATURE": header})
            assert answer.status_code == 402, (path, value, answer.text)
            assert answer.json()["error"] and "payment-response" not in answer.headers
    assert Ledger(home / "x402-ledger.sqlite").settled() == []

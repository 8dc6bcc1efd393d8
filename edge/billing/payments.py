"""x402 pay-per-call: the offer, the 402 challenge, EIP-3009 verification and settlement."""

import base64
import binascii
import hashlib
import re
import sqlite3
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import orjson

from edge.web.problems import ApiError

V1_NETWORKS = {"base": "eip155:8453", "base-sepolia": "eip155:84532", "ethereum": "eip155:1"}
AUTHORIZATION_TYPES = {"TransferWithAuthorization": [
    {"name": "from", "type": "address"}, {"name": "to", "type": "address"},
    {"name": "value", "type": "uint256"}, {"name": "validAfter", "type": "uint256"},
    {"name": "validBefore", "type": "uint256"}, {"name": "nonce", "type": "bytes32"}]}
ADDRESS = re.compile(r"0x[0-9a-fA-F]{40}")
HEX = re.compile(r"0x[0-9a-fA-F]*")
DECIMAL = re.compile(r"[0-9]{1,78}")
SIGNATURE_BYTES = 65


class PaymentInvalid(Exception):
    """A payment header that does not pay for this call; the reason is x402's error string."""


@dataclass(frozen=True)
class Offer:
    """What a call costs in USDC and where the money goes."""

    network: str = "eip155:84532"
    asset: str = "0x036CbD53842c5426634e7929541eC2318f3dCF7e"
    asset_name: str = "USDC"
    asset_version: str = "2"
    pay_to: str = "0x5ca1ab1e00000000000000000000000000c4a17e"
    atomic_per_cu: int = 10
    max_timeout_seconds: int = 300
    facilitator_url: str | None = None

    def amount(self, cost_units: int) -> str:
        """The price of a call of `cost_units` budget units, in the asset's atomic units."""
        return str(cost_units * 10 * self.atomic_per_cu)

    def requirements(self, cost_units: int) -> dict[str, Any]:
        """x402 v2 PaymentRequirements for one call."""
        return {"scheme": "exact", "network": self.network, "asset": self.asset,
                "amount": self.amount(cost_units), "payTo": self.pay_to,
                "maxTimeoutSeconds": self.max_timeout_seconds,
                "extra": {"name": self.asset_name, "version": self.asset_version}}

    def challenge(self, cost_units: int, url: str, description: str, error: str) -> dict[str, Any]:
        """The x402 v2 PaymentRequired document."""
        return {"x402Version": 2, "error": error,
                "resource": {"url": url, "description": description,
                             "mimeType": "application/json"},
                "accepts": [self.requirements(cost_units)]}


def encode_header(document: dict[str, Any]) -> str:
    """A document as x402 headers carry it: base64 of its JSON."""
    return base64.b64encode(orjson.dumps(document)).decode()


@dataclass(frozen=True)
class Payment:
    """A decoded payment header that verified against one call's requirements."""

    version: int
    payload: dict[str, Any]
    requirements: dict[str, Any]
    payer: str
    nonce: str

    def response_header(self) -> str:
        """The header name the answer carries for this protocol version."""
        return "payment-response" if self.version == 2 else "x-payment-response"


def decode(headers: Any) -> tuple[int, dict[str, Any]] | None:
    """The payment header's version and payload, None when the call carries none."""
    raw = headers.get("payment-signature") or headers.get("x-payment")
    if raw is None:
        return None
    try:
        payload = orjson.loads(base64.b64decode(raw, validate=True))
    except (binascii.Error, ValueError):
        raise PaymentInvalid("invalid_payload") from None
    if not isinstance(payload, dict):
        raise PaymentInvalid("invalid_payload")
    if "payment-signature" not in headers:
        return 1, payload
    version = payload.get("x402Version", 2)
    if type(version) is not int or version not in (1, 2):
        raise PaymentInvalid("invalid_x402_version")
    return version, payload


@dataclass(frozen=True)
class Authorization:
    """An EIP-3009 TransferWithAuthorization whose every field has its ABI type's shape."""

    payer: str
    to: str
    value: int
    valid_after: int
    valid_before: int
    nonce: bytes
    signature: bytes


def authorization(inner: object) -> Authorization:
    """The authorization and signature of a payload's `payload` member, or invalid_payload
    when any field is missing or not of its type (an address, a uint256, a bytes32)."""
    if not isinstance(inner, dict) or not isinstance(inner.get("authorization"), dict):
        raise PaymentInvalid("invalid_payload")
    auth = inner["authorization"]
    signature = _hex_bytes(inner.get("signature"))
    if signature is None or len(signature) != SIGNATURE_BYTES:
        raise PaymentInvalid("invalid_exact_evm_payload_signature")
    payer, to = _address(auth.get("from")), _address(auth.get("to"))
    nonce = _hex_bytes(auth.get("nonce"))
    numbers = [_uint256(auth.get(name)) for name in ("value", "validAfter", "validBefore")]
    if payer is None or to is None or nonce is None or len(nonce) != 32 or None in numbers:
        raise PaymentInvalid("invalid_payload")
    value, after, before = (n for n in numbers if n is not None)
    return Authorization(payer, to, value, after, before, nonce, signature)


def _address(value: object) -> str | None:
    return value if isinstance(value, str) and ADDRESS.fullmatch(value) else None


def _hex_bytes(value: object) -> bytes | None:
    if not isinstance(value, str) or not HEX.fullmatch(value) or len(value) % 2:
        return None
    return bytes.fromhex(value[2:])


def _uint256(value: object) -> int | None:
    """A uint256 as x402 sends it: a decimal string (or a JSON integer), 0 ≤ n < 2**256."""
    if type(value) is int:
        number = value
    elif isinstance(value, str) and DECIMAL.fullmatch(value):
        number = int(value)
    else:
        return None
    return number if 0 <= number < 2**256 else None


def verify(offer: Offer, version: int, payload: dict[str, Any], cost_units: int,
           now: float | None = None) -> Payment:
    """Check scheme, network, amount (exactly the price), recipient, validity window and
    signature."""
    required = offer.requirements(cost_units)
    if version == 2:
        accepted = payload.get("accepted")
        if not isinstance(accepted, dict):
            raise PaymentInvalid("invalid_payload")
        scheme, network = accepted.get("scheme"), accepted.get("network")
        if str(accepted.get("payTo", "")).lower() != offer.pay_to.lower() or \
                str(accepted.get("asset", "")).lower() != offer.asset.lower():
            raise PaymentInvalid("invalid_exact_evm_payload_recipient_mismatch")
    else:
        scheme = payload.get("scheme")
        network = V1_NETWORKS.get(payload["network"], "") \
            if isinstance(payload.get("network"), str) else ""
    auth = authorization(payload.get("payload"))
    if scheme != "exact":
        raise PaymentInvalid("unsupported_scheme")
    if network != offer.network:
        raise PaymentInvalid("invalid_network")
    if auth.to.lower() != offer.pay_to.lower():
        raise PaymentInvalid("invalid_exact_evm_payload_recipient_mismatch")
    # `exact` moves exactly the price: settling a larger authorisation would move all of it.
    if auth.value != int(required["amount"]):
        raise PaymentInvalid("invalid_exact_evm_payload_authorization_value_mismatch")
    moment = time.time() if now is None else now
    if moment < auth.valid_after:
        raise PaymentInvalid("invalid_exact_evm_payload_authorization_valid_after")
    if moment >= auth.valid_before - 6:
        raise PaymentInvalid("invalid_exact_evm_payload_authorization_valid_before")
    if _signer(offer, auth).lower() != auth.payer.lower():
        raise PaymentInvalid("invalid_exact_evm_payload_signature")
    return Payment(version, payload, required, auth.payer, "0x" + auth.nonce.hex())


def _signer(offer: Offer, auth: Authorization) -> str:
    # Imported at the first payment, not with the edge: eth-account and its curve libraries
    # take half a second to load, and every edge worker that starts would pay it.
    from eth_account import Account
    from eth_account.messages import encode_typed_data

    chain_id = int(offer.network.split(":")[1])
    message = encode_typed_data(full_message={
        "types": {"EIP712Domain": [
            {"name": "name", "type": "string"}, {"name": "version", "type": "string"},
            {"name": "chainId", "type": "uint256"},
            {"name": "verifyingContract", "type": "address"}], **AUTHORIZATION_TYPES},
        "primaryType": "TransferWithAuthorization",
        "domain": {"name": offer.asset_name, "version": offer.asset_version,
                   "chainId": chain_id, "verifyingContract": offer.asset},
        "message": {"from": auth.payer, "to": auth.to, "value": auth.value,
                    "validAfter": auth.valid_after, "validBefore": auth.valid_before,
                    "nonce": auth.nonce}})
    try:
        recovered: str = Account.recover_message(message, signature=auth.signature)
        return recovered
    # eth-keys raises its own types for a signature off the curve or with a bad v: whatever
    # it raises, the signature does not recover to anyone.
    except Exception:
        raise PaymentInvalid("invalid_exact_evm_payload_signature") from None


class Ledger:
    """Local settlement: every nonce is reserved once, then settled or released."""

    def __init__(self, path: Path) -> None:
        path.parent.mkdir(parents=True, exist_ok=True)
        self.db = sqlite3.connect(path, check_same_thread=False, isolation_level=None)
        self.db.execute("PRAGMA journal_mode=WAL")
        self.db.execute("CREATE TABLE IF NOT EXISTS payments (nonce TEXT PRIMARY KEY, "
                        "payer TEXT, amount TEXT, resource TEXT, state TEXT, at REAL)")
        self.lock = threading.Lock()

    def reserve(self, payment: Payment, resource: str) -> None:
        """Hold the nonce for this call; a nonce seen before is refused."""
        with self.lock:
            try:
                self.db.execute("INSERT INTO payments VALUES (?, ?, ?, ?, 'pending', ?)",
                                (payment.nonce, payment.payer, payment.requirements["amount"],
                                 resource, time.time()))
            except sqlite3.IntegrityError:
                raise PaymentInvalid("invalid_exact_evm_payload_nonce_used") from None

    def settle(self, payment: Payment) -> str:
        """Mark the payment settled; its receipt id stands where a transaction hash would."""
        with self.lock:
            self.db.execute("UPDATE payments SET state = 'settled', at = ? WHERE nonce = ?",
                            (time.time(), payment.nonce))
        return "0x" + hashlib.sha256(f"{payment.payer}:{payment.nonce}".encode()).hexdigest()

    def release(self, payment: Payment) -> None:
        """Forget a reservation whose call did not answer 2xx, so nothing is charged."""
        with self.lock:
            self.db.execute("DELETE FROM payments WHERE nonce = ? AND state = 'pending'",
                            (payment.nonce,))

    def settled(self) -> list[tuple[str, str, str]]:
        """(nonce, payer, amount) of every settled payment."""
        return self.db.execute("SELECT nonce, payer, amount FROM payments "
                               "WHERE state = 'settled' ORDER BY at").fetchall()


class Cashier:
    """Admits paid calls and settles them: through a facilitator when one is configured, else
    in the local ledger. Either way the ledger holds each nonce so that it pays once."""

    def __init__(self, offer: Offer, ledger: Ledger, timeout_s: float = 5.0) -> None:
        self.offer = offer
        self.ledger = ledger
        self.timeout_s = timeout_s
        self._client: httpx.AsyncClient | None = None

    async def admit(self, version: int, payload: dict[str, Any], cost_units: int, resource: str) -> Payment:
        """A verified payment whose nonce is now reserved for this call."""
        payment = verify(self.offer, version, payload, cost_units)
        if self.offer.facilitator_url:
            answer = await self._facilitate("verify", payment)
            if not answer.get("isValid"):
                raise PaymentInvalid(answer.get("invalidReason") or "facilitator_refused")
        self.ledger.reserve(payment, resource)
        return payment

    async def settle(self, payment: Payment) -> dict[str, Any]:
        """Settle an answered call; the x402 SettleResponse the answer's header carries."""
        if self.offer.facilitator_url:
            try:
                answer = await self._facilitate("settle", payment)
            except Exception:
                self.ledger.release(payment)
                raise
            if not answer.get("success"):
                self.ledger.release(payment)
                raise PaymentInvalid(answer.get("errorReason") or "settlement_failed")
            self.ledger.settle(payment)
            transaction = answer.get("transaction", "")
        else:
            transaction = self.ledger.settle(payment)
        return {"success": True, "transaction": transaction, "network": self.offer.network,
                "payer": payment.payer, "amount": payment.requirements["amount"]}

    async def _facilitate(self, step: str, payment: Payment) -> dict[str, Any]:
        body = {"x402Version": payment.version, "paymentPayload": payment.payload,
                "paymentRequirements": payment.requirements}
        if self._client is None:
            # One connection pool for every call, so /verify and /settle reuse connections.
            self._client = httpx.AsyncClient(timeout=self.timeout_s)
        try:
            response = await self._client.post(f"{self.offer.facilitator_url}/{step}", json=body)
        except httpx.TimeoutException:
            raise ApiError("upstream_timeout", f"the payment facilitator did not {step} in time") from None
        except httpx.TransportError:
            raise ApiError("upstream_unavailable", "the payment facilitator is unreachable") from None
        if response.status_code != 200:
            raise PaymentInvalid(f"facilitator_{step}_failed")
        answer: dict[str, Any] = response.json()
        return answer

"""Opaque page cursors: pinned to a snapshot and a list, signed so they cannot be forged."""

import base64
import hashlib
import hmac
from dataclasses import dataclass
from typing import Any

import orjson

from core.home import home, secret

MAX_LENGTH = 512
_SIG_BYTES = 12


class CursorError(ValueError):
    """A cursor that is malformed, forged, for another list, or too long."""


@dataclass(frozen=True)
class Cursor:
    """Where a page starts: snapshot, list, the list's filter fingerprint, and row offset; or,
    for lists that follow new rows (trades), the row `position` to page `toward` from."""

    snapshot_id: str
    list_name: str
    offset: int
    scope: str = ""
    position: tuple[int, ...] = ()
    toward: str = ""


def _b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def _unb64(text: str) -> bytes:
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))


class CursorSigner:
    """Encodes and verifies cursors with one secret shared by the publisher and every edge."""

    def __init__(self, secret: bytes) -> None:
        self.secret = secret

    def encode(self, cursor: Cursor) -> str:
        """The opaque string a page carries."""
        body = orjson.dumps([cursor.snapshot_id, cursor.list_name, cursor.offset, cursor.scope,
                             list(cursor.position), cursor.toward])
        sig = hmac.new(self.secret, body, hashlib.sha256).digest()[:_SIG_BYTES]
        return f"{_b64(body)}.{_b64(sig)}"

    def decode(self, text: str) -> Cursor:
        """The cursor behind `text`, or CursorError."""
        if len(text) > MAX_LENGTH:
            raise CursorError(f"cursor longer than {MAX_LENGTH} characters")
        try:
            body_text, sig_text = text.split(".")
            body, sig = _unb64(body_text), _unb64(sig_text)
        except ValueError:
            raise CursorError("cursor is malformed") from None
        expected = hmac.new(self.secret, body, hashlib.sha256).digest()[:_SIG_BYTES]
        if not hmac.compare_digest(sig, expected):
            raise CursorError("cursor was not issued by this service")
        snapshot_id, list_name, offset, scope, position, toward = orjson.loads(body)
        return Cursor(snapshot_id, list_name, int(offset), scope, tuple(position), toward)


def default_signer() -> CursorSigner:
    """$CHAINTAPE_CURSOR_SECRET, else a key file kept beside the embedded store."""
    return CursorSigner(secret("CHAINTAPE_CURSOR_SECRET", home() / "cursor.key").encode())


def list_scope(**parts: Any) -> str:
    """A short fingerprint of what a list answers, carried by its cursors so that a cursor only
    continues the query that issued it."""
    return hashlib.sha256(orjson.dumps(parts, option=orjson.OPT_SORT_KEYS)).hexdigest()[:16]

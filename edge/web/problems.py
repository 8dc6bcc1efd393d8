"""RFC 9457 problem documents with the interface's closed set of codes."""

from dataclasses import dataclass

import orjson

DOCS_BASE = "https://docs.chaintape.dev/errors/"
PROBLEM_JSON = "application/problem+json"

CODES: dict[str, tuple[int, str]] = {
    "invalid_param": (400, "Invalid parameter"),
    "key_in_query": (400, "API key in query string"),
    "invalid_api_key": (401, "Invalid API key"),
    "plan_required": (403, "Plan required"),
    "chain_not_found": (404, "Chain not found"),
    "not_found": (404, "Not found"),
    "rate_limited": (429, "Rate limited"),
    "internal": (500, "Internal error"),
    "upstream_unavailable": (503, "Upstream unavailable"),
    "upstream_timeout": (504, "Upstream timeout"),
}


@dataclass
class ApiError(Exception):
    """A failure the client is told about as a problem document."""

    code: str
    detail: str
    param: str | None = None
    headers: tuple[tuple[str, str], ...] = ()
    # A refusal at the HTTP layer keeps HTTP's own status (413, 414, 431), which clients and
    # proxies act on, under the closed code of what failed (invalid_param).
    http_status: int | None = None

    def __post_init__(self) -> None:
        if self.code not in CODES:
            raise ValueError(f"{self.code!r} is not in the closed set of problem codes")

    @property
    def status(self) -> int:
        """The HTTP status: the code's, unless the HTTP layer refused the request."""
        return self.http_status or CODES[self.code][0]


def problem_document(error: ApiError, request_id: str) -> dict[str, object]:
    """The problem document: type, title, status, code, detail, request id and the parameter
    at fault."""
    doc: dict[str, object] = {"type": DOCS_BASE + error.code, "title": CODES[error.code][1],
                              "status": error.status, "code": error.code,
                              "detail": error.detail, "request_id": request_id}
    if error.param is not None:
        doc["param"] = error.param
    return doc


def problem_body(error: ApiError, request_id: str) -> bytes:
    """The problem document's JSON."""
    return orjson.dumps(problem_document(error, request_id))

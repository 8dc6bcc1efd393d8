"""Every failure answers as the spec's problem document (the oracle's /v2 routes: plain text)."""

import logging

import orjson

from edge.billing.admission import PaymentRequired
from edge.web.http import Request, Response
from edge.web.layers import Next
from edge.web.problems import PROBLEM_JSON, ApiError, problem_body
from edge.web.registry import HERMES_PREFIX

log = logging.getLogger("chaintape.edge")


class Problems:
    """Turns refusals into problem documents, a payment challenge into its 402, and anything
    unexpected into 500 `internal` with the request id to quote."""

    def __init__(self, inner: Next) -> None:
        self.inner = inner

    async def __call__(self, request: Request) -> Response:
        try:
            return await self.inner(request)
        except ApiError as err:
            return problem(err, request)
        except PaymentRequired as err:
            return Response(orjson.dumps(err.document), 402, headers=list(err.headers))
        except Exception:
            log.exception("request %s failed", request.request_id)
            return problem(ApiError("internal", "unexpected error; quote request id "
                                    f"{request.request_id}"), request)


def problem(err: ApiError, request: Request) -> Response:
    """The answer to a refused request: a problem document, or Hermes' plain text on its
    routes."""
    if request.path.startswith(HERMES_PREFIX):
        return Response(_hermes_text(err, request.path_params).encode(), err.status,
                        "text/plain; charset=utf-8", list(err.headers))
    return Response(problem_body(err, request.request_id), err.status, PROBLEM_JSON,
                    list(err.headers))


def _hermes_text(err: ApiError, path_params: dict[str, str]) -> str:
    """Hermes' wording: what could not be parsed (the URL's path or its query), or the detail
    as it stands."""
    if err.code != "invalid_param":
        return err.detail
    where = "Invalid URL" if err.param in path_params else "Failed to deserialize query string"
    return f"{where}: {err.detail}"

"""Which operation a request names and what its parameters mean against the current snapshot."""

from collections.abc import Awaitable
from dataclasses import dataclass
from typing import Any

from core.caches import LruCache
from edge.addresses import resolve
from edge.billing.admission import Admission, key_in_query
from edge.billing.plans import KEYLESS
from edge.services import Services, State
from edge.web.http import Request, Response
from edge.web.layers import Next
from edge.web.problems import ApiError
from edge.web.registry import API_PREFIX, FORMER_PREFIX, Operation, Router
from publish.reader import Snapshot

# Clients repeat the same URLs, and what a URL means only changes with the snapshot, so its
# parsing and validation are kept until the snapshot changes (bounded against random queries).
PREPARED_KEPT = 4096
# Who calls until the gate says otherwise (unmetered operations keep it): never changed, since
# the gate admits a metered call with an admission of its own.
ANONYMOUS = Admission(KEYLESS, "")


@dataclass(frozen=True, slots=True)
class PreparedCall:
    """What a method, path and query string mean against one snapshot: the operation, its
    validated parameters (or the first error) and any query parameter that looks like a key."""

    operation: Operation
    path_params: dict[str, str]
    key_name: str | None
    params: dict[str, Any] | None
    error: ApiError | None


class Routing:
    """Finds the operation (404 when none), validates its parameters against the snapshot the
    request is answered from, and gives the request its keyless state."""

    def __init__(self, inner: Next, services: Services) -> None:
        self.inner = inner
        self.services = services
        self._prepared: LruCache[PreparedCall] = LruCache(PREPARED_KEPT)
        self._prepared_for: str | None = None

    def __call__(self, request: Request) -> Awaitable[Response]:
        snapshot = self.services.holder.current
        prepared = self._prepare(request, snapshot)
        request.path_params = prepared.path_params
        request.prepared = prepared
        request.params = prepared.params
        request.state = State(self.services, snapshot, ANONYMOUS,
                              self.services.live.view(snapshot))
        return self.inner(request)

    def _prepare(self, request: Request, snapshot: Snapshot | None) -> PreparedCall:
        sid = None if snapshot is None else snapshot.snapshot_id
        if sid != self._prepared_for:
            self._prepared.clear()
            self._prepared_for = sid
        url = (request.method, request.path, request.raw_query)
        prepared: PreparedCall | None = self._prepared.get(url)
        if prepared is not None:
            return prepared
        operation, path_params = route(self.services.router, request)
        key_name = key_in_query(request.query)
        try:
            params = operation.parse(request.query, path_params)
            if operation.domain != "platform":
                if snapshot is None:
                    raise ApiError("upstream_unavailable",
                                   "no snapshot has been published yet; retry")
                params = resolve(snapshot, params)
        except ApiError as err:
            return PreparedCall(operation, path_params, key_name, None, err)
        made = PreparedCall(operation, path_params, key_name, params, None)
        self._prepared.put(url, made)
        return made


def route(router: Router, request: Request) -> tuple[Operation, dict[str, str]]:
    """The operation a method and path name: API operations under /api/v1 (and the former
    /api/v3), the oracle's own routes at the root."""
    path = request.path
    for prefix in (API_PREFIX, FORMER_PREFIX):
        if path.startswith(prefix + "/"):
            found = router.match(request.method, path[len(prefix):])
            if found is not None and not found[0].root:
                return found
            break
    else:
        found = router.match(request.method, path)
        if found is not None and found[0].root:
            return found
    raise ApiError("not_found", f"{request.method} {path} is not an operation")

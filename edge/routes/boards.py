"""GET /leaderboard (spec 4.3): a published board document, narrowed to the chains asked and cut
to the limit; nothing about the board is computed on the request."""

from typing import Any

import orjson

from core.caches import ByteCache, LruCache
from edge.addresses import ChainRef
from edge.snapshots import snapshot_headers
from edge.web.http import Request, Response
from edge.web.problems import ApiError
from edge.web.registry import Params
from publish.boards import view_name
from publish.reader import Snapshot

_views: LruCache[dict[str, Any]] = LruCache(64)
_rendered: ByteCache[bytes] = ByteCache(16 << 20)


def view(snapshot: Snapshot, name: str) -> dict[str, Any] | None:
    """A board document of the snapshot, parsed once."""
    key = (snapshot.snapshot_id, name)
    found = _views.get(key)
    if found is None and name in snapshot.documents:
        found = _views.put(key, orjson.loads(snapshot.documents[name]))
    return found


def _checked(params: Params) -> None:
    scope, chain, chains = params["scope"], params["chain"], params["chains"]
    if scope == "protocols" and chain is None:
        raise ApiError("invalid_param", "chain is required when scope=protocols", "chain")
    if scope == "chains" and chain is not None:
        raise ApiError("invalid_param", "chain narrows scope=protocols; scope=chains takes chains",
                       "chain")
    if scope == "protocols" and chains is not None:
        raise ApiError("invalid_param", "chains narrows scope=chains; scope=protocols takes chain",
                       "chains")
    if params["season"] and not params["seasonal"]:
        raise ApiError("invalid_param", "season needs seasonal=true", "season")


async def leaderboard(request: Request, params: Params) -> Response:
    """The live board, or a season's (0 or omitted: the running one)."""
    _checked(params)
    snapshot = request.state.snapshot
    chain: ChainRef | None = params["chain"]
    board = chain.slug if chain is not None else None
    live_name = view_name(params["scope"], board, None)
    live = view(snapshot, live_name)
    if live is None:
        raise ApiError("not_found", f"no {params['scope']} board is published for this chain",
                       "chain")
    number = None
    if params["seasonal"]:
        number = params["season"] or live["season"]["latest"]
    name = view_name(params["scope"], board, number)
    asked = None if params["chains"] is None else tuple(c.chain_id for c in params["chains"])
    key = (snapshot.snapshot_id, name, asked, params["limit"])
    body = _rendered.get(key)
    if body is None:
        doc = view(snapshot, name)
        if doc is None:
            raise ApiError("not_found", f"no board for season {number}: seasons the lake "
                           f"reaches run up to {live['season']['latest']}", "season")
        body = orjson.dumps(narrowed(doc, asked, params["limit"]))
        _rendered.put(key, body, len(body))
    return Response(body, headers=snapshot_headers(snapshot))


def narrowed(doc: dict[str, Any], asked: tuple[int, ...] | None, limit: int) -> dict[str, Any]:
    """The document with only the asked chains' rows (ranks as published) and at most `limit`
    ranked items."""
    def kept(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
        return rows if asked is None else [r for r in rows if r["chain"]["chain_id"] in asked]

    return {**doc, "items": kept(doc["items"])[:limit], "excluded": kept(doc["excluded"])}


HANDLERS = {("GET", "/leaderboard"): leaderboard}

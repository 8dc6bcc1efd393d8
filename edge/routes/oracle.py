"""Oracle prices (spec 4.10): the Hermes-compatible /v2 routes, /prices and /prices/at, and the
oracle's native /v1 feeds, status and candles."""

from collections.abc import Awaitable, Callable
from datetime import UTC, datetime
from typing import Any

import numpy as np
import orjson

from core.caches import LruCache
from core.vocabulary import RESOLUTION_SECONDS
from edge.oracle.feeds import Catalog, Feed, canonical, catalog, wire
from edge.oracle.hub import PriceHub, Update
from edge.oracle.streams import Rendering, WebSocketSession, price_update, selection, sse_events
from edge.oracle.upstream import LiveOracle
from edge.routes.market.trades import candle_window
from edge.snapshots import snapshot_json
from edge.web.http import Request, Response
from edge.web.problems import ApiError
from edge.web.registry import Params
from publish.reader import Snapshot

MAX_IDS = 500
MAX_HISTORICAL_FEEDS = 100
# Latest answers change only when the hub does, so each URL is rendered once per hub version.
RENDERED_KEPT = 1_024
_rendered: LruCache[bytes] = LruCache(RENDERED_KEPT)


def _hub(request: Request) -> PriceHub:
    hub: PriceHub = request.state.services.oracle.hub
    return hub


def _catalog(request: Request) -> Catalog:
    return catalog(request.state.snapshot)


def asked_ids(params: Params) -> list[str]:
    """`ids[]` and `ids` together, in the order given: at least one, at most MAX_IDS."""
    ids = [*params["ids[]"], *params["ids"]]
    if not ids:
        raise ApiError("invalid_param", "missing field `ids[]`", "ids[]")
    if len(ids) > MAX_IDS:
        raise ApiError("invalid_param", f"at most {MAX_IDS} ids are accepted", "ids[]")
    return ids


def _not_found(missing: list[str], param: str = "ids[]") -> ApiError:
    return ApiError("not_found", "Price ids not found: " + ", ".join(missing), param)


def resolve_feeds(found: Catalog, ids: list[str], ignore_invalid: bool,
                  servable: Callable[[Feed], bool], param: str = "ids[]") -> list[tuple[Feed, str]]:
    """Each distinct feed the ids name, with the id it was asked by (canonical form); an unknown
    id, or one whose feed has nothing servable, is 404 unless invalid ids are ignored."""
    out: dict[str, tuple[Feed, str]] = {}
    missing = []
    for raw in ids:
        feed = found.find(raw)
        if feed is None or not servable(feed):
            missing.append(canonical(raw))
        elif feed.feed_id not in out:
            out[feed.feed_id] = (feed, canonical(raw))
    if missing and not ignore_invalid:
        raise _not_found(list(dict.fromkeys(missing)), param)
    return list(out.values())


def _rendering(params: Params) -> Rendering:
    return Rendering(params["encoding"], params["parsed"], params["benchmarks_only"])


async def latest_updates(request: Request, params: Params) -> Response:
    """GET /v2/updates/price/latest: the latest update of each feed asked for."""
    hub = _hub(request)
    key = (id(hub), hub.version, request.state.snapshot.snapshot_id, request.raw_query)
    body = _rendered.get(key)
    if body is None:
        feeds = resolve_feeds(_catalog(request), asked_ids(params),
                              params["ignore_invalid_price_ids"],
                              lambda f: f.latest(hub) is not None)
        items = [(asked, update.body()) for feed, asked in feeds
                 for update in [feed.latest(hub)] if update is not None]
        body = _rendered.put(key, orjson.dumps(price_update(items, _rendering(params))))
    return Response(body)


async def updates_at(request: Request, params: Params) -> Response:
    """GET /v2/updates/price/{publish_time}: each feed's first update at or after the time."""
    found, hub = _catalog(request), _hub(request)
    ids = asked_ids(params)
    if len({canonical(i) for i in ids}) > MAX_HISTORICAL_FEEDS:
        raise ApiError("invalid_param", f"at most {MAX_HISTORICAL_FEEDS} distinct feeds are "
                       "accepted on historical routes", "ids[]")
    feeds = resolve_feeds(found, ids, params["ignore_invalid_price_ids"], lambda f: True)
    items = []
    for feed, asked in feeds:
        update = found.first_at_or_after(feed, params["publish_time"], hub)
        if update is None:
            raise ApiError("not_found", "Update data not found", "publish_time")
        items.append((asked, update.body()))
    return Response.json(price_update(items, _rendering(params)))


async def stream_updates(request: Request, params: Params) -> Response:
    """GET /v2/updates/price/stream: Server-Sent Events on the channel asked for."""
    hub = _hub(request)
    feeds = resolve_feeds(_catalog(request), asked_ids(params),
                          params["ignore_invalid_price_ids"], lambda f: f.hub_key(hub) is not None)
    chosen = selection([(key, asked) for feed, asked in feeds
                        for key in [feed.hub_key(hub)] if key is not None])
    events = sse_events(hub.channels[params["channel"]], chosen, _rendering(params))
    return Response(b"", 200, "text/event-stream",
                    [("cache-control", "no-cache"), ("x-accel-buffering", "no")], events)


async def price_feeds(request: Request, params: Params) -> Response:
    """GET /v2/price_feeds: every feed once, under its primary id, filtered by symbol and type."""
    now = datetime.now(UTC).timestamp()
    query = (params["query"] or "").lower()
    kind = params["asset_type"]
    return Response.json([feed.document(feed.primary_id, now) for feed in _catalog(request).feeds
                  if query in feed.attributes["symbol"].lower()
                  and (kind is None or feed.attributes["asset_type"].lower() == kind)])


async def price_feed(request: Request, params: Params) -> Response:
    """GET /v2/price_feeds/{id}: one feed, answered under the id it was asked by."""
    feed = _catalog(request).find(params["id"])
    if feed is None:
        raise _not_found([canonical(params["id"])])
    return Response.json(feed.document(canonical(params["id"]), datetime.now(UTC).timestamp()))


def decimal_text(value: int, expo: int) -> str:
    """An integer in units of 10^expo as an exact decimal string."""
    if expo >= 0:
        return str(value * 10 ** expo)
    sign, digits = ("-" if value < 0 else ""), str(abs(value)).rjust(-expo + 1, "0")
    whole, fraction = digits[:expo], digits[expo:].rstrip("0")
    return f"{sign}{whole}.{fraction}" if fraction else f"{sign}{whole}"


def oracle_price(asked: str, update: Update) -> dict[str, Any]:
    """The native price record: exact decimal strings and the ISO publish time."""
    return {"id": "0x" + asked, "price": decimal_text(update.price, update.expo),
            "conf": decimal_text(update.conf, update.expo),
            "ema_price": decimal_text(update.ema_price, update.expo),
            "publish_time": wire(update.publish_time)}


def _native(request: Request, params: Params) -> list[tuple[Feed, str]]:
    return resolve_feeds(_catalog(request), params["ids"], False, lambda f: True, "ids")


async def prices(request: Request, params: Params) -> Response:
    """GET /prices: the latest price of each feed, live from the oracle (the answer is as of
    its newest update)."""
    hub = _hub(request)
    items, newest = [], 0
    for feed, asked in _native(request, params):
        update = feed.latest(hub)
        if update is None:
            raise ApiError("not_found", f"price feed {asked} has no price yet", "ids")
        items.append(oracle_price(asked, update))
        newest = max(newest, update.publish_time)
    return snapshot_json(request.state.snapshot, {"items": items}, wire(newest))


async def prices_at(request: Request, params: Params) -> Response:
    """GET /prices/at: each feed's first price at or after `ts` within the history window."""
    found, hub = _catalog(request), _hub(request)
    items = []
    for feed, asked in _native(request, params):
        update = found.first_at_or_after(feed, params["ts"], hub)
        if update is None:
            low, high = found.window
            raise ApiError("not_found", f"price feed {asked} has no price at or after "
                           f"{params['ts']} within the history window ({wire(low)} to "
                           f"{wire(high)}, then what this edge has seen live)", "ts")
        items.append(oracle_price(asked, update))
    return snapshot_json(request.state.snapshot, {"items": items})


async def feeds_native(request: Request, params: Params) -> Response:
    """GET /v1/feeds: every feed under its own id, with its compatible id, market hours and
    latest price."""
    hub, now = _hub(request), datetime.now(UTC).timestamp()
    query = (params["query"] or "").lower()
    kind = params["asset_type"]
    items = []
    for feed in _catalog(request).feeds:
        a = feed.attributes
        if query not in a["symbol"].lower() or (kind is not None and a["asset_type"].lower()
                                                != kind):
            continue
        update = feed.latest(hub)
        items.append({"id": "0x" + feed.feed_id,
                      "compatible_id": feed.compatible_id and "0x" + feed.compatible_id,
                      "symbol": a["symbol"], "asset_type": a["asset_type"], "base": a["base"],
                      "quote_currency": a["quote_currency"], "description": a["description"],
                      "display_symbol": a["display_symbol"], "schedule": a["schedule"],
                      "expo": feed.expo, "market_hours": feed.market_hours(now),
                      "price": None if update is None else oracle_price(feed.feed_id, update),
                      "source": feed.source, "stale": feed.stale(hub, now)})
    return snapshot_json(request.state.snapshot, {"items": items})


async def status(request: Request, params: Params) -> Response:
    """GET /v1/status: the upstream's health, the hub's freshness and the history window."""
    found, hub = _catalog(request), _hub(request)
    low, high = found.window
    served = sum(1 for feed in found.feeds if feed.latest(hub) is not None)
    body = {"upstream": request.state.services.oracle.status(),
            "catalog": {"feeds": len(found.feeds), "live": served},
            "history": {"from": wire(low), "to": wire(high),
                        "updates": found.updates},
            "snapshot_id": request.state.snapshot.snapshot_id}
    return Response.json(body)


def _series(found: Catalog, feed: Feed, hub: PriceHub, low: int,
            high: int) -> tuple[np.ndarray, np.ndarray]:
    """Publish times and USD prices of the feed's updates in [low, high]: the published history,
    then the hub's live record past the history's watermark."""
    times, values = [], []
    history = found.history(feed)
    scale = 10.0 ** feed.expo
    if history is not None:
        kept = (history.times >= low) & (history.times <= high)
        times.append(history.times[kept])
        values.append(history.columns["price"][kept] * scale)
    # The history holds every update up to the snapshot's watermark: the hub's fill in only
    # past it (a closed feed's last update may be long before it).
    covered = found.window[1]
    key = feed.hub_key(hub)
    if key is not None:
        live = [u for u in hub.recent.get(key, ()) if max(low, covered + 1) <= u.publish_time <= high]
        times.append(np.array([u.publish_time for u in live], dtype=np.int64))
        values.append(np.array([u.price for u in live], dtype=np.float64) * scale)
    if not times:
        return np.zeros(0, dtype=np.int64), np.zeros(0)
    return np.concatenate(times), np.concatenate(values)


async def candles(request: Request, params: Params) -> Response:
    """GET /v1/candles: open, high, low and close of one feed per bucket of the resolution."""
    found, hub = _catalog(request), _hub(request)
    feed = found.find(params["id"])
    if feed is None:
        raise ApiError("not_found", f"no price feed {canonical(params['id'])}", "id")
    step = RESOLUTION_SECONDS[params["resolution"]]
    latest = feed.latest(hub)
    low, high = candle_window(params, found.window[1] if latest is None else latest.publish_time)
    times, values = _series(found, feed, hub, low, high)
    buckets = times // step * step
    places = -feed.expo
    items = []
    for start in np.unique(buckets):
        chosen = values[buckets == start]
        items.append({"timestamp": wire(int(start)), "open": round(float(chosen[0]), places),
                      "high": round(float(chosen.max()), places),
                      "low": round(float(chosen.min()), places),
                      "close": round(float(chosen[-1]), places), "updates": len(chosen)})
    body = {"id": "0x" + canonical(params["id"]), "symbol": feed.attributes["symbol"],
            "resolution": params["resolution"], "items": items}
    return snapshot_json(request.state.snapshot, body)


def websocket_session(live: LiveOracle, snapshot_source: Callable[[], Snapshot | None],
                      send: Callable[[str], Awaitable[None]]) -> WebSocketSession:
    """A Hermes WebSocket session over the live oracle's hub and the current feed catalog."""
    hub = live.hub

    def resolve(ids: list[str]) -> tuple[list[tuple[str, str]], list[str]]:
        snapshot = snapshot_source()
        if snapshot is None:
            return [], [canonical(i) for i in ids]
        found = catalog(snapshot)
        pairs, missing = [], []
        for raw in ids:
            feed = found.find(raw)
            key = None if feed is None else feed.hub_key(hub)
            if key is None:
                missing.append(canonical(raw))
            else:
                pairs.append((key, canonical(raw)))
        return pairs, missing

    return WebSocketSession(hub, resolve, send)


HANDLERS = {
    ("GET", "/v2/updates/price/latest"): latest_updates,
    ("GET", "/v2/updates/price/{publish_time}"): updates_at,
    ("GET", "/v2/updates/price/stream"): stream_updates,
    ("GET", "/v2/price_feeds"): price_feeds,
    ("GET", "/v2/price_feeds/{id}"): price_feed,
    ("GET", "/prices"): prices,
    ("GET", "/prices/at"): prices_at,
    ("GET", "/v1/feeds"): feeds_native,
    ("GET", "/v1/status"): status,
    ("GET", "/v1/candles"): candles,
}

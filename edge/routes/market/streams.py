"""Server-Sent Events of the live tail: a pair's trades and window updates, and each chain's new
pairs. A stream resumes after `Last-Event-ID` (a trade's or a pair's place in its chain:
`block:log`) with nothing lost or repeated, sends a comment when idle (a heartbeat), ends
after the longest stream the edge allows, and each client holds a bounded number at once."""

import abc
import asyncio
import contextlib
import time
from collections import Counter
from collections.abc import AsyncIterator
from typing import Any

import orjson
import polars as pl

from core.wire import iso_text
from edge.addresses import ChainRef
from edge.live.tail import LiveTail, LiveView, live_trades, pair_row
from edge.memo import per_snapshot
from edge.routes.market.pairs import pair_item
from edge.routes.market.trades import POSITION, trade_items
from edge.snapshots import SnapshotHolder
from edge.web.http import Request, Response
from edge.web.problems import ApiError
from edge.web.registry import Params
from publish.reader import Snapshot

RETRY_MS = 1000
# What a window event carries of the live pair row.
WINDOW_FIELDS = ("txn", "volume", "price_change", "windows", "liquidity_usd", "price_native",
                 "last_trade_at", "last_updated_at", "status")
HEADERS = [("cache-control", "no-cache"), ("x-accel-buffering", "no")]

_open: Counter[str] = Counter()


def event_id(position: int) -> str:
    """An event's id: its place in its chain (block:log)."""
    return f"{position >> 32}:{position & 0xFFFFFFFF}"


def last_event_id(request: Request) -> int | None:
    """The place a reconnecting client saw last, from Last-Event-ID; 400 when malformed."""
    text = request.headers.get("last-event-id")
    if not text:
        return None
    block, _, log = text.partition(":")
    if not (block.isdigit() and log.isdigit()) or int(log) >= 1 << 32 or len(block) > 18:
        raise ApiError("invalid_param", "Last-Event-ID is block:log, as a stream's events carry",
                       "Last-Event-ID")
    return (int(block) << 32) + int(log)


def _sse(event: str, data: object, position: int | None = None) -> bytes:
    head = b"" if position is None else f"id: {event_id(position)}\n".encode()
    return head + f"event: {event}\ndata: ".encode() + orjson.dumps(data) + b"\n\n"


class _Slot:
    """One of a client's open streams, held from the answer to the stream's end."""

    def __init__(self, client: str, most: int) -> None:
        if _open[client] >= most:
            raise ApiError("rate_limited", f"at most {most} streams are open at once per client; "
                           "close one first", "stream")
        self.client = client
        _open[client] += 1

    def release(self) -> None:
        _open[self.client] -= 1
        if _open[self.client] <= 0:
            del _open[self.client]


async def _ticks(live: LiveTail, deadline: float,
                 heartbeat_s: float) -> AsyncIterator[bytes | None]:
    """None after every new tail, a heartbeat comment when `heartbeat_s` pass without one,
    until `deadline` (then the stream's end event)."""
    while (left := deadline - time.monotonic()) > 0:
        try:
            await asyncio.wait_for(asyncio.shield(live.changed()), min(heartbeat_s, left))
            yield None
        except TimeoutError:
            yield b": heartbeat\n\n" if deadline - time.monotonic() > 0 else None
    yield _sse("end", {"reason": "max_duration", "reconnect": True})


def _stream(request: Request, feed: "_Feed") -> Response:
    """The feed's events as an SSE answer, holding one of the client's stream slots until it
    ends, and ending after the longest stream the edge allows."""
    settings = request.state.services.settings
    slot = _Slot(request.state.admission.client, settings.streams_per_client)
    events = feed.events(time.monotonic() + settings.stream_max_s, settings.stream_heartbeat_s)

    async def guarded() -> AsyncIterator[bytes]:
        try:
            yield f"retry: {RETRY_MS}\n\n".encode()
            async for chunk in events:
                yield chunk
        finally:
            slot.release()
            with contextlib.suppress(Exception):
                await events.aclose()  # type: ignore[attr-defined]
    return Response(b"", 200, "text/event-stream", list(HEADERS), guarded())


def _window(item: bytes) -> dict[str, Any]:
    row = orjson.loads(item)
    return {"pair_address": row["pair_address"],
            **{field: row[field] for field in WINDOW_FIELDS},
            "tokens": [{"address": t["address"], "price_usd": t["price_usd"],
                        "price_native": t["price_native"]} for t in row["tokens"]]}


class _Feed(abc.ABC):
    """What one stream has sent: the place of its last event (None until it is opened: a new
    client starts from the newest)."""

    def __init__(self, holder: SnapshotHolder, live: LiveTail, after: int | None) -> None:
        self.holder = holder
        self.live = live
        self.after = after

    @abc.abstractmethod
    def news(self) -> list[bytes]:
        """The events past what was sent, in order."""

    async def events(self, deadline: float, heartbeat_s: float) -> AsyncIterator[bytes]:
        """The news now, then after every new tail, with heartbeats, until `deadline`."""
        for chunk in self.news():
            yield chunk
        async for tick in _ticks(self.live, deadline, heartbeat_s):
            for chunk in [tick] if tick is not None else self.news():
                yield chunk


class _PairFeed(_Feed):
    """A pair's trades and, when it changes, its live window block."""

    def __init__(self, holder: SnapshotHolder, live: LiveTail, after: int | None,
                 key: tuple[int, str]) -> None:
        super().__init__(holder, live, after)
        self.key = key
        self.shown: dict[str, Any] | None = None

    def news(self) -> list[bytes]:
        snapshot = self.holder.current
        if snapshot is None:
            return []
        view = self.live.view(snapshot)
        rows = live_trades(snapshot, view, self.key).with_columns(position=POSITION)
        out = []
        if self.after is None:
            newest = rows["position"].max() if rows.height else None
            self.after = newest if isinstance(newest, int) else -1
        else:
            fresh = rows.filter(pl.col("position") > self.after)
            for item, place in zip(trade_items(fresh, iso_text), fresh["position"].to_list(),
                                   strict=True):
                out.append(_sse("trade", item, place))
                self.after = place
        row = pair_row(snapshot, self.key)
        if row is None:
            # A pool created since the snapshot has trades but no row until the next one.
            return out
        window = _window(pair_item(snapshot, view, self.key, row))
        # The watermark alone moving is no news: the figures are.
        figures = {k: v for k, v in window.items() if k != "last_updated_at"}
        if figures != self.shown:
            out.append(_sse("window", window, self.after if self.after >= 0 else None))
            self.shown = figures
        return out


class _NewPairsFeed(_Feed):
    """A chain's pairs as they are created: the snapshot's and the live tail's."""

    def __init__(self, holder: SnapshotHolder, live: LiveTail, after: int | None,
                 chain: ChainRef) -> None:
        super().__init__(holder, live, after)
        self.chain = chain

    def news(self) -> list[bytes]:
        snapshot = self.holder.current
        if snapshot is None:
            return []
        view = self.live.view(snapshot)
        known = created_pairs(snapshot).filter(pl.col("chain_id") == self.chain.chain_id)
        rows = known if view is None else pl.concat([known, _tail_created(view, self.chain)])
        if self.after is None:
            newest = rows["position"].max() if rows.height else None
            self.after = newest if isinstance(newest, int) else -1
            return []
        out = []
        for position, item in rows.filter(pl.col("position") > self.after).sort(
                "position").select("position", "item").iter_rows():
            out.append(_sse("pair", orjson.Fragment(item), position))
            self.after = position
        return out


async def pair_stream(request: Request, params: Params) -> Response:
    """A pair's new trades (`trade`) and, whenever they change, its live window blocks, prices
    and liquidity (`window`), as Server-Sent Events."""
    state = request.state
    chain: ChainRef = params["chain"]
    if pair_row(state.snapshot, (chain.chain_id, params["address"])) is None:
        raise ApiError("not_found", f"no pair {params['address']} on {chain.slug}", "address")
    services = state.services
    feed = _PairFeed(services.holder, services.live, last_event_id(request),
                     (chain.chain_id, params["address"]))
    return _stream(request, feed)


async def new_pairs_stream(request: Request, params: Params) -> Response:
    """The pairs a chain creates (`pair`), as Server-Sent Events."""
    services = request.state.services
    feed = _NewPairsFeed(services.holder, services.live, last_event_id(request), params["chain"])
    return _stream(request, feed)


@per_snapshot(kept=4)
def created_pairs(snapshot: Snapshot) -> pl.DataFrame:
    """Every pair of the snapshot as a new-pair event: its chain, its place of creation and
    the event's item, in creation order."""
    table = snapshot.tables.get("pairs")
    rows = [] if table is None else [
        _created(chain_id, slug, orjson.loads(item))
        for chain_id, slug, item in table.select("chain_id", "slug", "item").iter_rows()]
    return pl.DataFrame(rows, schema={"chain_id": pl.Int64, "position": pl.Int64,
                                      "item": pl.String}, orient="row").sort("chain_id",
                                                                             "position")


def _event(chain_id: int, slug: str, pair: str, factory: str, factory_type: str,
           tokens: tuple[str, str], fee_bps: int, created_at: str, place: tuple[int, int],
           tx_hash: str, creator: str, launchpad: str | None,
           is_perp: bool) -> tuple[int, int, str]:
    """A new-pair event: its chain, its place (block, log) and its item."""
    item = {"chain": {"slug": slug, "chain_id": chain_id}, "pair_address": pair,
            "factory": factory, "factory_type": factory_type, "token0": tokens[0],
            "token1": tokens[1], "fee_bps": fee_bps, "created_at": created_at,
            "block_number": place[0], "log_index": place[1], "tx_hash": tx_hash,
            "creator": creator, "launchpad": launchpad, "is_perp": is_perp}
    return chain_id, (place[0] << 32) + place[1], orjson.dumps(item).decode()


def _created(chain_id: int, slug: str, row: dict[str, Any]) -> tuple[int, int, str]:
    """A published pair row as a new-pair event."""
    deployer, tokens = row["deployer"], sorted(row["tokens"], key=lambda t: t["position"])
    return _event(chain_id, slug, row["pair_address"], row["dex"]["factory"],
                  row["dex"]["factory_type"], (tokens[0]["address"], tokens[1]["address"]),
                  round(row["pair_fee"] * 10_000), row["created_at"],
                  (deployer["block_number"], deployer["log_index"]), deployer["tx_hash"],
                  deployer["address"], (row["launchpad"] or {}).get("name"),
                  row["prop_data"]["is_perp"])


def _tail_created(view: LiveView, chain: ChainRef) -> pl.DataFrame:
    """The live tail's new pairs of a chain as new-pair events."""
    rows = view.new_pairs.filter(pl.col("chain_id") == chain.chain_id)
    events = [_event(chain.chain_id, chain.slug, r["address"], r["factory"], r["factory_type"],
                     (r["token0"], r["token1"]), r["fee_bps"],
                     r["created_at"].strftime("%Y-%m-%dT%H:%M:%S.%f")[:-3] + "Z",
                     (r["created_block"], r["created_log_index"]), r["created_tx"],
                     r["creator"], r["launchpad"], r["is_perp"])
              for r in rows.iter_rows(named=True)]
    return pl.DataFrame(events, schema={"chain_id": pl.Int64, "position": pl.Int64,
                                        "item": pl.String}, orient="row")


HANDLERS = {("GET", "/chains/{chain}/pairs/{address}/stream"): pair_stream,
            ("GET", "/pairs/new/stream"): new_pairs_stream}

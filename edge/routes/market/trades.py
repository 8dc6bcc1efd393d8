"""A pair's trades (spec 4.6), paged by position so that a cursor keeps following new trades,
and its candles at every resolution /config lists."""

from collections.abc import Callable
from typing import Any

import polars as pl

from core.vocabulary import RESOLUTION_SECONDS
from core.wire import iso_text
from edge.addresses import ChainRef, normalize
from edge.live.tail import LiveView, last_rows, live_trades, pair_row, tail_held, trades_of
from edge.memo import kept_answers, kept_while
from edge.paging import decode
from edge.snapshots import as_of_seconds, snapshot_json
from edge.web.http import Request, Response
from edge.web.problems import ApiError
from edge.web.registry import Params
from publish.cursor import Cursor, list_scope
from publish.reader import Snapshot

DEFAULT_CANDLES = 300
MAX_CANDLES = 1_000
NEWER, OLDER = "newer", "older"
SWAPS = ("buy", "sell")


def pair_trades(snapshot: Snapshot, view: LiveView | None, chain: ChainRef,
                address: str, since: int | None = None,
                newest: int | None = None) -> pl.DataFrame:
    """Every trade of a pair, oldest first, the live tail's included (`since`: the snapshot's
    parts that may hold trades at or after that second only; `newest`: the last so many
    trades only); 404 when the chain indexes no such pair (a pair created since the snapshot
    is known from the live tail)."""
    key = (chain.chain_id, address)
    if pair_row(snapshot, key) is None and (view is None or key not in view.created):
        raise ApiError("not_found", f"no pair {address} on {chain.slug}", "address")
    if newest is not None:
        return last_rows(trades_of(snapshot), None if view is None else view.trades.rows(key),
                         key, newest)
    return live_trades(snapshot, view, key, since)


def trade_items(rows: pl.DataFrame, iso_of: Callable[[int], str]) -> list[dict[str, Any]]:
    """Pair trade records (spec 2.7) from trade rows."""
    return [{
        "timestamp": iso_of(r["ts"]), "hash": r["hash"], "chain_id": r["chain_id"],
        "maker_address": r["maker"], "from_address": r["from_address"],
        "to_address": r["to_address"], "tx_type": r["tx_type"],
        "block_info": {"block_number": r["block_number"], "log_index": r["log_index"],
                       "gas_used": r["gas_used"], "fee_usd": r["fee_usd"]},
        "event_data": {"amount0": r["amount0"], "amount1": r["amount1"], "price0": r["price0"],
                       "price1": r["price1"], "price_usd0": r["price_usd0"],
                       "price_usd1": r["price_usd1"]},
    } for r in rows.iter_rows(named=True)]


# A trade's place in its pair's history: block, then log index, as one sortable integer.
POSITION = pl.col("block_number") * (1 << 32) + pl.col("log_index")


@kept_while(tail_held(lambda view: view.trades, ("block_number", "log_index", "hash")))
async def list_trades(request: Request, params: Params) -> Response:
    """Swaps and liquidity events in time order, newest first unless asked otherwise."""
    snapshot, view = request.state.snapshot, request.state.live
    chain: ChainRef = params["chain"]
    maker = params["maker"] and normalize(params["maker"], chain.address_format, "maker")
    low, high = params["from"], params["to"]
    if low is not None and high is not None and low > high:
        raise ApiError("invalid_param", "from is after to", "from")
    types = sorted(set(params["tx_type"] or ()))
    limit, newest_first = params["limit"], params["order"] == "desc"
    # An unfiltered first page, newest first, reads its own rows and the one past them (whether
    # there are more) from the newest parts back.
    plain = params["cursor"] is None and newest_first and not (
        types or maker or low is not None or high is not None)
    rows = pair_trades(snapshot, view, chain, params["address"],
                       newest=limit + 1 if plain else None)
    scope = list_scope(chain=chain.chain_id, pair=params["address"], tx_type=types, maker=maker,
                       low=low, high=high, order=params["order"])
    if types:
        rows = rows.filter(pl.col("tx_type").is_in(types))
    if maker:
        rows = rows.filter(pl.col("maker") == maker)
    if low is not None:
        rows = rows.filter(pl.col("ts") >= low)
    if high is not None:
        rows = rows.filter(pl.col("ts") <= high)
    if params["cursor"] is None:
        # Of a filtered or oldest-first first page too: its own rows and the one past them.
        rows = rows.tail(limit + 1) if newest_first else rows.head(limit + 1)
    rows = rows.with_columns(position=POSITION)
    toward, at = None, None
    if params["cursor"] is not None:
        decoded = decode(request, params["cursor"], "trades", scope)
        toward, at = decoded.toward, decoded.position[0]
    if toward == NEWER:
        chosen = rows.filter(pl.col("position") > at).head(limit)
    elif toward == OLDER:
        chosen = rows.filter(pl.col("position") < at).tail(limit)
    else:
        chosen = rows.tail(limit) if newest_first else rows.head(limit)
    positions: list[int] = chosen["position"].to_list()
    newest = max(positions) if positions else (at if at is not None else -1)
    oldest = min(positions) if positions else None
    signer, sid = request.state.signer, snapshot.snapshot_id

    def cursor(direction: str, position: int) -> str:
        encoded: str = signer.encode(Cursor(sid, "trades", 0, scope, (position,), direction))
        return encoded

    older = (cursor(OLDER, oldest) if oldest is not None
             and rows.filter(pl.col("position") < oldest).height else None)
    # Newest first, the cursor toward newer trades is always given so a client can keep
    # catching up; oldest first, it ends like any walk once nothing newer is published.
    newer = (cursor(NEWER, newest) if newest_first
             or rows.filter(pl.col("position") > newest).height else None)
    items = trade_items(chosen.reverse() if newest_first else chosen, iso_text)
    body = {"items": items,
            "next_cursor": older if newest_first else newer,
            "prev_cursor": newer if newest_first else older}
    return snapshot_json(snapshot, body, view and view.as_of_text)


def candles(rows: pl.DataFrame, seconds: int, low: int, high: int) -> list[dict[str, Any]]:
    """OHLCV candles of the swaps in [low, high], one per interval that traded; an interval
    opens at a multiple of its length in UTC."""
    swaps = rows.filter(pl.col("tx_type").is_in(SWAPS), pl.col("ts") >= low,
                        pl.col("ts") <= high, pl.col("price_usd").is_not_null())
    bars = (swaps.with_columns(open_at=pl.col("ts") - pl.col("ts") % seconds)
            .group_by("open_at", maintain_order=True).agg(
                open=pl.col("price_usd").first(), high=pl.col("price_usd").max(),
                low=pl.col("price_usd").min(), close=pl.col("price_usd").last(),
                volume_usd=pl.col("volume_usd").fill_null(0.0).sum(),
                trades=pl.len(), buys=(pl.col("tx_type") == "buy").sum(),
                sells=(pl.col("tx_type") == "sell").sum())
            .sort("open_at"))
    return [{"timestamp": iso_text(b["open_at"]), "time": b["open_at"], **{
        k: b[k] for k in ("open", "high", "low", "close", "volume_usd", "trades", "buys",
                          "sells")}} for b in bars.iter_rows(named=True)]


def candle_window(params: Params, default_to: int) -> tuple[int, int]:
    """[from, to] of a candles read: `to` defaults to `default_to`, `from` to DEFAULT_CANDLES
    before it; at most MAX_CANDLES candles of the resolution."""
    seconds = RESOLUTION_SECONDS[params["resolution"]]
    high = params["to"] if params["to"] is not None else default_to
    low = params["from"] if params["from"] is not None else high - DEFAULT_CANDLES * seconds
    if low > high:
        raise ApiError("invalid_param", "from is after to", "from")
    if (high - low) // seconds > MAX_CANDLES:
        raise ApiError("invalid_param", f"the window spans more than {MAX_CANDLES} candles of "
                       f"{params['resolution']}; narrow from and to", "from")
    return low, high


@kept_answers
async def get_candles(request: Request, params: Params) -> Response:
    """A pair's candles at one resolution; the window ends at `to` (default: the watermark,
    the live tail's when it adds to the snapshot) and spans at most 1,000 candles (default
    300)."""
    snapshot, view = request.state.snapshot, request.state.live
    chain: ChainRef = params["chain"]
    seconds = RESOLUTION_SECONDS[params["resolution"]]
    as_of = as_of_seconds(snapshot) if view is None else view.as_of_ms // 1000
    low, high = candle_window(params, as_of)
    # The window's days only: a busy pair's week is most of what a read of it would touch.
    rows = pair_trades(snapshot, view, chain, params["address"], since=low)
    body = {"chain": {"slug": chain.slug, "chain_id": chain.chain_id},
            "pair_address": params["address"], "resolution": params["resolution"],
            "from": low, "to": high, "items": candles(rows, seconds, low, high)}
    return snapshot_json(snapshot, body, view and view.as_of_text)


HANDLERS = {("GET", "/chains/{chain}/pairs/{address}/trades"): list_trades,
            ("GET", "/chains/{chain}/pairs/{address}/candles"): get_candles}

"""Perpetuals (spec 4.8 and GET /perps): the market list, a market's history and liquidations
per UTC day."""


from datetime import UTC, datetime

import polars as pl

from core.vocabulary import WIRE_TIME
from edge.addresses import ChainRef, normalize, resolve_chain
from edge.paging import page, table_listing
from edge.snapshots import as_of_seconds, snapshot_json, table
from edge.web.http import Request, Response
from edge.web.problems import ApiError
from edge.web.registry import Params
from publish.reader import Snapshot

PERPS = table_listing("perps")
# `from` defaults to this long before `to`: the longest window the history serves.
LONGEST_WINDOW_S = 7 * 86_400
# 9999-12-31T23:59:59Z, the last instant a datetime holds.
LAST_SECOND = 253_402_300_799
POINT_FIELDS = ("mark_price", "oracle_price", "premium", "oi_usd", "oi_long_usd",
                "oi_short_usd", "funding_long_1h", "funding_short_1h", "borrow_long_1h",
                "borrow_short_1h", "oi_known")
DAY_FIELDS = ("liquidated_long_usd", "liquidated_short_usd", "max_liquidation_usd",
              "long_count", "short_count")


async def list_perps(request: Request, params: Params) -> Response:
    """Every perp market with the perp block of its pair row, paged."""
    return await page(request, PERPS, params["limit"], params["cursor"])


def venue_chain(snapshot: Snapshot, params: Params) -> ChainRef:
    """The chain asked for, else the perpetuals venue's."""
    asked: ChainRef | None = params["chain"]
    if asked is not None:
        return asked
    markets = table(snapshot, "perp_markets")
    if markets.is_empty():
        raise ApiError("not_found", "no perpetuals venue is indexed", "chain")
    return resolve_chain(snapshot, str(markets["chain_id"][0]), "chain")


def market_of(snapshot: Snapshot, chain: ChainRef, market: str, param: str) -> str:
    """The market's address as its pair row spells it; 404 when the chain lists no such market."""
    address = normalize(market, chain.address_format, param)
    markets = table(snapshot, "perp_markets")
    if markets.filter(pl.col("chain_id") == chain.chain_id, pl.col("market") == address).is_empty():
        raise ApiError("not_found", f"no perp market {address} on {chain.slug}", param)
    return address


def window(snapshot: Snapshot, params: Params) -> tuple[int, int]:
    """[from, to] in unix seconds: `to` defaults to the watermark, `from` to the longest window
    before it."""
    high = params["to"] if params["to"] is not None else as_of_seconds(snapshot)
    low = params["from"] if params["from"] is not None else max(0, high - LONGEST_WINDOW_S)
    if low > high:
        raise ApiError("invalid_param", "from is after to", "from")
    return low, high


def _instant(seconds: int) -> datetime:
    # Any 64-bit second is a valid bound; past the calendar's end it means the calendar's end.
    return datetime.fromtimestamp(min(seconds, LAST_SECOND), UTC)


async def perp_history(request: Request, params: Params) -> Response:
    """A market's history points at `5m` or `1h` within [from, to]."""
    snapshot = request.state.snapshot
    chain = venue_chain(snapshot, params)
    market = market_of(snapshot, chain, params["market"], "market")
    low, high = window(snapshot, params)
    rows = table(snapshot, "perp_history").filter(
        pl.col("chain_id") == chain.chain_id, pl.col("market") == market,
        pl.col("interval") == params["interval"],
        pl.col("observed_at").is_between(_instant(low), _instant(high)))
    items = [{"timestamp": r["observed_at"].strftime(WIRE_TIME),
              **{f: r[f] for f in POINT_FIELDS}} for r in rows.iter_rows(named=True)]
    body = {"chain": chain.slug, "market": market, "interval": params["interval"],
            "items": items}
    return snapshot_json(snapshot, body)


async def liquidations(request: Request, params: Params) -> Response:
    """Liquidations per UTC day of a market or the whole venue, for the days from `from` to `to`
    the feed covered; `stale` when the feed has stopped (recent days may be short)."""
    snapshot = request.state.snapshot
    chain = venue_chain(snapshot, params)
    market = (None if params["market"] is None
              else market_of(snapshot, chain, params["market"], "market"))
    low, high = window(snapshot, params)
    days = table(snapshot, "liquidation_days").filter(pl.col("chain_id") == chain.chain_id)
    stale = bool(days["stale"].any()) if not days.is_empty() else True
    rows = days.filter(pl.col("market").is_null() if market is None
                       else pl.col("market") == market,
                       pl.col("day").is_between(_instant(low).date(), _instant(high).date()))
    items = [{"day": r["day"].isoformat(), **{f: r[f] for f in DAY_FIELDS}}
             for r in rows.iter_rows(named=True)]
    body = {"chain": chain.slug, "market": market, "stale": stale, "items": items}
    return snapshot_json(snapshot, body)


HANDLERS = {("GET", "/perps"): list_perps, ("GET", "/perps/{market}/history"): perp_history,
            ("GET", "/perps/liquidations"): liquidations}

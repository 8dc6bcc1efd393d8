"""The live tail from the lake (publish/live.py): the pair trades since a snapshot's watermark
and every pair's reserves valued at the lake's newest one, made by the functions the batch
makes them with (the swap legs, the trade rows, the pair state), so that the next snapshot
holds exactly what the tail showed."""

import time
from datetime import datetime, timedelta

import polars as pl

from assets.market.assets import in_tokens, liquidity, quote_price_rows, valued
from assets.market.pair_rows import KEY, native_prices
from assets.market.pair_trades import (
    assemble_legs,
    assemble_liquidity_trades,
    leg_reads,
    trade_rows,
)
from assets.warehouse import Warehouse
from publish.live import Tail
from publish.snapshot import Manifest
from sources.lake import Lake

# Oracle updates read before the tail's start: a swap is priced at its feed's latest update,
# which the oracle's cadence (seconds) keeps well inside this.
PRICES_BEFORE = timedelta(hours=6)
LIVE_PAIR_COLUMNS = ("chain_id", "pair", "base_reserve", "quote_reserve", "quote_usd",
                     "price_usd", "liquidity_usd", "native_usd")


def _since(lake: Lake, table: str, at: str, since: datetime) -> pl.LazyFrame:
    """A dated table's rows after `since`, reading only the days from `since`'s on."""
    days = [d for d in lake.days(table) if d >= since.date().isoformat()]
    frames = [lake.scan(table, d) for d in days]
    if not frames:
        return lake.scan(table).head(0)
    return pl.concat(frames).filter(pl.col(at) > since)


def live_tail(lake: Lake, warehouse: Warehouse, manifest: Manifest, seq: int,
              picked_at: float) -> Tail:
    """The tail of `lake` (pinned at its last mark, seen at `picked_at`) past the snapshot
    `manifest` describes."""
    since = datetime.fromisoformat(manifest.as_of)
    as_of = lake.watermark or since
    as_of_s = int(as_of.timestamp())
    updates = lake.scan("oracle_updates").filter(
        pl.col("publish_time") > int((since - PRICES_BEFORE).timestamp()),
        pl.col("publish_time") <= as_of_s)
    prices = quote_price_rows(updates).collect()
    frames = {"quote_prices": prices.lazy(), "pair_tokens": warehouse.scan("pair_tokens"),
              "chains": lake.scan("chains"), "tokens": lake.scan("tokens"),
              "liquidity_events": _since(lake, "liquidity_events", "block_time", since)
              .filter(pl.col("block_time") <= as_of)}
    swaps = (_since(lake, "swaps", "block_time", since).filter(pl.col("block_time") <= as_of)
             .collect())
    legs = assemble_legs(frames, swaps.lazy().with_row_index("swap").select(**leg_reads()))
    trades = trade_rows(legs.collect(), swaps.lazy(), assemble_liquidity_trades(frames), as_of)
    return Tail(seq, manifest.snapshot_id, since, as_of, _chain_marks(lake, as_of),
                picked_at=picked_at, published_at=time.time(), trades=trades,
                pairs=live_pairs(lake, warehouse, frames, since, as_of))


def live_pairs(lake: Lake, warehouse: Warehouse, frames: dict[str, pl.LazyFrame],
               since: datetime, as_of: datetime) -> pl.DataFrame:
    """Every pair's reserves at `as_of` (the latest after `since`, else the warehouse's pair
    state), valued at `as_of` as the pair state values them, with its chain's native price."""
    pairs = frames["pair_tokens"].select(
        *KEY, "base_is_token0", "base_decimals", "quote_decimals", "quote_feed_id")
    moved = (_since(lake, "reserves", "block_time", since)
             .filter(pl.col("block_time") <= as_of)
             .group_by(KEY).agg(pl.col("reserve0").last(), pl.col("reserve1").last()))
    kept = (warehouse.scan("pair_state").select(*KEY, "base_reserve", "quote_reserve")
            .join(moved.select(KEY), on=KEY, how="anti")
            .join(pairs.select(*KEY, "quote_feed_id"), on=KEY))
    reserves = pl.concat([kept, in_tokens(moved, pairs)], how="diagonal_relaxed")
    return (valued(reserves, frames["quote_prices"].collect(), int(as_of.timestamp()))
            .with_columns(liquidity_usd=liquidity())
            .join(native_prices(frames, as_of), on="chain_id", how="left")
            .select(LIVE_PAIR_COLUMNS).sort(KEY).collect())


def _chain_marks(lake: Lake, as_of: datetime) -> dict[int, datetime]:
    """Each chain's newest block time in the lake up to `as_of` (how far it is live)."""
    heads = (lake.scan("heads").filter(pl.col("observed_at") <= as_of)
             .group_by("chain_id").agg(pl.col("observed_at").max()).collect())
    return {chain: min(at, as_of) for chain, at in heads.iter_rows()}

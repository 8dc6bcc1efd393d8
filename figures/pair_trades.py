"""Pair trades (spec 2.7, 4.6): every swap of every pair from its base token's side (the legs
every market, board and wallet product reads), every liquidity event, both priced; and the
trade rows the edge pages, which the snapshot builds from the two."""

from dataclasses import dataclass
from datetime import datetime
from typing import NamedTuple

import numba
import numpy as np
import polars as pl
import pyarrow as pa

from core.columns import EVENT
from core.fingerprints import distinct, keyed, lookup
from figures.pair_rows import KEY
from figures.raw_amounts import RAW_SWAPPED, as_float, halves

TRADE_COLUMNS = ("chain_id", "pair", "block_number", "log_index", "ts", "at_ms", "hash", "maker",
                 "from_address", "to_address", "tx_type", "gas_used", "fee_usd", "amount0",
                 "amount1", "price0", "price1", "price_usd0", "price_usd1", "price_usd",
                 "volume_usd")
LEG_COLUMNS = ("chain_id", "block_number", "log_index", "block_time", "ts", "pair",
               "maker_key", "side", "base_is_token0", "base_amount", "quote_amount", "quote_usd",
               "volume_usd", "gas_used", "fee_usd", "price_usd")
# A price's position in FeedPrices: its feed's index in this many seconds plus its second.
_FEED_SPAN = 2**33


@dataclass(frozen=True)
class FeedPrices:
    """Every oracle feed's USD prices in (feed, time) order, searched for many instants at once
    without sorting them: what an as-of join by feed would do, on any order of rows."""

    feeds: pl.Series
    positions: pl.Series
    prices: pl.Series

    @classmethod
    def of(cls, quote_prices: pl.DataFrame) -> "FeedPrices":
        """From the quote prices product (feed_id, ts, price_usd)."""
        feeds = quote_prices["feed_id"].unique().sort()
        ordered = quote_prices.with_columns(ix=lookup(pl.col("feed_id"), feeds)).sort("ix", "ts")
        return cls(feeds, ordered["ix"] * _FEED_SPAN + ordered["ts"], ordered["price_usd"])

    def index(self, feed_ids: pl.Series) -> pl.Series:
        """Each feed id's index (null for no feed or one without prices)."""
        return pl.select(lookup(pl.lit(feed_ids), self.feeds)).to_series()

    def at(self, feed: pl.Series, ts: pl.Series) -> pl.Series:
        """The latest price of feed index `feed` at or before unix second `ts`, row by row (null
        without a feed, or before the feed's first price)."""
        if self.prices.is_empty():
            return pl.Series("price_usd", [None] * len(feed), pl.Float64)
        found = _latest(self.positions.cast(pl.Int64).to_numpy(),
                        feed.cast(pl.Int64).fill_null(-1).to_numpy(),
                        ts.cast(pl.Int64).to_numpy(), _FEED_SPAN)
        price = self.prices.to_numpy()[np.maximum(found, 0)]
        return pl.select(price_usd=pl.when(pl.lit(found >= 0)).then(pl.lit(price))).to_series()


@numba.njit(nogil=True, cache=True)
def _latest(positions, feed, ts, span):
    """For each row, the index in `positions` (sorted feed * span + second) of its feed's
    latest price at or before its second, or -1. Rows in time order per feed, as a chain's
    swaps are, move each feed's cursor a few steps forward instead of searching again."""
    n, m = len(feed), len(positions)
    found = np.full(n, -1, np.int64)
    cursor = np.full(max(1, feed.max() + 1) if n else 1, -1, np.int64)
    for i in range(n):
        f = feed[i]
        if f < 0:
            continue
        key = f * span + ts[i]
        c = cursor[f]
        if c < 0 or positions[c] > key:
            c = np.searchsorted(positions, key, side="right") - 1
        else:
            steps = 0
            while c + 1 < m and positions[c + 1] <= key and steps < 16:
                c += 1
                steps += 1
            if c + 1 < m and positions[c + 1] <= key:
                c = np.searchsorted(positions, key, side="right") - 1
        cursor[f] = c
        if c >= 0 and positions[c] // span == f:
            found[i] = c
    return found


SPANS_APART = pl.QueryOptFlags(comm_subplan_elim=False)


def with_swap_strings(legs: pl.DataFrame, swaps: pl.LazyFrame,
                      columns: tuple[str, ...]) -> pl.DataFrame:
    """The legs with these columns of their raw swaps (hash, maker, sender, recipient), found
    in the lake by each leg's event (chain, block, log), which no later write moves: only the
    blocks the legs span of their chains are read. A leg whose swap the lake does not hold is
    refused, not left without its strings."""
    spans = legs.group_by("chain_id").agg(low=pl.col("block_number").min(),
                                          high=pl.col("block_number").max())
    # A chain at a time: a plain conjunction of the chain (a partition of the lake) and its
    # blocks (each file's statistics) is what a scan skips files and row groups by. Not as one
    # plan: that reads the shared scan once under the hull of every chain's blocks.
    found = pl.concat([pl.DataFrame(schema=swaps.select(*EVENT, *columns).collect_schema()),
                       *pl.collect_all([
                           swaps.filter(pl.col("chain_id") == chain,
                                        pl.col("block_number").is_between(low, high))
                           .select(*EVENT, *columns) for chain, low, high in spans.iter_rows()],
                           optimizations=SPANS_APART)]).with_columns(_found=pl.lit(True))
    joined = legs.join(found, on=EVENT, how="left", maintain_order="left")
    if joined.height != legs.height or joined["_found"].null_count():
        raise ValueError("swap_legs name swaps the lake does not hold (a lake written again "
                         "since): materialise swap_legs again")
    return joined.drop("_found")


def _by_position(base: str, quote: str) -> dict[str, pl.Expr]:
    """token0 and token1 figures from base and quote ones."""
    b0 = pl.col("base_is_token0")
    return {"0": pl.when(b0).then(pl.col(base)).otherwise(pl.col(quote)),
            "1": pl.when(b0).then(pl.col(quote)).otherwise(pl.col(base))}


def human(raw: str, decimals: str) -> pl.Expr:
    """A raw integer amount in whole tokens."""
    return pl.col(raw).cast(pl.Float64) / pl.lit(10.0).pow(pl.col(decimals))


def _pools(frames: dict[str, pl.LazyFrame], prices: FeedPrices) -> pl.DataFrame:
    """Per pair (by fingerprint): which side is the base, both decimals and the quote's feed."""
    pools = frames["pair_tokens"].select(
        *KEY, "base_is_token0", "base_decimals", "quote_decimals", "quote_feed_id").collect()
    return pools.with_columns(key=distinct(pools.select(keyed(*KEY)).to_series(), "pair_tokens"),
                              quote_ix=prices.index(pools["quote_feed_id"]))


def native_tokens(frames: dict[str, pl.LazyFrame], prices: FeedPrices) -> pl.DataFrame:
    """Per chain: its native token, the token's decimals and its feed's index in `prices`."""
    natives = (frames["chains"].join(
        frames["tokens"].select("chain_id", "address", "decimals", "price_feed_id"),
        left_on=["chain_id", "native_token"], right_on=["chain_id", "address"], how="left")
        .select("chain_id", "native_token", "decimals", "price_feed_id").collect())
    return natives.with_columns(native_ix=prices.index(natives["price_feed_id"]))


class _Swaps(NamedTuple):
    """A batch of swaps as `_priced` reads them: each one's pool and chain positions (-1: no
    chain), time, raw amounts in and out of each token and raw fee (two 64-bit halves a row),
    and whether its fee is known."""

    pool: np.ndarray
    chain: np.ndarray
    ts: np.ndarray
    in0: np.ndarray
    in1: np.ndarray
    out0: np.ndarray
    out1: np.ndarray
    fee: np.ndarray
    fee_known: np.ndarray


@numba.njit(nogil=True, cache=True)
def _priced(swaps, pools, span):
    """Each swap from its base token's side, row by row: buy or not, amounts, the quote's USD
    price, USD value and price, and the fee in USD, each with whether it is known (a scale or a
    feed of -1 is unknown, as is a price before a feed's first)."""
    n = len(swaps.pool)
    quote_ix, native_ix = np.empty(n, np.int64), np.empty(n, np.int64)
    for row in range(n):
        quote_ix[row] = pools.quote_feed[swaps.pool[row]]
        chain = swaps.chain[row]
        native_ix[row] = pools.native_feed[chain] if chain >= 0 else -1
    quote_at = _latest(pools.positions, quote_ix, swaps.ts, span)
    native_at = _latest(pools.positions, native_ix, swaps.ts, span)
    buy = np.empty(n, np.bool_)
    figures = np.empty((6, n))
    known = np.empty((6, n), np.bool_)
    in0, in1, out0, out1, fee = swaps.in0, swaps.in1, swaps.out0, swaps.out1, swaps.fee
    for row in range(n):
        pool, chain = swaps.pool[row], swaps.chain[row]
        base_first = pools.base_is_token0[pool]
        amount0 = as_float(in0[row, 0], in0[row, 1]) + as_float(out0[row, 0], out0[row, 1])
        amount1 = as_float(in1[row, 0], in1[row, 1]) + as_float(out1[row, 0], out1[row, 1])
        buy[row] = ((out0[row, 0] | out0[row, 1]) != 0 if base_first
                    else (out1[row, 0] | out1[row, 1]) != 0)
        base = (amount0 if base_first else amount1) / pools.base_scale[pool]
        quote = (amount1 if base_first else amount0) / pools.quote_scale[pool]
        usd = pools.prices[quote_at[row]] if quote_at[row] >= 0 else np.nan
        volume = quote * usd
        native = pools.native_scale[chain] if chain >= 0 else -1.0
        native_usd = pools.prices[native_at[row]] if native_at[row] >= 0 else np.nan
        figures[0, row], figures[1, row], figures[2, row] = base, quote, usd
        figures[3, row] = volume
        figures[4, row] = as_float(fee[row, 0], fee[row, 1]) / native * native_usd
        figures[5, row] = volume / base
        known[0, row] = pools.base_scale[pool] > 0
        known[1, row] = pools.quote_scale[pool] > 0
        known[2, row] = quote_at[row] >= 0
        known[3, row] = known[1, row] and known[2, row]
        known[4, row] = swaps.fee_known[row] and native > 0 and native_at[row] >= 0
        known[5, row] = known[3, row] and known[0, row]
    return buy, figures, known


# What `_priced` answers, in its order.
PRICED = ("base_amount", "quote_amount", "quote_usd", "volume_usd", "fee_usd", "price_usd")


class _Pools(NamedTuple):
    """Per pair and per chain, what pricing a leg reads, and the feeds' prices, as arrays the
    legs kernel indexes."""

    base_is_token0: np.ndarray
    base_scale: np.ndarray
    quote_scale: np.ndarray
    quote_feed: np.ndarray
    native_scale: np.ndarray
    native_feed: np.ndarray
    positions: np.ndarray
    prices: np.ndarray

    @classmethod
    def of(cls, pools: pl.DataFrame, natives: pl.DataFrame, prices: FeedPrices) -> "_Pools":
        """From the pools (`_pools`), the chains' native tokens (`native_tokens`) and the
        prices they were indexed in; an unknown scale is -1, an unknown feed -1."""
        def scale(frame: pl.DataFrame, decimals: str) -> np.ndarray:
            return frame.select(pl.lit(10.0).pow(pl.col(decimals)).fill_null(-1.0)).to_series()\
                .to_numpy()

        def feed(frame: pl.DataFrame, ix: str) -> np.ndarray:
            return frame[ix].cast(pl.Int64).fill_null(-1).to_numpy()

        return cls(pools["base_is_token0"].to_numpy(), scale(pools, "base_decimals"),
                   scale(pools, "quote_decimals"), feed(pools, "quote_ix"),
                   scale(natives, "decimals"), feed(natives, "native_ix"),
                   prices.positions.cast(pl.Int64).to_numpy(), prices.prices.to_numpy())


def _legs_of(batch: pl.DataFrame, pools: _Pools) -> pl.DataFrame:
    """A batch of swaps with their pool and chain positions, priced by `_priced`."""
    raw = {c: halves(batch[c].rechunk().to_arrow()) for c in (*RAW_SWAPPED, "tx_fee_raw")}
    pool = batch["pool"].cast(pl.Int64).to_numpy()
    swaps = _Swaps(pool, batch["chain"].cast(pl.Int64).fill_null(-1).to_numpy(),
                   batch["ts"].to_numpy(), raw["amount0_in"], raw["amount1_in"],
                   raw["amount0_out"], raw["amount1_out"], raw["tx_fee_raw"],
                   batch["tx_fee_raw"].is_not_null().to_numpy())
    buy, figures, known = _priced(swaps, pools, _FEED_SPAN)
    priced = pl.from_arrow(pa.table({
        name: pa.array(figures[i], mask=None if known[i].all() else ~known[i])
        for i, name in enumerate(PRICED)}))
    kept = batch.select(pl.exclude(*RAW_SWAPPED, "tx_fee_raw", "pool", "chain", "key"))
    return kept.with_columns(
        priced, side=pl.when(pl.lit(buy)).then(pl.lit("buy")).otherwise(pl.lit("sell")),
        base_is_token0=pl.lit(pools.base_is_token0[pool]))


def swap_fingerprints() -> dict[str, pl.Expr]:
    """The fingerprints of a raw swap's maker (`maker_key`) and of its chain and pair (`key`):
    one definition for every fold that reads them, so one read of the swaps can serve several."""
    return {"maker_key": keyed("maker"), "key": keyed(*KEY)}


def leg_reads() -> dict[str, pl.Expr]:
    """What the legs read of each raw swap, by name: its event, time, pair and amounts, and its
    `swap_fingerprints`."""
    return {c: pl.col(c) for c in ("chain_id", "block_number", "log_index", "block_time",
                                   "pair", "gas_used", *RAW_SWAPPED, "tx_fee_raw")} | (
        swap_fingerprints())


@dataclass(frozen=True)
class LegPricing:
    """What pricing the legs reads, made once for a run's days: the pools by fingerprint, the
    chains' native tokens, and both with the feeds' prices as the legs' kernel indexes them."""

    pools: pl.DataFrame
    natives: pl.DataFrame
    tables: _Pools

    @classmethod
    def of(cls, frames: dict[str, pl.LazyFrame]) -> "LegPricing":
        """From the quote prices, the pairs' tokens, the chains and the tokens."""
        prices = FeedPrices.of(frames["quote_prices"].collect())
        pools, natives = _pools(frames, prices), native_tokens(frames, prices)
        return cls(pools, natives, _Pools.of(pools, natives, prices))

    def legs(self, read: pl.LazyFrame) -> pl.LazyFrame:
        """Every swap of `read` (the lake's swaps with `leg_reads` taken) from
        its base token's side, in the order read: buy or sell, amounts, the quote's USD price,
        USD value and price, and the fee in USD.

        Each swap finds its pool by the fingerprint of (chain, pair) and its prices by
        position in the feeds' price series: no address string is joined on and no row is
        moved, and the legs stream batch by batch, each priced in one pass over the raw
        amounts as the lake holds them. The maker is kept as its fingerprint (`maker_key`),
        which is all that counting and comparing wallets needs, and no hash or address: the few
        readers that show those take them from the lake by the swap's event
        (`with_swap_strings`), so they are not written here a second time."""
        read = (read.select(*leg_reads(), ts=pl.col("block_time").dt.epoch("s"),
                            pool=lookup(pl.col("key"), self.pools["key"]))
                .filter(pl.col("pool").is_not_null())
                .with_columns(chain=lookup(pl.col("chain_id"), self.natives["chain_id"])))
        schema = read.drop(*RAW_SWAPPED, "tx_fee_raw", "pool", "chain", "key").collect_schema()
        schema.update({name: pl.Float64() for name in PRICED}
                      | {"side": pl.String(), "base_is_token0": pl.Boolean()})
        return read.map_batches(lambda batch: _legs_of(batch, self.tables), schema=schema,
                                streamable=True).select(LEG_COLUMNS)


def assemble_legs(frames: dict[str, pl.LazyFrame],
                  read: pl.LazyFrame | None = None) -> pl.LazyFrame:
    """`LegPricing.legs` of `read`, else of every swap of the lake, in the lake's order (by
    chain, then block and log)."""
    if read is None:
        read = frames["swaps"].select(**leg_reads())
    return LegPricing.of(frames).legs(read)


def assemble_liquidity_trades(frames: dict[str, pl.LazyFrame]) -> pl.DataFrame:
    """Every liquidity event as a pair trade (an add or a remove), priced at the time like the
    legs; its USD volume counts both sides of the pool."""
    prices = FeedPrices.of(frames["quote_prices"].collect())
    pairs = frames["pair_tokens"].select(*KEY, "base_is_token0", "base_decimals",
                                         "quote_decimals", "quote_feed_id")
    adds = pl.col("kind") == "mint"
    events = (frames["liquidity_events"].join(pairs, on=KEY)
              .with_columns(**{f"human{i}": pl.col(f"amount{i}").cast(pl.Float64)
                               / pl.lit(10.0).pow(pl.when(pl.col("base_is_token0") == (i == 0))
                                                  .then("base_decimals")
                                                  .otherwise("quote_decimals"))
                               for i in (0, 1)})
              .select(*KEY, "block_number", "log_index", "quote_feed_id", "base_is_token0",
                      "block_time", ts=pl.col("block_time").dt.epoch("s"), hash="tx_hash",
                      maker="owner",
                      from_address=pl.when(adds).then("owner").otherwise("pair"),
                      to_address=pl.when(adds).then("pair").otherwise("owner"),
                      tx_type=pl.when(adds).then(pl.lit("add")).otherwise(pl.lit("remove")),
                      base_amount=pl.when("base_is_token0").then("human0").otherwise("human1"),
                      quote_amount=pl.when("base_is_token0").then("human1")
                      .otherwise("human0"))
              .collect())
    return (events.with_columns(quote_usd=prices.at(prices.index(events["quote_feed_id"]),
                                                    events["ts"]))
            .with_columns(volume_usd=pl.col("quote_amount") * pl.col("quote_usd") * 2.0,
                          price_usd=pl.when(pl.col("base_amount") > 0).then(
                              pl.col("quote_amount") * pl.col("quote_usd")
                              / pl.col("base_amount")),
                          gas_used=pl.lit(None, pl.Int64), fee_usd=pl.lit(None, pl.Float64))
            .select(*KEY, "block_number", "log_index", "block_time", "ts", "hash", "maker",
                    "from_address", "to_address", "tx_type", "gas_used", "fee_usd",
                    "base_is_token0",
                    "base_amount", "quote_amount", "quote_usd", "price_usd", "volume_usd"))


def trade_rows(legs: pl.DataFrame, swaps: pl.LazyFrame, liquidity: pl.DataFrame,
               as_of: datetime) -> pl.DataFrame:
    """The pair trades the edge pages, as of the watermark like every other read: swaps (from
    the legs, with the hash, maker, sender and recipient of the lake's `swaps`) and liquidity
    trades with both tokens' amounts and prices, sorted by pair, block and log."""
    served = legs.filter(pl.col("block_time") <= as_of)
    at_ms = pl.col("block_time").dt.epoch("ms")
    events = (liquidity.filter(pl.col("block_time") <= as_of).with_columns(at_ms=at_ms)
              .drop("block_time"))
    trades = with_swap_strings(served, swaps, ("tx_hash", "maker", "sender", "recipient")).select(
        *KEY, "block_number", "log_index", "ts", "base_is_token0", "base_amount",
        "quote_amount", "quote_usd", "gas_used", "fee_usd", "price_usd", "volume_usd",
        hash="tx_hash", maker="maker", from_address="sender", to_address="recipient",
        tx_type="side", at_ms=at_ms)
    amount = _by_position("base_amount", "quote_amount")
    usd = _by_position("price_usd", "quote_usd")
    return (pl.concat([trades, events], how="diagonal_relaxed").lazy()
            .with_columns(amount0=amount["0"], amount1=amount["1"], price_usd0=usd["0"],
                          price_usd1=usd["1"])
            .with_columns(price0=pl.when(pl.col("amount0") > 0).then(
                              pl.col("amount1") / pl.col("amount0")),
                          price1=pl.when(pl.col("amount1") > 0).then(
                              pl.col("amount0") / pl.col("amount1")))
            .select(TRADE_COLUMNS)
            .sort("chain_id", "pair", "block_number", "log_index")
            .collect())

"""Pair trades (spec 2.7, 4.6): every swap of every pair from its base token's side (the legs
every market, board and wallet product reads), every liquidity event, both priced; and the
trade rows the edge pages, which the snapshot builds from the two."""

from dataclasses import dataclass

import numba
import numpy as np
import polars as pl

from assets.fingerprints import distinct, gathered, keyed, lookup
from assets.market.pair_rows import KEY
from checks.schemas.types import EVENT

TRADE_COLUMNS = ("chain_id", "pair", "block_number", "log_index", "ts", "hash", "maker",
                 "from_address", "to_address", "tx_type", "gas_used", "fee_usd", "amount0",
                 "amount1", "price0", "price1", "price_usd0", "price_usd1", "price_usd",
                 "volume_usd")
LEG_COLUMNS = ("chain_id", "block_number", "log_index", "block_time", "ts", "swap", "pair",
               "maker_key", "side", "base_is_token0", "base_amount", "quote_amount", "quote_usd",
               "volume_usd", "gas_used", "fee_usd", "price_usd")
# Legs in at most this many stretches of consecutive swaps read only those from the lake.
MAX_RUNS = 256
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

    def expr(self, feed: pl.Expr, ts: pl.Expr) -> pl.Expr:
        """`at` as an expression, row by row over any batch of rows."""
        return pl.struct(feed=feed, ts=ts).map_batches(
            lambda rows: self.at(rows.struct.field("feed"), rows.struct.field("ts")),
            return_dtype=pl.Float64, is_elementwise=True)


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


def with_swap_strings(legs: pl.DataFrame, swaps: pl.LazyFrame,
                      columns: tuple[str, ...]) -> pl.DataFrame:
    """The legs with these columns of their raw swaps (hash, maker, sender, recipient), read
    from the lake at each leg's position there (`swap`); legs made from another state of the
    lake are refused, not matched to the wrong swaps."""
    stale = ValueError("swap_legs were made from an earlier state of the lake's swaps: "
                       "materialise swap_legs again")
    runs = (legs.select(at="swap")
            .with_columns(run=(pl.col("at").diff() != 1).fill_null(True).cum_sum())
            .group_by("run", maintain_order=True).agg(start=pl.col("at").first(), rows=pl.len()))
    if runs.height <= MAX_RUNS:
        # Stretches of consecutive swaps (a chain's days, the usual case): only they are read.
        picked = pl.concat(pl.collect_all(
            [swaps.slice(start, rows).select(*EVENT, *columns)
             for start, rows in runs.select("start", "rows").iter_rows()])
            or [pl.DataFrame(schema=swaps.select(*EVENT, *columns).collect_schema())])
    else:
        raw = swaps.select(*EVENT, *columns).collect()
        if legs["swap"].max() >= raw.height:
            raise stale
        picked = raw.select(pl.all().gather(legs["swap"]))
    if not picked.select(EVENT).equals(legs.select(EVENT)):
        raise stale
    return legs.with_columns(picked.select(columns))


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


def assemble_legs(frames: dict[str, pl.LazyFrame]) -> pl.LazyFrame:
    """Every swap from its base token's side, in the lake's order (by chain, then block and
    log): buy or sell, amounts, the quote's USD price, USD value and price, and the fee in USD.

    Each swap finds its pool by the fingerprint of (chain, pair) and its prices by position in
    the feeds' price series: no address string is joined on and no row is moved, and the legs
    stream batch by batch. The maker is kept as its fingerprint (`maker_key`), which is all that
    counting and comparing wallets needs, and the swap's position in the lake (`swap`) instead
    of its hash and addresses: the few readers that show those take them from the lake
    (`with_swap_strings`), so they are not written here a second time."""
    prices = FeedPrices.of(frames["quote_prices"].collect())
    pools, natives = _pools(frames, prices), native_tokens(frames, prices)
    raw = ("amount0_in", "amount1_in", "amount0_out", "amount1_out", "tx_fee_raw")
    b0 = pl.col("base_is_token0")
    scale = {side: pl.lit(10.0).pow(pl.col(f"{side}_decimals")) for side in ("base", "quote")}
    return (frames["swaps"].with_row_index("swap")
            .select("chain_id", "block_number", "log_index", "block_time", "swap", "pair",
                    "gas_used", pl.col(raw).cast(pl.Float64), maker_key=keyed("maker"),
                    ts=pl.col("block_time").dt.epoch("s"),
                    pool=lookup(keyed(*KEY), pools["key"]))
            .filter(pl.col("pool").is_not_null())
            .with_columns(chain=lookup(pl.col("chain_id"), natives["chain_id"]))
            .with_columns(
                *[gathered(pools[c], "pool")
                  for c in ("base_is_token0", "base_decimals", "quote_decimals")],
                quote_usd=prices.expr(gathered(pools["quote_ix"], "pool"), pl.col("ts")),
                native_decimals=gathered(natives["decimals"], "chain"),
                native_usd=prices.expr(gathered(natives["native_ix"], "chain"), pl.col("ts")))
            .with_columns(
                side=pl.when(pl.when(b0).then("amount0_out").otherwise("amount1_out") > 0)
                .then(pl.lit("buy")).otherwise(pl.lit("sell")),
                base_amount=pl.when(b0).then(pl.col("amount0_in") + pl.col("amount0_out"))
                .otherwise(pl.col("amount1_in") + pl.col("amount1_out")) / scale["base"],
                quote_amount=pl.when(b0).then(pl.col("amount1_in") + pl.col("amount1_out"))
                .otherwise(pl.col("amount0_in") + pl.col("amount0_out")) / scale["quote"])
            .with_columns(volume_usd=pl.col("quote_amount") * pl.col("quote_usd"),
                          fee_usd=pl.col("tx_fee_raw") / pl.lit(10.0).pow(
                              pl.col("native_decimals")) * pl.col("native_usd"))
            .with_columns(price_usd=pl.col("volume_usd") / pl.col("base_amount"))
            .select(LEG_COLUMNS))


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
                      ts=pl.col("block_time").dt.epoch("s"), hash="tx_hash", maker="owner",
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
            .select(*KEY, "block_number", "log_index", "ts", "hash", "maker", "from_address",
                    "to_address", "tx_type", "gas_used", "fee_usd", "base_is_token0",
                    "base_amount", "quote_amount", "quote_usd", "price_usd", "volume_usd"))


def trade_rows(legs: pl.DataFrame, swaps: pl.LazyFrame, liquidity: pl.DataFrame) -> pl.DataFrame:
    """The pair trades the edge pages: swaps (from the legs, with the hash, maker, sender and
    recipient of the lake's `swaps`) and liquidity trades with both tokens' amounts and prices,
    sorted by pair, block and log."""
    swaps = with_swap_strings(legs, swaps, ("tx_hash", "maker", "sender", "recipient")).select(
        *KEY, "block_number", "log_index", "ts", "base_is_token0", "base_amount",
        "quote_amount", "quote_usd", "gas_used", "fee_usd", "price_usd", "volume_usd",
        hash="tx_hash", maker="maker", from_address="sender", to_address="recipient",
        tx_type="side")
    amount = _by_position("base_amount", "quote_amount")
    usd = _by_position("price_usd", "quote_usd")
    return (pl.concat([swaps, liquidity], how="diagonal_relaxed").lazy()
            .with_columns(amount0=amount["0"], amount1=amount["1"], price_usd0=usd["0"],
                          price_usd1=usd["1"])
            .with_columns(price0=pl.when(pl.col("amount0") > 0).then(
                              pl.col("amount1") / pl.col("amount0")),
                          price1=pl.when(pl.col("amount1") > 0).then(
                              pl.col("amount0") / pl.col("amount1")))
            .select(TRADE_COLUMNS)
            .sort("chain_id", "pair", "block_number", "log_index")
            .collect())

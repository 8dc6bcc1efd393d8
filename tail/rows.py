"""The live rows a tail carries (publish/tail.py): the window figures of every pair whose
windows moved since the snapshot and every token's row, at the tail's watermark, made once by
the tail's writer for every edge with the batch's own functions (core.windows,
core.token_market) over the snapshot's rows and the tail's swaps.

The window blocks are moved, not summed again: the snapshot's are made once per snapshot from
its makers' sums, and each tail's from them by what left each window since the snapshot's
watermark and the tail's swaps (`moved_blocks`). A pair whose windows no swap entered or left
keeps the snapshot's figures, so only the moved ones are carried."""

from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime

import numba
import numpy as np
import polars as pl

from core.fingerprints import keyed
from core.token_market import token_market
from core.vocabulary import PAIR_WINDOWS, SWAP_SIDES
from core.windows import (
    blocks_of,
    cutoffs_ms,
    filled_windows,
    left_ranges,
    maker_sums,
    moved_blocks,
    token_swaps,
    window_columns,
    window_fields,
    window_prices,
    window_ranges,
)
from core.wire import ISO, pair_status

KEY = ["chain_id", "pair"]
LONGEST_MS = max(PAIR_WINDOWS.values()) * 1000
# What token_market reads of a pair row.
PAIR_COLUMNS = ("chain_id", "pair", "ticker", "venue_id", "liquidity_usd", "created_at",
                "is_scam", "rugged", "status", "verdict", "score", "base", "quote", "base_price_usd",
                "quote_price_usd", *[f"price_change_{w}" for w in PAIR_WINDOWS])
# A token's live row: its wire parts, and its price for what is marked at it (a wallet's
# positions).
TOKEN_COLUMNS = ("chain_id", "address", "item", "market", "instances", "price_usd")
FIGURE_COLUMNS = ("chain_id", "pair", "fields", "last_trade_at", "status")
# The tables a writer reads of a snapshot to make the live rows, and what it reads of the trades.
READS = ("trades", "pairs", "token_basis")
TRADE_COLUMNS = ("chain_id", "pair", "at_ms", "volume_usd", "price_usd", "tx_type", "maker")
# A priced swap's place is its pair's ordinal shifted past any time in milliseconds (2^42 ms
# reach the year 2109), plus its time: one sorted array finds every pair's swaps by time.
SHIFT = 42


def as_swaps(trades: pl.DataFrame) -> pl.DataFrame:
    """Trade rows (the trades serving table's, or the tail's) as core.windows reads swaps: the
    maker as the batch's fingerprint of it (what the batch counts distinct)."""
    return trades.select("chain_id", "pair", "at_ms", "volume_usd", "price_usd",
                         side="tx_type", maker=keyed("maker"))


@dataclass(frozen=True)
class SwapTimeline:
    """Swaps in time order (each key's in block and log order) and their times."""

    swaps: pl.DataFrame
    at_ms: np.ndarray

    @classmethod
    def of(cls, swaps: pl.DataFrame) -> "SwapTimeline":
        """The swaps sorted by time, ties kept in their order."""
        ordered = swaps.sort("at_ms", maintain_order=True)
        return cls(ordered, ordered["at_ms"].to_numpy())

    def within(self, ranges: dict[str, tuple[int, int]]) -> pl.DataFrame:
        """The swaps in any of the (start, end] ranges, each once."""
        spans = sorted((lo, hi) for lo, hi in ranges.values() if lo < hi)
        merged: list[list[int]] = []
        for lo, hi in spans:
            if merged and lo <= merged[-1][1]:
                merged[-1][1] = max(merged[-1][1], hi)
            else:
                merged.append([lo, hi])
        cuts = [int(np.searchsorted(self.at_ms, edge, side="right")) for span in merged
                for edge in span]
        return pl.concat([self.swaps.clear(), *[self.swaps.slice(a, b - a)
                                                for a, b in zip(cuts[::2], cuts[1::2],
                                                                strict=True)]])


@dataclass(frozen=True)
class WindowBlocks:
    """Window blocks by `key` at a snapshot's watermark (`since_ms`), kept to be moved to any
    later one: the swaps the windows can still reach (`timed`), their makers' sums and the
    blocks made of them."""

    key: str
    since_ms: int
    timed: SwapTimeline
    sums: pl.DataFrame
    blocks: pl.DataFrame

    @classmethod
    def of(cls, swaps: pl.DataFrame, key: str, since_ms: int) -> "WindowBlocks":
        """From swaps keyed by `key`."""
        sums = maker_sums(swaps.lazy(), window_ranges(since_ms), key).collect()
        return cls(key, since_ms, SwapTimeline.of(swaps), sums, blocks_of(sums.lazy(), key).collect())

    def moved(self, added: pl.DataFrame, as_of_ms: int) -> tuple[pl.LazyFrame, pl.DataFrame]:
        """The blocks at `as_of_ms`, moved by what left the windows since and the swaps
        `added` (`moved_blocks`), and the keys that moved."""
        left = left_ranges(self.since_ms, as_of_ms)
        gone = self.timed.within(left)
        moved = moved_blocks(self.blocks.lazy(), self.sums.lazy(), [
            (maker_sums(gone.lazy(), left, self.key), -1),
            (maker_sums(added.lazy(), window_ranges(as_of_ms), self.key), 1)], self.key)
        keys = pl.concat([gone.select("chain_id", self.key),
                          added.select("chain_id", self.key)]).unique()
        return moved, keys


@numba.njit(cache=True, nogil=True)
def _extremes_after(group: np.ndarray, price: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """For each row, where the lowest and the highest price from it to its group's last row is
    first reached (rows in group and time order)."""
    n = len(price)
    low = np.empty(n, np.int64)
    high = np.empty(n, np.int64)
    for i in range(n - 1, -1, -1):
        if i == n - 1 or group[i + 1] != group[i]:
            low[i] = high[i] = i
            continue
        low[i] = i if price[i] <= price[low[i + 1]] else low[i + 1]
        high[i] = i if price[i] >= price[high[i + 1]] else high[i + 1]
    return low, high


@dataclass(frozen=True)
class PriceIndex:
    """Every pair's priced swaps in pair and time order, found by binary search of their
    places (`SHIFT`), with where the lowest and highest price from each swap on are first
    reached: what `window_prices` reads of a pair at any later watermark is a few of them (the
    last at or before each window's start, the first after it, the 24h range's extremes, the
    last), so it is not read over every swap again."""

    rows: pl.DataFrame
    places: np.ndarray
    ordinals: dict[tuple[int, str], int]
    low: np.ndarray
    high: np.ndarray

    @classmethod
    def of(cls, swaps: pl.DataFrame) -> "PriceIndex":
        """From swaps in time order."""
        rows = (swaps.filter(pl.col("price_usd").is_not_null(), pl.col("side").is_in(SWAP_SIDES))
                .sort("chain_id", "pair", maintain_order=True))
        new = (pl.col("chain_id") != pl.col("chain_id").shift()) | (
            pl.col("pair") != pl.col("pair").shift())
        group = rows.select(new.fill_null(True).cum_sum().cast(pl.Int64) - 1).to_series()
        firsts = rows.filter(new.fill_null(True)).select("chain_id", "pair").rows()
        places = (group.to_numpy() << SHIFT) | rows["at_ms"].to_numpy()
        low, high = _extremes_after(group.to_numpy(), rows["price_usd"].to_numpy())
        return cls(rows, places, {key: i for i, key in enumerate(firsts)}, low, high)

    def read(self, keys: list[tuple[int, str]], as_of_ms: int) -> pl.DataFrame:
        """The swaps of the pairs `keys` whose prices `window_prices` reads at `as_of_ms`, in
        pair and time order: its figures over them are its figures over all of them."""
        known = np.array([self.ordinals[k] for k in keys if k in self.ordinals], np.int64)
        if not len(known):
            return self.rows.clear()
        base = known << SHIFT
        starts = np.searchsorted(self.places, base, "left")
        ends = np.searchsorted(self.places, base + (1 << SHIFT), "left")
        picks = [ends - 1]
        for cut in [*cutoffs_ms(as_of_ms).values(), as_of_ms]:
            last = np.searchsorted(self.places, base | cut, "right") - 1
            picks += [last[last >= starts], (last + 1)[last + 1 < ends]]
        day = np.searchsorted(self.places, base | (as_of_ms - LONGEST_MS), "right")
        inside = day[day < ends]
        picks += [self.low[inside], self.high[inside]]
        return self.rows[np.unique(np.concatenate(picks))]


@dataclass(frozen=True)
class AtSnapshot:
    """What a snapshot holds that the windows can still reach, for every pair and token: the
    swaps of the longest window before its watermark and each pair's last priced swap before
    that (a window opens at the last price at or before its start), moving by pair and by
    token, the priced swaps by pair, its pair rows and its token basis."""

    pairs: WindowBlocks
    tokens: WindowBlocks
    priced: PriceIndex
    pair_rows: pl.DataFrame
    basis: pl.DataFrame

    @classmethod
    def of(cls, as_of: str, trades: Iterable[pl.DataFrame], pairs: pl.DataFrame,
           basis: pl.DataFrame) -> "AtSnapshot":
        """Made once per snapshot (watermark `as_of`) from its trades table's parts, in order
        (`TRADE_COLUMNS` of them at least: a part is read, cut to what the windows reach, and
        let go before the next), its pairs and its token basis."""
        since_ms = int(datetime.fromisoformat(as_of).timestamp() * 1000)
        start = since_ms - LONGEST_MS
        lasts, within = [], []
        # A pair's rows are in time order across the table's parts: its last priced swap before
        # the longest window is the last part's last.
        for part in trades:
            swaps = as_swaps(part)
            lasts.append(swaps.filter(pl.col("at_ms") <= start, pl.col("price_usd").is_not_null(),
                                      pl.col("side").is_in(SWAP_SIDES))
                         .group_by(KEY, maintain_order=True).last())
            within.append(swaps.filter(pl.col("at_ms") > start))
        before = pl.concat(lasts).group_by(KEY, maintain_order=True).last()
        swaps = pl.concat([before, *within])
        rows = pairs.select(PAIR_COLUMNS)
        timed = WindowBlocks.of(swaps, "pair", since_ms)
        return cls(timed, WindowBlocks.of(token_swaps(swaps.lazy(), rows.lazy()).collect(), "token",
                                          since_ms),
                   PriceIndex.of(timed.timed.swaps), rows, basis)


@dataclass(frozen=True)
class LiveRows:
    """A tail's live rows: the moved pairs' window figures (as the wire carries them) and every
    token's row."""

    pair_figures: pl.DataFrame
    tokens: pl.DataFrame

    @classmethod
    def none(cls) -> "LiveRows":
        """No live rows: the snapshot's are served."""
        return cls(pl.DataFrame(schema={"chain_id": pl.Int64, "pair": pl.String,
                                        "fields": pl.String, "last_trade_at": pl.String,
                                        "status": pl.String}),
                   pl.DataFrame(schema={"chain_id": pl.Int64, **dict.fromkeys(
                       TOKEN_COLUMNS[1:-1], pl.String), "price_usd": pl.Float64}))


def _pair_figures(at: AtSnapshot, added: pl.DataFrame, as_of_ms: int) -> pl.DataFrame:
    """The window figures of the pairs whose windows moved: their blocks moved, their prices
    over their swaps the windows reach, the tail's included."""
    blocks, keys = at.pairs.moved(added, as_of_ms)
    swaps = pl.concat([at.priced.read(keys.rows(), as_of_ms),
                       added.sort("at_ms", maintain_order=True)])
    return (keys.lazy().join(blocks, on=KEY, how="left")
            .join(window_prices(swaps.lazy(), as_of_ms), on=KEY, how="left")
            .with_columns(*filled_windows()).with_columns(**window_columns())
            .join(at.pair_rows.select(*KEY, "rugged", unresolved=pl.col("status") == "unresolved")
                  .lazy(), on=KEY, how="left")
            .select(*KEY, *[f"price_change_{w}" for w in PAIR_WINDOWS],
                    status=pair_status(pl.col("unresolved").fill_null(False),
                                       pl.col("rugged").fill_null(False), pl.col("txns_h24")),
                    fields=pl.struct([e.alias(n) for n, e in window_fields().items()])
                    .struct.json_encode(),
                    last_trade_at=pl.from_epoch("last_trade_ms", "ms").dt.strftime(ISO))
            .sort(KEY).collect())


def _live_pairs(at: AtSnapshot, state: pl.DataFrame, new_pairs: pl.DataFrame,
                figures: pl.DataFrame) -> pl.DataFrame:
    """Every pair row with its reserves valued at the tail's watermark and its live price
    changes, and the pools created since the snapshot (liquidity and swaps only: the snapshot
    has not judged their risk, so they are never the main pair unless nothing else is)."""
    valued = {"liquidity_usd": "liquidity_usd", "base_price_usd": "price_usd",
              "quote_price_usd": "quote_usd"}
    changes = [f"price_change_{w}" for w in PAIR_WINDOWS]
    rows = (at.pair_rows
            .join(state.select(*KEY, valued=pl.lit(True),
                               **{f"live_{c}": v for c, v in valued.items()}), on=KEY, how="left")
            .join(figures.select(*KEY, *[pl.col(c).alias(f"live_{c}") for c in changes]),
                  on=KEY, how="left")
            .with_columns(*[pl.when(pl.col("valued")).then(pl.col(f"live_{c}"))
                            .otherwise(pl.col(c)).alias(c) for c in valued],
                          *[pl.coalesce(f"live_{c}", c).alias(c) for c in changes])
            .select(PAIR_COLUMNS))
    created = (new_pairs.select("chain_id", "created_at", pair="address")
               .join(rows.select(KEY), on=KEY, how="anti")
               .join(state.select(*KEY, "base", "quote", "liquidity_usd",
                                  base_price_usd="price_usd", quote_price_usd="quote_usd"),
                     on=KEY)
               .with_columns(rugged=pl.lit(False)))
    return pl.concat([rows, created.cast({c: t for c, t in rows.schema.items()
                                          if c in created.columns})], how="diagonal")


def live_rows(at: AtSnapshot, trades: pl.DataFrame, state: pl.DataFrame,
              new_pairs: pl.DataFrame, feeds: pl.DataFrame, as_of: datetime) -> LiveRows:
    """The live rows at `as_of` from the snapshot's (`at`), the tail's trades past it, every
    pair's valued state (`state`, with its tokens), the pools created since and the feeds'
    prices and changes."""
    as_of_ms = int(as_of.timestamp() * 1000)
    added = as_swaps(trades).cast(at.pairs.timed.swaps.schema)
    figures = _pair_figures(at, added, as_of_ms)
    pairs = _live_pairs(at, state, new_pairs, figures)
    activity, _ = at.tokens.moved(token_swaps(added.lazy(), pairs.lazy()).collect()
                                  .cast(at.tokens.timed.swaps.schema), as_of_ms)
    tokens = token_market(at.basis.lazy(), pairs.lazy(), activity, feeds.lazy(), as_of)
    return LiveRows(figures.select(FIGURE_COLUMNS), tokens.select(TOKEN_COLUMNS).sort(
        "chain_id", "address"))

"""A pair's and a token's window figures (spec 2.3, 2.2) ending at a watermark: each window's
swaps, buys and sells, their USD volume and distinct wallets, and its price change; one
definition, called by the batch's pair and token products over every swap and by the edge over
one pair's or token's swaps and the live tail.

Swaps come as rows with `chain_id`, the key (`pair`), `at_ms` (block time in unix
milliseconds), `side` (`buy` or `sell`; other trade types are not swaps and are left out),
`maker` (any type: an address or its fingerprint), `volume_usd` and `price_usd`, each chain's
rows in block and log order."""

from collections.abc import Mapping
from datetime import datetime, timedelta
from typing import Any

import polars as pl

from core.vocabulary import PAIR_WINDOWS, SWAP_SIDES


def cutoffs_ms(as_of_ms: int) -> dict[str, int]:
    """Each pair window's start: a swap is in it when after the start and at or before the
    watermark."""
    return {w: as_of_ms - s * 1000 for w, s in PAIR_WINDOWS.items()}


def in_windows(as_of: datetime, at: str = "block_time") -> pl.Expr:
    """Whether a row (its time `at`) may be in a window ending at the watermark: after the
    longest one's start, at the same instant or later than any window counts from."""
    return pl.col(at) > as_of - timedelta(seconds=max(PAIR_WINDOWS.values()))


def window_ranges(as_of_ms: int) -> dict[str, tuple[int, int]]:
    """Each pair window ending at the watermark, as (start, end]: the swaps it counts."""
    return {w: (c, as_of_ms) for w, c in cutoffs_ms(as_of_ms).items()}


def left_ranges(since_ms: int, as_of_ms: int) -> dict[str, tuple[int, int]]:
    """What falls out of each window when the watermark moves from `since_ms` to `as_of_ms`:
    the swaps in (since - window, as_of - window], none past `since_ms`."""
    return {w: (since_ms - s * 1000, min(as_of_ms - s * 1000, since_ms))
            for w, s in PAIR_WINDOWS.items()}


MAKER_FIGURES = tuple(f"{f}_{w}" for w in PAIR_WINDOWS
                      for f in ("buys", "sells", "buy_usd", "sell_usd"))


def maker_sums(swaps: pl.LazyFrame, ranges: Mapping[str, tuple[int, int]],
               key: str = "pair") -> pl.LazyFrame:
    """Per chain, `key` and maker with a swap in any range: each window's buys, sells and their
    USD volume, counting the swaps whose `at_ms` is in that window's (start, end]. Sums of
    makers' sums over disjoint swaps are the sums over all."""
    inside = {w: (pl.col("at_ms") > lo) & (pl.col("at_ms") <= hi) for w, (lo, hi) in ranges.items()}
    buy, sell = pl.col("side") == "buy", pl.col("side") == "sell"
    usd = pl.col("volume_usd").fill_null(0.0)
    rows = swaps.filter(pl.any_horizontal(*inside.values()), pl.col("side").is_in(SWAP_SIDES))
    # Each swap's part of every figure as a column, summed per maker: plain sums, where a
    # filtered sum per figure passes over a maker's swaps once for each of the sixteen.
    return rows.select(
        "chain_id", key, "maker",
        *[figure for w in PAIR_WINDOWS for figure in (
            (inside[w] & buy).cast(pl.Int64).alias(f"buys_{w}"),
            (inside[w] & sell).cast(pl.Int64).alias(f"sells_{w}"),
            pl.when(inside[w] & buy).then(usd).otherwise(0.0).alias(f"buy_usd_{w}"),
            pl.when(inside[w] & sell).then(usd).otherwise(0.0).alias(f"sell_usd_{w}"))],
    ).group_by("chain_id", key, "maker").agg(pl.col(MAKER_FIGURES).sum())


def _signed_sums(parts: list[tuple[pl.LazyFrame, int]], by: tuple[str, ...],
                 figures: tuple[str, ...]) -> pl.LazyFrame:
    """The parts' `figures` added (sign 1) and taken away (sign -1), one row per `by`."""
    signed = pl.concat([part.select(*by, *[pl.col(c) * sign for c in figures])
                        for part, sign in parts])
    return signed.group_by(*by).agg(*[pl.col(c).sum() for c in figures])


def _exact_zeros(frame: pl.LazyFrame, pairs: list[tuple[str, str]]) -> pl.LazyFrame:
    """Each sum (second of a pair) exactly 0 where its count (first) is: what was added and
    then taken away leaves a float's rounding behind, not nothing."""
    return frame.with_columns(*[pl.when(pl.col(count) == 0).then(0.0).otherwise(pl.col(total))
                                .alias(total) for count, total in pairs])


def blocks_of(per_maker: pl.LazyFrame, key: str = "pair") -> pl.LazyFrame:
    """Per chain and `key`, every window's txns, buys, sells, buy and sell volume and distinct
    buyers, sellers and makers, from its makers' sums (`maker_sums`)."""
    count = {w: pl.col(f"buys_{w}") + pl.col(f"sells_{w}") for w in PAIR_WINDOWS}
    return per_maker.group_by("chain_id", key).agg(
        *[figure for w in PAIR_WINDOWS for figure in (
            count[w].sum().alias(f"txns_{w}"),
            pl.col(f"buys_{w}").sum(),
            pl.col(f"sells_{w}").sum(),
            (pl.col(f"buy_usd_{w}") + pl.col(f"sell_usd_{w}")).sum().alias(f"volume_{w}_usd"),
            pl.col(f"buy_usd_{w}").sum().alias(f"buy_volume_{w}_usd"),
            pl.col(f"sell_usd_{w}").sum().alias(f"sell_volume_{w}_usd"),
            (pl.col(f"buys_{w}") > 0).sum().cast(pl.Int64).alias(f"buyers_{w}"),
            (pl.col(f"sells_{w}") > 0).sum().cast(pl.Int64).alias(f"sellers_{w}"),
            (count[w] > 0).sum().cast(pl.Int64).alias(f"makers_{w}"))])


def window_blocks(swaps: pl.LazyFrame, as_of_ms: int, key: str = "pair") -> pl.LazyFrame:
    """Per chain and `key`, every window's txns, buys, sells, buy and sell volume and distinct
    buyers, sellers and makers (a key with no swap in the longest window has no row).

    Swaps are summed per maker first, so distinct wallets are plain counts of per-maker rows."""
    return blocks_of(maker_sums(swaps, window_ranges(as_of_ms), key), key)


BLOCK_FIGURES = tuple(f.format(w=w) for w in PAIR_WINDOWS for f in (
    "txns_{w}", "buys_{w}", "sells_{w}", "volume_{w}_usd", "buy_volume_{w}_usd",
    "sell_volume_{w}_usd", "buyers_{w}", "sellers_{w}", "makers_{w}"))


def moved_blocks(blocks: pl.LazyFrame, sums: pl.LazyFrame,
                 moved: list[tuple[pl.LazyFrame, int]], key: str = "pair") -> pl.LazyFrame:
    """The window blocks at a later watermark from those at an earlier one (`blocks`, made by
    `blocks_of` from the makers' sums `sums`) and the makers' sums that entered the windows
    (sign 1) or left them (sign -1) since. Every figure of a block adds up its makers' parts,
    so only the makers that moved are summed again: the block less their old part plus their
    new one."""
    makers = ("chain_id", key, "maker")
    delta = _signed_sums(moved, makers, MAKER_FIGURES)
    old = sums.join(delta.select(makers), on=list(makers), how="semi")
    new = _exact_zeros(_signed_sums([(old, 1), (delta, 1)], makers, MAKER_FIGURES), [
        (f"{count}_{w}", f"{usd}_{w}") for w in PAIR_WINDOWS
        for count, usd in (("buys", "buy_usd"), ("sells", "sell_usd"))])
    summed = _signed_sums([(blocks, 1), (blocks_of(old, key), -1), (blocks_of(new, key), 1)],
                          ("chain_id", key), BLOCK_FIGURES)
    return _exact_zeros(summed, [(f"{count}_{w}", total.format(w=w)) for w in PAIR_WINDOWS
                                 for count, total in (("txns", "volume_{w}_usd"),
                                                      ("buys", "buy_volume_{w}_usd"),
                                                      ("sells", "sell_volume_{w}_usd"))])


def seen_from_quote(side: str = "side") -> pl.Expr:
    """A swap's side (column `side`) as its pair's quote token sees it: a buy of the base sells
    the quote (the quote comes into the pool) and a sell of the base buys it."""
    return pl.col(side).replace({"buy": "sell", "sell": "buy"})


def token_swaps(swaps: pl.LazyFrame, pair_tokens: pl.LazyFrame) -> pl.LazyFrame:
    """Every swap once for its pair's base and once, sides swapped, for its quote (`token`),
    as window_blocks reads them keyed by token."""
    sided = swaps.join(pair_tokens.select("chain_id", "pair", "base", "quote"),
                       on=["chain_id", "pair"])
    return pl.concat([sided.drop("quote").rename({"base": "token"}),
                      sided.drop("base").rename({"quote": "token"})
                      .with_columns(side=seen_from_quote())])


def around(frame: pl.LazyFrame, at: str, values: tuple[str, ...], cutoffs: Mapping[str, Any],
           key: tuple[str, ...] = ("chain_id", "pair")) -> pl.LazyFrame:
    """Per key, its rows in time order: each value's last at or before every cutoff
    (`{value}_before_{name}`, null when none is) and first after it (`{value}_after_{name}`).

    The cutoffs cut time into bands and each row falls in one; the rows are folded per band
    with plain firsts and lasts, and each cutoff then picks among its key's few bands. Done
    directly, every cutoff's filtered last would be evaluated key by key over every row."""
    ordered = sorted(cutoffs.items(), key=lambda item: item[1])
    # A row's band is how many cutoffs it comes after: at or before cutoff i when band <= i.
    band = pl.sum_horizontal([(pl.col(at) > pl.lit(c)).cast(pl.Int8) for _, c in ordered])
    bands = (frame.group_by(*key, band.alias("band"))
             .agg(*[pl.col(v).last().alias(f"{v}_last") for v in values],
                  *[pl.col(v).first().alias(f"{v}_first") for v in values])
             .sort(*key, "band"))
    inside = {i: pl.col("band") <= i for i in range(len(ordered))}
    return bands.group_by(key).agg(
        *[pl.col(f"{v}_last").filter(inside[i]).last().alias(f"{v}_before_{name}")
          for v in values for i, (name, _) in enumerate(ordered)],
        *[pl.col(f"{v}_first").filter(~inside[i]).first().alias(f"{v}_after_{name}")
          for v in values for i, (name, _) in enumerate(ordered)])


def first_at(at: str, value: str, extreme: str) -> pl.Expr:
    """When `value` first reached its lowest (`extreme` "min") or highest ("max"): of several
    instants at the same extreme the earliest, so a range's instant does not depend on the order
    its rows were read in."""
    figure = pl.col(value)
    return pl.col(at).filter(figure == getattr(figure, extreme)()).min()


def window_prices(swaps: pl.LazyFrame, as_of_ms: int) -> pl.LazyFrame:
    """Per pair: the last swap price and when (`last_trade_ms`), each window's price change
    (from the price it opened at, or its first when the pair is younger), and the 24h range
    and when its low and high were first reached (in unix milliseconds)."""
    cut = cutoffs_ms(as_of_ms)
    priced = swaps.filter(pl.col("at_ms") <= as_of_ms, pl.col("price_usd").is_not_null(),
                          pl.col("side").is_in(SWAP_SIDES))
    last = around(priced, "at_ms", ("price_usd", "at_ms"), {"now": as_of_ms, **cut}).select(
        "chain_id", "pair", last_price="price_usd_before_now", last_trade_ms="at_ms_before_now",
        **{f"open_{w}": f"price_usd_before_{w}" for w in cut},
        **{f"first_{w}": f"price_usd_after_{w}" for w in cut})
    day = priced.filter(pl.col("at_ms") > cut["h24"]).group_by("chain_id", "pair").agg(
        range_low=pl.col("price_usd").min(), range_high=pl.col("price_usd").max(),
        range_low_ms=first_at("at_ms", "price_usd", "min"),
        range_high_ms=first_at("at_ms", "price_usd", "max"))
    opened = {w: pl.coalesce(f"open_{w}", f"first_{w}") for w in PAIR_WINDOWS}
    return last.join(day, on=["chain_id", "pair"], how="left").select(
        "chain_id", "pair", "last_price", "last_trade_ms", "range_low", "range_high",
        "range_low_ms", "range_high_ms",
        **{f"price_change_{w}": pl.when(o > 0).then((pl.col("last_price") / o - 1.0) * 100.0)
           .otherwise(0.0) for w, o in opened.items()})


def filled_windows() -> list[pl.Expr]:
    """A pair without swaps in a window: counts and sums of 0, a price change of 0."""
    counts = [c for w in PAIR_WINDOWS for c in (f"txns_{w}", f"buys_{w}", f"sells_{w}",
                                                f"buyers_{w}", f"sellers_{w}", f"makers_{w}")]
    sums = [c for w in PAIR_WINDOWS for c in (f"volume_{w}_usd", f"buy_volume_{w}_usd",
                                              f"sell_volume_{w}_usd", f"price_change_{w}")]
    return [*[pl.col(c).fill_null(0).cast(pl.Int64) for c in counts],
            *[pl.col(c).fill_null(0.0) for c in sums]]


def window_columns() -> dict[str, pl.Expr]:
    """Each window's `txn_{w}` and `window_{w}` blocks of the wire, from the filled figures."""
    out = {}
    for w in PAIR_WINDOWS:
        out[f"txn_{w}"] = pl.struct(
            buys=f"buys_{w}", sells=f"sells_{w}", buy_volume=f"buy_volume_{w}_usd",
            sell_volume=f"sell_volume_{w}_usd", buyers=f"buyers_{w}", sellers=f"sellers_{w}")
        out[f"window_{w}"] = pl.struct(
            price_change_pct=f"price_change_{w}", volume_usd=f"volume_{w}_usd",
            buy_volume_usd=f"buy_volume_{w}_usd", sell_volume_usd=f"sell_volume_{w}_usd",
            txns=pl.struct(buys=f"buys_{w}", sells=f"sells_{w}"), buyers=f"buyers_{w}",
            sellers=f"sellers_{w}")
    return out


def window_fields() -> dict[str, pl.Expr]:
    """The pair row's window fields as the wire carries them (`txn`, `volume`,
    `price_change`, `windows`), from `window_columns`."""
    return {"txn": pl.struct([pl.col(f"txn_{w}").alias(w) for w in PAIR_WINDOWS]),
            "volume": pl.struct([pl.col(f"volume_{w}_usd").alias(w) for w in PAIR_WINDOWS]),
            "price_change": pl.struct([pl.col(f"price_change_{w}").alias(w)
                                       for w in PAIR_WINDOWS]),
            "windows": pl.struct([pl.col(f"window_{w}").alias(w) for w in PAIR_WINDOWS])}


def as_swaps(legs: pl.LazyFrame) -> pl.LazyFrame:
    """The batch's swap legs as window_blocks and window_prices read them."""
    return legs.select("chain_id", "pair", "side", "volume_usd", "price_usd",
                       at_ms=pl.col("block_time").dt.epoch("ms"), maker="maker_key")

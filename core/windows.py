"""A pair's and a token's window figures (spec 2.3, 2.2) ending at a watermark: each window's
swaps, buys and sells, their USD volume and distinct wallets, and its price change; one
definition, called by the batch's pair and token products over every swap and by the edge over
one pair's or token's swaps and the live tail.

Swaps come as rows with `chain_id`, the key (`pair`), `at_ms` (block time in unix
milliseconds), `side` (`buy` or `sell`; other trade types are not swaps and are left out),
`maker` (any type: an address or its fingerprint), `volume_usd` and `price_usd`, each chain's
rows in block and log order."""

from collections.abc import Mapping
from typing import Any

import polars as pl

from core.vocabulary import PAIR_WINDOWS

SWAP_SIDES = ("buy", "sell")


def cutoffs_ms(as_of_ms: int) -> dict[str, int]:
    """Each pair window's start: a swap is in it when after the start and at or before the
    watermark."""
    return {w: as_of_ms - s * 1000 for w, s in PAIR_WINDOWS.items()}


def window_blocks(swaps: pl.LazyFrame, as_of_ms: int, key: str = "pair") -> pl.LazyFrame:
    """Per chain and `key`, every window's txns, buys, sells, buy and sell volume and distinct
    buyers, sellers and makers (a key with no swap in the longest window has no row).

    Swaps are summed per maker first, so distinct wallets are plain counts of per-maker rows."""
    cut = cutoffs_ms(as_of_ms)
    inside = {w: pl.col("at_ms") > c for w, c in cut.items()}
    buy, sell = pl.col("side") == "buy", pl.col("side") == "sell"
    usd = pl.col("volume_usd").fill_null(0.0)
    rows = swaps.filter(pl.col("at_ms") > min(cut.values()), pl.col("at_ms") <= as_of_ms,
                        pl.col("side").is_in(SWAP_SIDES))
    per_maker = rows.group_by("chain_id", key, "maker").agg(
        *[figure for w in PAIR_WINDOWS for figure in (
            (inside[w] & buy).sum().cast(pl.Int64).alias(f"buys_{w}"),
            (inside[w] & sell).sum().cast(pl.Int64).alias(f"sells_{w}"),
            usd.filter(inside[w] & buy).sum().alias(f"buy_usd_{w}"),
            usd.filter(inside[w] & sell).sum().alias(f"sell_usd_{w}"))])
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


def seen_from_quote() -> pl.Expr:
    """A swap's side as its pair's quote token sees it: a buy of the base sells the quote (the
    quote comes into the pool) and a sell of the base buys it."""
    return pl.col("side").replace({"buy": "sell", "sell": "buy"})


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

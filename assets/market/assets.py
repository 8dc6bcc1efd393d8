"""Market products: the lake's watermark, quote prices, priced swap legs, pair state, pair rows,
token rows and registry tokens."""

import json
from collections.abc import Iterator
from datetime import datetime, timedelta

import dagster as dg
import polars as pl

from assets.checks import as_result, checked_by_day, day_check_spec, product_asset
from assets.days import DAYS, Segment, segments
from assets.domains import HEAVY_TAG, key, keys, product_key
from assets.market.holder_sums import holder_changes
from assets.market.holders import HolderTables, holder_balances_of, holder_reads
from assets.market.pair_days import pair_day, priced_legs
from assets.market.reserves import reserve_day, reserves_at
from assets.market.token_rows import assemble_registry, assemble_tokens
from assets.market.token_rows import token_basis as token_basis_rows
from assets.tables import DAY_TABLES
from assets.warehouse import Warehouse, materialized
from checks.outcome import failed
from checks.schemas.oracle import simulated_on_a_real_lake
from core.windows import as_swaps, in_windows, token_swaps, window_blocks
from figures.pair_rows import assemble
from figures.pair_trades import (
    LegPricing,
    assemble_liquidity_trades,
    leg_reads,
)
from figures.valuation import in_tokens, liquidity, quote_price_rows, valued

GROUP = "market"
SYNC_WINDOW = timedelta(minutes=15)
WEEK = timedelta(days=7)


@dg.asset(key_prefix=GROUP, group_name=GROUP, deps=[key("heads")])
def as_of(warehouse: Warehouse) -> dg.MaterializeResult:
    """The lake's watermark: every product is computed as of this instant, not the wall clock,
    from the lake's tables at the versions pinned here (its last complete batch, whose end is
    the watermark; the last head observed, for a lake no writer marked)."""
    lake = warehouse.pin()
    latest = lake.scan("heads").select(pl.col("observed_at").max()).collect().item()
    if latest is None:
        raise dg.Failure("the lake has no heads: simulate or ingest first")
    latest = max(latest, lake.watermark or latest)
    frame = pl.DataFrame({"as_of": [latest]}).with_columns(
        lake_versions=pl.lit(json.dumps(lake.versions, sort_keys=True)),
        as_of_s=pl.col("as_of").dt.epoch("s"),
        as_of_minus_day=pl.col("as_of") - pl.duration(days=1),
        as_of_minus_sync=pl.col("as_of") - SYNC_WINDOW,
    )
    return materialized(warehouse, "as_of", frame)


REAL_PRICES = "no_simulated_price_on_a_real_lake"


@dg.asset(key_prefix=GROUP, group_name=GROUP, deps=keys("oracle_updates"), check_specs=[
    dg.AssetCheckSpec(REAL_PRICES, asset=dg.AssetKey([GROUP, "quote_prices"]), blocking=True,
                      description="A lake a real chain's follower writes holds no update of the "
                                  "simulator's price process.")])
def quote_prices(warehouse: Warehouse) -> Iterator[dg.MaterializeResult | dg.AssetCheckResult]:
    """USD price of every oracle feed at each publish time: how quote tokens are priced."""
    updates = warehouse.scan("oracle_updates")
    yield materialized(warehouse, "quote_prices", quote_price_rows(updates).collect())
    mark = warehouse.pin().progress()
    yield as_result(failed("quote_prices", REAL_PRICES, simulated_on_a_real_lake(
        mark.writer if mark is not None else None, updates)))


def _state(kept: pl.LazyFrame, suffix: str) -> pl.LazyFrame:
    return kept.select("chain_id", "pair", reserve0=f"reserve0{suffix}",
                       reserve1=f"reserve1{suffix}").drop_nulls()


@dg.asset(key_prefix=GROUP, group_name=GROUP,
          deps=keys("reserve_days", "reserves", "pair_tokens", "quote_prices", "as_of"))
def pair_state(warehouse: Warehouse) -> dg.MaterializeResult:
    """Each pair's reserves, USD price and liquidity at the watermark; its price and liquidity
    a day before and its liquidity a week before (null when the pair had no reserves then):
    the last reserves of the days before each instant and the rows of its own day."""
    return materialized(warehouse, "pair_state", pair_state_at(warehouse,
                                                                warehouse.clock()["as_of"]))


def pair_state_at(warehouse: Warehouse, at: datetime) -> pl.DataFrame:
    """The pair state as it stood at `at` (the watermark, or a season's close)."""
    at_s = int(at.timestamp())
    pairs = warehouse.scan("pair_tokens").select(
        "chain_id", "pair", "base_is_token0", "base_decimals", "quote_decimals", "quote_feed_id")
    prices = warehouse.scan("quote_prices").collect()

    def priced(state: pl.LazyFrame, ts: int, suffix: str) -> pl.LazyFrame:
        return valued(in_tokens(state, pairs), prices, ts).rename(
            lambda c: c if c in ("chain_id", "pair") else f"{c}{suffix}")

    kept = reserves_at(warehouse, {"now": at, "then": at - timedelta(days=1),
                                   "week": at - WEEK}).collect().lazy()
    now = priced(_state(kept, "_now"), at_s, "")
    then = priced(_state(kept, "_then"), at_s - 86_400, "_24h_ago")
    week = priced(_state(kept, "_week"), at_s - int(WEEK.total_seconds()), "_7d_ago")
    first = priced(_state(kept, "_first"), at_s - 86_400, "_first")
    return (now.join(then, on=["chain_id", "pair"], how="left")
            .join(week, on=["chain_id", "pair"], how="left")
            .join(first, on=["chain_id", "pair"], how="left")
            .with_columns(
                liquidity_usd=liquidity(), liquidity_usd_24h_ago=liquidity("_24h_ago"),
                liquidity_usd_7d_ago=liquidity("_7d_ago"),
                price_usd_24h_ago=pl.coalesce("price_usd_24h_ago", "price_usd_first"))
            .with_columns(price_change_24h=pl.when(pl.col("price_usd_24h_ago") > 0).then(
                (pl.col("price_usd") / pl.col("price_usd_24h_ago") - 1.0) * 100.0))
            .select("chain_id", "pair", "base_reserve", "quote_reserve", "quote_usd",
                    "price_usd", "price_usd_24h_ago", "liquidity_usd", "price_change_24h",
                    "liquidity_usd_24h_ago", "liquidity_usd_7d_ago")
            .sort("chain_id", "pair").collect())


def windowed_legs(warehouse: Warehouse, as_of: datetime) -> pl.LazyFrame:
    """The swap legs the pair windows ending at the watermark reach (`in_windows`: a filter
    on the legs' own time, which the read turns into the few day files it needs)."""
    return warehouse.scan("swap_legs").filter(in_windows(as_of))


def _ms(at: datetime) -> int:
    return int(at.timestamp() * 1000)


@dg.asset(key_prefix=GROUP, group_name=GROUP, deps=keys("swap_legs", "as_of"),
          metadata={"grain": "one row per pair with at least one swap in the longest window "
                             "(chain_id, pair)"},
          op_tags={HEAVY_TAG: "true"})
def pair_activity(warehouse: Warehouse) -> dg.MaterializeResult:
    """Each pair's window block for every pair window ending at the lake's watermark: swaps,
    buys and sells, their USD volume, and the distinct wallets that bought and sold (one
    definition with the edge's live rows: core.windows)."""
    as_of = warehouse.clock()["as_of"]
    frame = (window_blocks(as_swaps(windowed_legs(warehouse, as_of)), _ms(as_of))
             .sort("chain_id", "pair").collect())
    return materialized(warehouse, "pair_activity", frame)


@dg.asset(key_prefix=GROUP, group_name=GROUP, deps=keys("swap_legs", "pair_tokens", "as_of"),
          metadata={"grain": "one row per token with at least one swap in the longest window "
                             "(chain_id, token)"},
          op_tags={HEAVY_TAG: "true"})
def token_activity(warehouse: Warehouse) -> dg.MaterializeResult:
    """Each token's window block over all its pairs, ending at the lake's watermark: a swap
    buys the token when the token left the pool (a sell of the base buys the quote), with USD
    volume and distinct buyers, sellers and makers across pairs (one definition with the
    edge's live rows and the pairs': core.windows)."""
    as_of = warehouse.clock()["as_of"]
    swaps = token_swaps(as_swaps(windowed_legs(warehouse, as_of)), warehouse.scan("pair_tokens"))
    frame = window_blocks(swaps, _ms(as_of), key="token").sort("chain_id", "token").collect()
    return materialized(warehouse, "token_activity", frame)


PAIR_ROW_INPUTS = ("tokens", "ownership", "token_taxes", "chains", "pairs", "liquidity_events",
                   "lp_locks", "perp_markets", "perp_snapshots", "quote_prices", "pair_tokens",
                   "pair_state", "pair_activity", "pair_risk")


@product_asset(deps=keys(*PAIR_ROW_INPUTS, "reserves", "swap_legs", "pair_days", "as_of"))
def pair_rows(warehouse: Warehouse) -> dg.MaterializeResult:
    """Every pair with every block of spec 2.3, and its wire JSON (`item`)."""
    as_of = warehouse.clock()["as_of"]
    frames = warehouse.frames(PAIR_ROW_INPUTS)
    # The liquidity range reads the last day's reserves, the prices the legs since the longest
    # window's day and each pair's last before: not the days before.
    frames["reserves"] = warehouse.scan_since("reserves", as_of - timedelta(days=1))
    frames["swap_legs"] = priced_legs(warehouse, as_of)
    return materialized(warehouse, "pair_rows", assemble(frames, as_of))


LEG_INPUTS = ("swaps", "pair_tokens", "quote_prices", "chains", "tokens")
# The dated lake tables the market days are made from (the quote prices from the oracle's
# updates): their new rows say the hour a refresh makes the day again from.
MARKET_DAY_TABLES = (*DAY_TABLES, "oracle_updates")
HOLDER_INPUTS = ("tokens", "pairs", "transfers", "swaps", "liquidity_events")
LEGS, PAIR_DAYS, CHANGES, RESERVES = (product_key(name) for name in (
    "swap_legs", "pair_days", "holder_changes", "reserve_days"))


@dg.multi_asset(
    name="market_days",
    specs=[
        dg.AssetSpec(LEGS, group_name=GROUP, deps=keys(*LEG_INPUTS), description=(
            "Every swap from its base token's side: buy or sell, amounts, the quote's USD "
            "price, USD value and price, and the fee in USD; a file per lake day. A leg keeps "
            "its swap's event (chain, block, log), which finds its hash and addresses in the "
            "lake.")),
        dg.AssetSpec(PAIR_DAYS, group_name=GROUP, deps=keys(*LEG_INPUTS), description=(
            "Each pair's first swap of each lake day, and its last priced swap (side, USD "
            "price, time): what the pair rows' prices take of the days before their windows, "
            "and the rule that nothing traded before it was deployed reads.")),
        dg.AssetSpec(CHANGES, group_name=GROUP, deps=keys(*HOLDER_INPUTS, "as_of"),
                     description=(
            "What each lake day's moves (supply mints and wallet moves, swaps, liquidity "
            "added and removed) up to the watermark change of what every address holds of "
            "every token, in exact raw amounts: a file per day, which the holder balances add "
            "up. The first day takes every move before it too (tokens are minted and pools "
            "funded before their first swap).")),
        dg.AssetSpec(RESERVES, group_name=GROUP, deps=keys("reserves"), description=(
            "Each pair's first and last reserves of each lake day, the first day's earlier "
            "reserves apart (`earlier`): what the pair state's instants are read from, with "
            "the rows of each instant's own day.")),
    ],
    check_specs=[day_check_spec(name) for name in ("swap_legs", "pair_days", "holder_changes",
                                                    "reserve_days")],
    partitions_def=DAYS, backfill_policy=dg.BackfillPolicy.single_run(),
    op_tags={HEAVY_TAG: "true"}, can_subset=True)
def market_days(context: dg.AssetExecutionContext, warehouse: Warehouse):
    """The swap legs and their pairs' days, the holder changes and the reserves' summary a lake
    day at a time, each day's swaps read once for the legs and the changes (each alone can be
    asked for: the legs do not read the watermark)."""
    asked = context.selected_asset_keys
    pricing = (LegPricing.of(warehouse.frames(LEG_INPUTS)) if {LEGS, PAIR_DAYS} & asked
               else None)
    holders = (HolderTables.of(warehouse.frames(("tokens", "pairs")), warehouse.clock()["as_of"])
               if CHANGES in asked else None)
    reads = (leg_reads() if pricing is not None else {}) | (
        holder_reads() if holders is not None else {})

    def made(segment: Segment) -> dict[str, pl.DataFrame | pl.LazyFrame]:
        swaps = segment.rows(warehouse.scan_day("swaps", segment.day))
        read = swaps.select(**reads).collect() if reads else None
        frames: dict[str, pl.DataFrame | pl.LazyFrame] = {}
        if pricing is not None and read is not None:
            legs = pricing.legs(read.lazy())
            if PAIR_DAYS in asked:
                # Priced once: the segment's legs are summarised and written from one frame.
                priced = legs.collect()
                frames["pair_days"] = pair_day(read, priced)
                legs = priced.lazy()
            if LEGS in asked:
                frames["swap_legs"] = legs
        if holders is not None:
            moves = {"swaps": swaps, **{name: segment.rows(warehouse.scan_day(name, segment.day))
                                        for name in ("transfers", "liquidity_events")}}
            frames["holder_changes"] = holders.changes(moves, read)
        if RESERVES in asked:
            frames["reserve_days"] = reserve_day(
                segment.rows(warehouse.scan_day("reserves", segment.day)), segment.day)
        return frames

    run = list(segments(warehouse, [key.path[-1] for key in asked],
                        sorted(context.partition_keys), MARKET_DAY_TABLES))
    yield from checked_by_day(context, warehouse, run, made)


@product_asset(deps=keys("holder_changes", "tokens", "pairs"), heavy=True)
def holder_balances(warehouse: Warehouse) -> dg.MaterializeResult:
    """What every address holds of every token at the lake's watermark: every day's changes
    added up, the days before the last as their kept sums (pools and the mint address are not
    holders)."""
    return materialized(warehouse, "holder_balances", holder_balances_of(
        holder_changes(warehouse), warehouse.frames(("tokens", "pairs"))))


TOKEN_BASIS_INPUTS = ("tokens", "ownership", "token_taxes", "honeypot_tests", "chains",
                      "token_registry", "token_instances", "token_profiles", "holder_balances")


@product_asset(deps=keys(*TOKEN_BASIS_INPUTS))
def token_basis(warehouse: Warehouse) -> dg.MaterializeResult:
    """What each token's row takes from its contract, the registry, its profile and its
    holders: the part no trade changes, published for the edge's live token rows."""
    return materialized(warehouse, "token_basis",
                        token_basis_rows(warehouse.frames(TOKEN_BASIS_INPUTS))
                        .sort("chain_id", "address").collect())


TOKEN_ROW_INPUTS = ("token_basis", "quote_prices", "pair_rows", "token_activity")


@product_asset(deps=keys(*TOKEN_ROW_INPUTS, "as_of"))
def token_rows(warehouse: Warehouse) -> dg.MaterializeResult:
    """Every token on every chain it trades on (spec 2.2), with its verdict and wire JSON."""
    as_of = warehouse.clock()["as_of"]
    return materialized(warehouse, "token_rows",
                        assemble_tokens(warehouse.frames(TOKEN_ROW_INPUTS), as_of))


@product_asset(deps=keys("token_registry", "token_rows"))
def registry_tokens(warehouse: Warehouse) -> dg.MaterializeResult:
    """Every token the canonical registry knows, with its market block and instances."""
    return materialized(warehouse, "registry_tokens", assemble_registry(
        warehouse.scan("token_registry"), warehouse.scan("token_rows").collect()))


@product_asset(deps=keys("liquidity_events", "pair_tokens", "quote_prices"))
def liquidity_trades(warehouse: Warehouse) -> dg.MaterializeResult:
    """Every liquidity event of every pair as a priced pair trade (spec 2.7): with the swap
    legs, the trades the edge pages."""
    return materialized(warehouse, "liquidity_trades", assemble_liquidity_trades(
        warehouse.frames(("liquidity_events", "pair_tokens", "quote_prices"))))

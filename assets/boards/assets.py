"""Leaderboard products: the live board of both scopes and the season boards (the per-pair
figures they sum are SQL models)."""

from datetime import UTC, datetime

import dagster as dg
import polars as pl

from assets.boards.buyers import row_buyers
from assets.boards.closing import board_at
from assets.boards.flows import BOARD_SPAN, in_period, pair_flows, router_flows
from assets.boards.rows import BOARD_KEY, Methodology, assemble_board
from assets.boards.seasons import (
    Seasons,
    season_board,
    season_figures,
    season_liquidity,
    season_pair_flows,
)
from assets.checks import product_asset
from assets.domains import HEAVY_TAG, keys
from assets.market.reserves import day_closes
from assets.warehouse import Warehouse, materialized
from checks.schemas.boards import frozen_metrics

GROUP = "boards"
# The ranking method in force; raise the version and move `since` when the method changes.
METHODOLOGY = Methodology(version=1, since=datetime(2026, 1, 5, tzinfo=UTC))
# Weekly seasons from Monday 2026-01-05 00:00 UTC: season 1 is that week.
SEASONS = Seasons(epoch=datetime(2026, 1, 5, tzinfo=UTC), length_days=7)


def history_start(warehouse: Warehouse) -> pl.DataFrame:
    """Each chain's first indexed instant, in unix seconds: how far back the lake reaches."""
    return (warehouse.scan("heads").group_by("chain_id")
            .agg(history_start_s=pl.col("indexed_block_time").min().dt.epoch("s")).collect())


@dg.asset(key_prefix=GROUP, group_name=GROUP, deps=keys("swap_legs", "swaps", "as_of"),
          op_tags={HEAVY_TAG: "true"})
def board_router_flows(warehouse: Warehouse) -> dg.MaterializeResult:
    """Per pool, router and board period (the day to the watermark, the day before, the day a
    week before): volume, buy volume, swaps and wash volume (immediate round trips)."""
    as_of = warehouse.clock()["as_of"]
    frame = router_flows(warehouse.scan("swap_legs"),
                         warehouse.scan_since("swaps", as_of - BOARD_SPAN), as_of)
    return materialized(warehouse, "board_router_flows", frame)


@dg.asset(key_prefix=GROUP, group_name=GROUP,
          deps=keys("board_router_flows", "pair_tokens", "venues"))
def board_pair_flows(warehouse: Warehouse) -> dg.MaterializeResult:
    """Per pair and board period: volume, buy volume, swaps, wash and own volume; and the
    day's hosted volume."""
    frame = pair_flows(warehouse.scan("board_router_flows"), warehouse.scan("pair_tokens"),
                       warehouse.scan("venues"))
    return materialized(warehouse, "board_pair_flows", frame)


@dg.asset(key_prefix=GROUP, group_name=GROUP, deps=keys("swap_legs", "board_pairs", "as_of"))
def board_row_buyers(warehouse: Warehouse) -> dg.MaterializeResult:
    """Distinct wallets that bought in the day to the watermark, per protocol row and per
    chain: a wallet buying on two of a row's pools counts once."""
    day = in_period(warehouse.clock()["as_of"], "now")
    frame = row_buyers(warehouse.scan("swap_legs"), warehouse.scan("board_pairs"), day)
    return materialized(warehouse, "board_row_buyers", frame.rename({"buyers": "buyers_now"}))


@product_asset(deps=keys("board_pairs", "board_row_buyers", "board_routed", "venues",
                         "heads", "chain_records", "as_of"))
def board_rows(warehouse: Warehouse) -> dg.MaterializeResult:
    """The live board: protocol rows per chain and chain rows, ranked, with movement, growth,
    badges, and the rows it refuses to rank with their reason."""
    frames = {n: warehouse.scan(n).collect() for n in (
        "board_pairs", "board_row_buyers", "board_routed", "venues", "chain_records")}
    frame = assemble_board(frames["board_pairs"], frames["board_row_buyers"],
                           frames["board_routed"], frames["venues"], frames["chain_records"],
                           history_start(warehouse), warehouse.clock()["as_of"], METHODOLOGY)
    return materialized(warehouse, "board_rows", frame)


@product_asset(deps=keys("board_rows", "board_pairs", "swap_legs", "perp_snapshots",
                         "reserves", "pair_tokens", "quote_prices", "chain_records", "heads",
                         "as_of", "swaps", "venues", "pair_risk", "chains", "reserve_days"))
def season_boards(warehouse: Warehouse) -> dg.MaterializeResult:
    """Every season board the lake reaches: the running season's recomputed each run, a closed
    season's computed once and then carried over unchanged (the previous product is kept as
    `season_boards_before` for the check that it was)."""
    as_of = warehouse.clock()["as_of"]
    before = (warehouse.scan("season_boards").collect() if warehouse.exists("season_boards")
              else None)
    # A season frozen without its metrics at the close (by products before them) is made
    # again, once.
    frozen = (before.filter("closed", ~pl.col("season").is_in(
        before.filter("closed", ~frozen_metrics())["season"].unique().implode()))
        if before is not None else None)
    done = set(frozen["season"].unique()) if frozen is not None else set()
    reach: int = history_start(warehouse).select(pl.col("history_start_s").min()).item()
    running = SEASONS.number(as_of)
    wanted = [n for n in range(SEASONS.number(datetime.fromtimestamp(reach, UTC)),
                               running + 1)
              if n == running or n not in done]
    pairs = warehouse.scan("board_pairs").collect()
    live = warehouse.scan("board_rows").collect()
    tokens = warehouse.scan("pair_tokens").collect()
    prices = warehouse.scan("quote_prices").collect()
    minimum = warehouse.scan("chain_records").select("chain_id", "min_liquidity_usd").collect()
    legs = warehouse.scan("swap_legs")
    # Every wanted season's flows and buyers in one pass over their legs.
    first, latest = SEASONS.window(min(wanted))[0], min(SEASONS.window(running)[1], as_of)
    closes = day_closes(warehouse, latest)
    flows = season_pair_flows(legs, warehouse.scan("perp_snapshots"), SEASONS, first, latest)
    buyers = row_buyers(legs, pairs.lazy(), (pl.col("block_time") >= first)
                        & (pl.col("block_time") < latest), SEASONS.of(pl.col("block_time")))
    boards = [] if frozen is None else [frozen]
    reach_from = history_start(warehouse)
    for number in wanted:
        start, end = SEASONS.window(number)
        closed, until = end <= as_of, min(end, as_of)
        mine = pl.col("season") == number
        figures = season_figures(
            pairs, flows.filter(mine).drop("season"),
            season_liquidity(closes, tokens, prices, start, until),
            buyers.filter(mine).drop("season"), minimum, start, until)
        at_close = board_at(warehouse, end, reach_from, METHODOLOGY) if closed else None
        boards.append(season_board(live, figures, number, start, end, as_of, at_close))
    # Frozen rows keep the columns they were frozen with, which a later product may extend.
    frame = pl.concat(boards, how="diagonal_relaxed").sort("season", *BOARD_KEY, nulls_last=True)
    warehouse.write("season_boards_before", before if before is not None else frame.clear())
    return materialized(warehouse, "season_boards", frame)

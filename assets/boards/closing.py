"""The live board as it stood at an instant in the past: a season's close, where a closed
season's rows take their frozen `metrics` from. Made by the functions and SQL models the live
board is made with, each read as of that instant instead of the watermark."""

from datetime import datetime, timedelta

import polars as pl

from assets.boards.buyers import row_buyers
from assets.boards.flows import BOARD_SPAN, in_period, pair_flows, router_flows
from assets.boards.rows import Methodology, assemble_board
from assets.market.assets import pair_state_at
from assets.sql_models import load_models
from assets.warehouse import Warehouse


def clock_at(at: datetime) -> pl.DataFrame:
    """The `as_of` product's one row as it would read at `at`."""
    clock = pl.DataFrame({"as_of": [at]}).with_columns(
        as_of_s=pl.col("as_of").dt.epoch("s"),
        as_of_minus_day=pl.col("as_of") - pl.duration(days=1))
    return clock.with_columns(pl.col("as_of", "as_of_minus_day").dt.cast_time_unit("us"))


def board_at(warehouse: Warehouse, at: datetime, history_start: pl.DataFrame,
             method: Methodology) -> pl.DataFrame:
    """Every live board row (its `item` with the metrics of the 24 hours to `at`) as of `at`.
    A pair's scam verdict and a chain's state are today's: the board at a close judges the
    pairs as they are known now."""
    legs = warehouse.scan("swap_legs").filter(pl.col("block_time") <= at,
                                              pl.col("block_time") > at - timedelta(days=8))
    by_router = router_flows(legs, warehouse.scan_since("swaps", at - BOARD_SPAN), at)
    models = load_models()
    given = {"as_of": clock_at(at).lazy(), "pair_state": pair_state_at(warehouse, at).lazy(),
             "board_pair_flows": pair_flows(by_router.lazy(), warehouse.scan("pair_tokens"),
                                            warehouse.scan("venues")).lazy(),
             "board_router_flows": by_router.lazy()}

    def run(name: str) -> pl.DataFrame:
        model = models[name]
        return model.run({table: given[table] if table in given else warehouse.scan(table)
                          for table in model.tables})

    pairs = run("board_pairs")
    buyers = row_buyers(legs, pairs.lazy(), in_period(at, "now")).rename(
        {"buyers": "buyers_now"})
    return assemble_board(pairs, buyers, run("board_routed"), warehouse.scan("venues").collect(),
                          warehouse.scan("chain_records").collect(), history_start, at, method)

"""A pair's days: its first swap and last priced leg of each lake day, which price the pair
windows' opens from before the longest window and tell when a pair first traded."""

from datetime import UTC, datetime

import polars as pl

from assets.market.pair_days import PRICED, pair_day, priced_legs
from assets.warehouse import Warehouse
from checks.schemas.market import traded_before_deployed_by_day
from figures.pair_rows import window_prices
from tests.assets.swaps_lake import swaps_lake


def at(day: int, hour: int, minute: int = 0) -> datetime:
    return datetime(2026, 11, day, hour, minute, tzinfo=UTC)


def legs(rows: list[tuple[str, datetime, str, float | None]]) -> pl.DataFrame:
    """Legs of pool(s) on chain 1: (pair, time, side, USD price)."""
    return pl.DataFrame({
        "chain_id": [1] * len(rows), "pair": [r[0] for r in rows], "side": [r[2] for r in rows],
        "volume_usd": [10.0] * len(rows), "price_usd": [r[3] for r in rows],
        "block_time": pl.Series([r[1] for r in rows], dtype=pl.Datetime("us", "UTC")),
        "maker_key": list(range(len(rows)))}, schema_overrides={"price_usd": pl.Float64})


def test_a_day_keeps_its_first_swap_and_last_priced_leg() -> None:
    day = legs([("0xa", at(18, 1), "buy", 2.0), ("0xa", at(18, 5), "sell", 3.0),
                ("0xa", at(18, 9), "buy", None), ("0xb", at(18, 7), "sell", None)])
    # Pool C's only swap has no leg (its pool is unknown to the pricing): it still traded.
    swaps = pl.concat([day.select("chain_id", "pair", "block_time"), pl.DataFrame({
        "chain_id": [1], "pair": ["0xc"],
        "block_time": pl.Series([at(18, 0)], dtype=pl.Datetime("us", "UTC"))})])
    got = {row["pair"]: row for row in pair_day(swaps, day).iter_rows(named=True)}
    # By hand: A's last priced leg is the 05:00 sell (the 09:00 one has no price); B and C none.
    assert (got["0xa"]["first_swap_at"], got["0xa"]["last_trade_at"], got["0xa"]["last_side"],
            got["0xa"]["last_price_usd"]) == (at(18, 1), at(18, 5), "sell", 3.0)
    assert got["0xb"]["first_swap_at"] == at(18, 7) and got["0xb"]["last_price_usd"] is None
    assert got["0xc"]["first_swap_at"] == at(18, 0) and got["0xc"]["last_trade_at"] is None


def test_a_pair_first_traded_before_its_token_was_deployed_is_found_from_its_days() -> None:
    deployed = at(18, 12)
    tokens = pl.DataFrame({"chain_id": [1, 1], "address": ["X", "Q"],
                           "deployed_at": [deployed, at(1, 0)]})
    pairs = pl.DataFrame({"chain_id": [1, 1], "address": ["p", "r"],
                          "created_at": [at(18, 13), at(18, 13)],
                          "token0": ["X", "X"], "token1": ["Q", "Q"]})
    # p's days start after X was deployed; r's second day is fine, its first is not.
    days = pl.DataFrame({"chain_id": [1, 1, 1], "pair": ["p", "r", "r"],
                         "first_swap_at": [at(18, 14), at(19, 1), at(18, 11)]})
    broken = traded_before_deployed_by_day(tokens, pairs, days)
    assert broken["pair"].to_list() == ["r"] and broken["token"].to_list() == ["X"]


def test_the_windows_priced_from_the_days_before_are_those_of_every_leg(tmp_path) -> None:
    """Three lake days, the watermark at 06:00 on the third: pool A trades on each day, pool
    B only on the first (its price is still its last), pool C on the first and in the longest
    window (its 24h window opens at its price from the first day)."""
    rows = {"2026-11-17": [("0xa", at(17, 3), "buy", 1.0), ("0xb", at(17, 4), "buy", 5.0),
                           ("0xc", at(17, 5), "sell", 8.0), ("0xc", at(17, 6), "sell", None)],
            "2026-11-18": [("0xa", at(18, 2), "sell", 2.0), ("0xa", at(18, 9), "buy", 4.0),
                           ("0xc", at(18, 10), "buy", 10.0)],
            "2026-11-19": [("0xa", at(19, 5), "buy", 5.0)]}
    lake = swaps_lake(tmp_path / "lake", [r[1] for day in rows.values() for r in day])
    warehouse = Warehouse(lake_root=str(lake.root), root=str(tmp_path / "warehouse"))
    for day, day_rows in rows.items():
        frame = legs(day_rows)
        warehouse.write("swap_legs", frame, day)
        warehouse.write("pair_days", pair_day(frame.select("chain_id", "pair", "block_time"),
                                              frame), day)
    as_of = at(19, 6)
    got = window_prices(priced_legs(warehouse, as_of), as_of).collect()
    every = window_prices(warehouse.scan("swap_legs").select(PRICED), as_of).collect()
    assert got.sort("pair").equals(every.sort("pair"))
    prices = {row["pair"]: row for row in got.iter_rows(named=True)}
    # By hand: A's 24h window opens at the 18th 06:00 at 2.0 (its 02:00 trade) and is at 5.0
    # now: +150 %; B's last is 5.0 from the 17th, no change; C's opens at 8.0 (the 17th's last
    # priced) and is at 10.0: +25 %.
    assert prices["0xa"]["last_price"] == 5.0
    assert abs(prices["0xa"]["price_change_h24"] - 150.0) < 1e-9
    assert prices["0xb"]["last_price"] == 5.0 and prices["0xb"]["price_change_h24"] == 0.0
    assert prices["0xb"]["last_trade_at"] == at(17, 4)
    assert abs(prices["0xc"]["price_change_h24"] - 25.0) < 1e-9

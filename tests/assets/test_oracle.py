"""The oracle products' rules fail when broken: ids naming two feeds, history out of order,
updates while a market is closed or of a feed the catalog lacks."""

import polars as pl

from checks.outcome import validate
from checks.schemas.oracle import (
    OracleFeedRow,
    OracleHistoryRow,
    history_off_feed,
    history_outside_market_hours,
    simulated_on_a_real_lake,
)
from core.feeds import EQUITY_HOURS

A, B = "a" * 64, "b" * 64
ALWAYS = "America/New_York;O,O,O,O,O,O,O;"


def feeds(**change) -> pl.DataFrame:
    base = {"feed_id": [A, B], "compatible_id": ["c" * 64, None], "symbol": ["X/USD", "Y/USD"],
            "asset_type": ["Crypto", "Equity"], "schedule": [ALWAYS, EQUITY_HOURS],
            "expo": [-8, -5]}
    return pl.DataFrame({**base, **change})


def history(times: list[int], feed: str = A, expo: int = -8, source: str = "simulator",
            slots: list[int] | None = None) -> pl.DataFrame:
    n = len(times)
    return pl.DataFrame({"feed_id": [feed] * n, "publish_time": times, "price": [1] * n,
                         "conf": [0] * n, "expo": [expo] * n, "ema_price": [1] * n,
                         "ema_conf": [0] * n, "slot": slots or list(range(1, n + 1)),
                         "prev_publish_time": [t - 1 for t in times], "source": [source] * n})


def test_an_id_naming_two_feeds_fails() -> None:
    assert validate("feed_catalog", OracleFeedRow, feeds()).passed
    clash = feeds(compatible_id=["c" * 64, A])
    assert not validate("feed_catalog", OracleFeedRow, clash).passed
    broken = feeds(schedule=[ALWAYS, "Nowhere/Zone;O"])
    assert not validate("feed_catalog", OracleFeedRow, broken).passed


def test_history_out_of_publish_order_fails() -> None:
    assert validate("oracle_history", OracleHistoryRow, history([10, 20, 30])).passed
    assert not validate("oracle_history", OracleHistoryRow, history([10, 30, 20])).passed
    # Rounds one batch read share its block as their slot: only Chainlink's may.
    shared = {"slots": [5, 5, 9]}
    assert validate("oracle_history", OracleHistoryRow,
                    history([10, 20, 30], source="chainlink", **shared)).passed
    assert not validate("oracle_history", OracleHistoryRow, history([10, 20, 30], **shared)).passed
    assert not validate("oracle_history", OracleHistoryRow,
                        history([10, 20, 30], source="oracle")).passed


def test_a_real_lake_holding_a_simulated_update_fails() -> None:
    rows = pl.concat([history([10, 20], source="chainlink"), history([30], feed=B),
                      history([40], feed=B, source="peg")])
    assert simulated_on_a_real_lake("evm", rows.lazy()).rows() == [(B, 30, "simulator")]
    # The simulator's own lake, and a lake no writer marked, are not real.
    for writer in ("simulator", "live", None):
        assert simulated_on_a_real_lake(writer, rows.lazy()).is_empty()


def test_an_equity_update_on_a_saturday_fails() -> None:
    saturday_noon = 1_795_262_400  # 2026-11-21T12:00:00Z
    monday_open = 1_795_444_200    # 2026-11-23T14:30:00Z
    rows = history([saturday_noon, monday_open], feed=B, expo=-5)
    out = history_outside_market_hours(feeds(), rows)
    assert out["publish_time"].to_list() == [saturday_noon]


def test_an_update_of_an_unknown_feed_or_exponent_fails() -> None:
    rows = pl.concat([history([10]), history([10], feed="d" * 64), history([20], expo=-6)])
    assert history_off_feed(feeds(), rows)["expo"].to_list() == [-8, -6]

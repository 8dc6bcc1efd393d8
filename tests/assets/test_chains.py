"""Chain SQL models on tiny hand-made inputs."""

from datetime import UTC, datetime, timedelta

import polars as pl
import pytest

from assets.sql_models import load_models

AS_OF = datetime(2026, 11, 20, tzinfo=UTC)


@pytest.mark.parametrize("watermark", [None, AS_OF], ids=["bound_by_as_of", "bound_by_literal"])
def test_pair_activity_windows_keep_sub_second_swaps_inside_the_day(watermark) -> None:
    day_ago = AS_OF - timedelta(days=1)
    times = [day_ago, day_ago + timedelta(milliseconds=300), AS_OF - timedelta(minutes=4),
             AS_OF, AS_OF + timedelta(seconds=1)]
    legs = pl.DataFrame({
        "chain_id": [1] * 5, "pair": ["p"] * 5,
        "block_time": pl.Series(times, dtype=pl.Datetime("us", "UTC")),
        "volume_usd": [1.0, 2.0, 4.0, 8.0, 16.0],
        "maker_key": pl.Series([1, 1, 2, 1, 3], dtype=pl.UInt64),
        "side": ["buy", "buy", "sell", "buy", "sell"],
    })
    as_of = pl.DataFrame({"as_of": pl.Series([AS_OF], dtype=pl.Datetime("us", "UTC"))})
    model = load_models()["pair_activity"]
    row = model.run({"swap_legs": legs, "as_of": as_of}, watermark).row(0, named=True)
    # Known at run time, the watermark bounds the windows as literals, and no row is joined to
    # the clock.
    sql = model.render(watermark=watermark)
    assert ("TIMESTAMPTZ '2026-11-19T00:00:00+00:00'" in sql) == (watermark is not None)
    assert ("CROSS JOIN as_of" in sql) == (watermark is None)
    # Exactly a day old is out; 300 ms younger is in; after the watermark is out.
    assert (row["txns_h24"], row["volume_h24_usd"]) == (3, 14.0)
    assert (row["txns_m5"], row["volume_m5_usd"]) == (2, 12.0)
    # In the day: a bought 2 and 8, b sold 4. In five minutes: b's sale and a's second buy.
    assert (row["buys_h24"], row["sells_h24"], row["buy_volume_h24_usd"],
            row["sell_volume_h24_usd"]) == (2, 1, 10.0, 4.0)
    assert (row["buyers_h24"], row["sellers_h24"], row["makers_h24"]) == (1, 1, 2)
    assert (row["buys_m5"], row["buy_volume_m5_usd"], row["makers_m5"]) == (1, 8.0, 2)

"""Window SQL models on tiny hand-made inputs."""

from datetime import UTC, datetime, timedelta

import polars as pl
import pytest

from assets.sql_models import load_models

AS_OF = datetime(2026, 11, 20, tzinfo=UTC)


@pytest.mark.parametrize("watermark", [None, AS_OF], ids=["bound_by_as_of", "bound_by_literal"])
def test_token_activity_windows_keep_sub_second_swaps_inside_the_day(watermark) -> None:
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
    pair_tokens = pl.DataFrame({"chain_id": [1], "pair": ["p"], "base": ["b"], "quote": ["q"]})
    as_of = pl.DataFrame({"as_of": pl.Series([AS_OF], dtype=pl.Datetime("us", "UTC"))})
    model = load_models()["token_activity"]
    rows = {r["token"]: r for r in model.run(
        {"swap_legs": legs, "pair_tokens": pair_tokens, "as_of": as_of},
        watermark).iter_rows(named=True)}
    # Known at run time, the watermark bounds the windows as literals, and no row is joined to
    # the clock.
    sql = model.render(watermark=watermark)
    assert ("TIMESTAMPTZ '2026-11-19T00:00:00+00:00'" in sql) == (watermark is not None)
    assert ("CROSS JOIN as_of" in sql) == (watermark is None)
    # Exactly a day old is out; 300 ms younger is in; after the watermark is out. Maker 1
    # bought the base for 2 and 8, maker 2 sold it for 4; the quote sees the sides swapped.
    base, quote = rows["b"], rows["q"]
    assert (base["txns_h24"], base["volume_h24_usd"], base["txns_m5"]) == (3, 14.0, 2)
    assert (base["buys_h24"], base["sells_h24"], base["buy_volume_h24_usd"],
            base["sell_volume_h24_usd"]) == (2, 1, 10.0, 4.0)
    assert (base["buyers_h24"], base["sellers_h24"], base["makers_h24"]) == (1, 1, 2)
    assert (quote["buys_h24"], quote["sells_h24"], quote["buy_volume_h24_usd"]) == (1, 2, 4.0)
    assert (quote["buyers_h24"], quote["sellers_h24"]) == (1, 1)

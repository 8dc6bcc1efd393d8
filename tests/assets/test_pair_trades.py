"""Pair trades: prices found by position in the feeds' series, and trade rows from legs and
liquidity trades, by hand."""

import polars as pl
import pytest

from assets.market.pair_trades import FeedPrices, trade_rows, with_swap_strings


def test_a_price_is_the_feeds_latest_at_or_before_the_instant() -> None:
    # Feed A: 2.0 at second 100, 3.0 at 200. Feed B: 10.0 at 150.
    prices = FeedPrices.of(pl.DataFrame({"feed_id": ["A", "B", "A"], "ts": [200, 150, 100],
                                         "price_usd": [3.0, 10.0, 2.0]}))
    assert prices.index(pl.Series(["B", "A", None, "Z"])).to_list() == [1, 0, None, None]
    feed = pl.Series([0, 0, 0, 1, 1, 1, None])
    ts = pl.Series([99, 100, 250, 120, 150, 900, 300])
    # B has no price before 150, even though A's price at 100 sits just before it in the series.
    assert prices.at(feed, ts).to_list() == [None, 2.0, 3.0, None, 10.0, 10.0, None]


def test_a_price_is_found_whichever_way_the_rows_move_in_time() -> None:
    # Feed A's price is its second (0 to 99); feed B is 7.0 from second 40. Rows step forward,
    # leap far ahead, go back, pass the last price and interleave the two feeds.
    prices = FeedPrices.of(pl.DataFrame({
        "feed_id": ["A"] * 100 + ["B"], "ts": [*range(100), 40],
        "price_usd": [float(s) for s in range(100)] + [7.0]}))
    feed = pl.Series([0, 0, 1, 0, 0, 1, 0, 0, 1])
    ts = pl.Series([5, 6, 39, 80, 81, 41, 3, 500, 40])
    assert prices.at(feed, ts).to_list() == [5.0, 6.0, None, 80.0, 81.0, 7.0, 3.0, 99.0, 7.0]


def test_trade_rows_give_both_tokens_amounts_and_prices_in_pair_order() -> None:
    # Pool P's base is token1: a buy of 5 base for 10 quote at 2 USD a quote unit (4 USD a base
    # unit); an add of liquidity one block earlier.
    # The buy is the lake's second swap (position 1); the first is another pool's.
    legs = pl.DataFrame({
        "chain_id": [1], "pair": ["P"], "block_number": [2], "log_index": [0], "ts": [20],
        "swap": pl.Series([1], dtype=pl.UInt32), "base_is_token0": [False],
        "base_amount": [5.0], "quote_amount": [10.0], "quote_usd": [2.0], "gas_used": [21_000],
        "fee_usd": [0.5], "price_usd": [4.0], "volume_usd": [20.0],
        "maker_key": pl.Series([7], dtype=pl.UInt64), "side": ["buy"]})
    swaps = pl.LazyFrame({"chain_id": [1, 1], "block_number": [1, 2], "log_index": [0, 0],
                          "tx_hash": ["h0", "h2"], "maker": ["Y", "M"], "sender": ["X", "R"],
                          "recipient": ["Y", "M"]})
    liquidity = pl.DataFrame({
        "chain_id": [1], "pair": ["P"], "block_number": [1], "log_index": [3], "ts": [10],
        "hash": ["h1"], "maker": ["O"], "from_address": ["O"], "to_address": ["P"],
        "tx_type": ["add"], "gas_used": pl.Series([None], dtype=pl.Int64),
        "fee_usd": pl.Series([None], dtype=pl.Float64), "base_is_token0": [False],
        "base_amount": [1.0], "quote_amount": [4.0], "quote_usd": [2.0], "price_usd": [8.0],
        "volume_usd": [16.0]})
    add, buy = trade_rows(legs, swaps, liquidity).iter_rows(named=True)
    assert (add["tx_type"], add["hash"], buy["tx_type"], buy["hash"]) == ("add", "h1", "buy", "h2")
    assert (buy["amount0"], buy["amount1"]) == (10.0, 5.0)
    assert (buy["price0"], buy["price1"]) == (0.5, 2.0)
    assert (buy["price_usd0"], buy["price_usd1"]) == (2.0, 4.0)
    assert (buy["from_address"], buy["to_address"], buy["fee_usd"]) == ("R", "M", 0.5)
    assert (add["amount0"], add["amount1"], add["gas_used"]) == (4.0, 1.0, None)


@pytest.mark.parametrize("max_runs", [256, 1], ids=["read_by_stretch", "gathered_from_all"])
def test_legs_take_their_swaps_strings_by_position_and_refuse_another_lake(
        max_runs, monkeypatch) -> None:
    # Legs in more stretches of consecutive swaps than this are gathered from the whole lake.
    monkeypatch.setattr("assets.market.pair_trades.MAX_RUNS", max_runs)
    swaps = pl.LazyFrame({"chain_id": [1, 1, 2], "block_number": [5, 6, 5],
                          "log_index": [0, 1, 0], "tx_hash": ["a", "b", "c"]})
    legs = pl.DataFrame({"chain_id": [2, 1], "block_number": [5, 5], "log_index": [0, 0],
                         "swap": pl.Series([2, 0], dtype=pl.UInt32)})
    assert with_swap_strings(legs, swaps, ("tx_hash",))["tx_hash"].to_list() == ["c", "a"]
    stretch = pl.DataFrame({"chain_id": [1, 2], "block_number": [6, 5], "log_index": [1, 0],
                            "swap": pl.Series([1, 2], dtype=pl.UInt32)})
    assert with_swap_strings(stretch, swaps, ("tx_hash",))["tx_hash"].to_list() == ["b", "c"]
    # A swap inserted at the front of the lake since: every position now points one row early.
    moved = pl.concat([pl.LazyFrame({"chain_id": [1], "block_number": [4], "log_index": [0],
                                     "tx_hash": ["z"]}), swaps])
    for positions in (legs, stretch):
        with pytest.raises(ValueError, match="materialise swap_legs again"):
            with_swap_strings(positions, moved, ("tx_hash",))
    # A lake with fewer swaps than a leg's position.
    for positions in (legs, stretch):
        with pytest.raises(ValueError, match="materialise swap_legs again"):
            with_swap_strings(positions, swaps.head(2), ("tx_hash",))

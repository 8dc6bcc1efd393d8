"""Pair trades: prices found by position in the feeds' series, and trade rows from legs and
liquidity trades, by hand."""

from datetime import UTC, datetime

import polars as pl
import pytest

from core.columns import EVENT, RAW
from figures.pair_trades import LEG_COLUMNS, FeedPrices, assemble_legs, trade_rows, with_swap_strings


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


def at(seconds: float) -> datetime:
    return datetime.fromtimestamp(seconds, UTC)


def test_trade_rows_give_both_tokens_amounts_and_prices_in_pair_order() -> None:
    # Pool P's base is token1: a buy of 5 base for 10 quote at 2 USD a quote unit (4 USD a base
    # unit); an add of liquidity one block earlier.
    # The lake's first swap is another pool's. A sell and
    # a remove 0.4 s past the watermark (second 30) are not served yet.
    legs = pl.DataFrame({
        "chain_id": [1, 1], "pair": ["P", "P"], "block_number": [2, 3], "log_index": [0, 0],
        "block_time": [at(20), at(30.4)], "ts": [20, 30],
        "base_is_token0": [False, False],
        "base_amount": [5.0, 1.0], "quote_amount": [10.0, 2.0], "quote_usd": [2.0, 2.0],
        "gas_used": [21_000, 21_000], "fee_usd": [0.5, 0.5], "price_usd": [4.0, 4.0],
        "volume_usd": [20.0, 4.0], "maker_key": pl.Series([7, 7], dtype=pl.UInt64),
        "side": ["buy", "sell"]})
    swaps = pl.LazyFrame({"chain_id": [1, 1, 1], "block_number": [1, 2, 3],
                          "log_index": [0, 0, 0], "tx_hash": ["h0", "h2", "h3"],
                          "maker": ["Y", "M", "M"], "sender": ["X", "R", "R"],
                          "recipient": ["Y", "M", "M"]})
    liquidity = pl.DataFrame({
        "chain_id": [1, 1], "pair": ["P", "P"], "block_number": [1, 3], "log_index": [3, 1],
        "block_time": [at(10), at(30.4)], "ts": [10, 30],
        "hash": ["h1", "h4"], "maker": ["O", "O"], "from_address": ["O", "P"],
        "to_address": ["P", "O"], "tx_type": ["add", "remove"],
        "gas_used": pl.Series([None, None], dtype=pl.Int64),
        "fee_usd": pl.Series([None, None], dtype=pl.Float64), "base_is_token0": [False, False],
        "base_amount": [1.0, 1.0], "quote_amount": [4.0, 4.0], "quote_usd": [2.0, 2.0],
        "price_usd": [8.0, 8.0], "volume_usd": [16.0, 16.0]})
    add, buy = trade_rows(legs, swaps, liquidity, at(30)).iter_rows(named=True)
    assert (add["tx_type"], add["hash"], buy["tx_type"], buy["hash"]) == ("add", "h1", "buy", "h2")
    assert (buy["amount0"], buy["amount1"]) == (10.0, 5.0)
    assert (buy["price0"], buy["price1"]) == (0.5, 2.0)
    assert (buy["price_usd0"], buy["price_usd1"]) == (2.0, 4.0)
    assert (buy["from_address"], buy["to_address"], buy["fee_usd"]) == ("R", "M", 0.5)
    assert (add["amount0"], add["amount1"], add["gas_used"]) == (4.0, 1.0, None)


def test_legs_take_their_swaps_strings_by_event_wherever_the_lake_put_them() -> None:
    swaps = pl.LazyFrame({"chain_id": [1, 1, 2], "block_number": [5, 6, 5],
                          "log_index": [0, 1, 0], "tx_hash": ["a", "b", "c"]})
    legs = pl.DataFrame({"chain_id": [2, 1], "block_number": [5, 5], "log_index": [0, 0]})
    assert with_swap_strings(legs, swaps, ("tx_hash",))["tx_hash"].to_list() == ["c", "a"]
    # Swaps written since before these, on both chains, and a log of the same block: the legs
    # still find theirs.
    grown = pl.concat([pl.LazyFrame({"chain_id": [1, 2, 2], "block_number": [4, 5, 1],
                                     "log_index": [0, 3, 0], "tx_hash": ["z", "y", "x"]}),
                       swaps])
    assert with_swap_strings(legs, grown, ("tx_hash",))["tx_hash"].to_list() == ["c", "a"]
    # A lake written again without one of them is refused.
    with pytest.raises(ValueError, match="materialise swap_legs again"):
        with_swap_strings(legs, swaps.filter(pl.col("chain_id") == 1), ("tx_hash",))
    assert with_swap_strings(legs.head(0), swaps, ("tx_hash",)).columns == [*EVENT, "tx_hash"]


def _lake_swaps(rows: list[tuple]) -> pl.LazyFrame:
    """Raw swaps: (chain, block, second, pair, in0, in1, out0, out1, fee raw, maker)."""
    columns = ("chain_id", "block_number", "ts", "pair", "amount0_in", "amount1_in",
               "amount0_out", "amount1_out", "tx_fee_raw", "maker")
    frame = pl.DataFrame([dict(zip(columns, row, strict=True)) for row in rows],
                         schema_overrides={c: RAW for c in columns[4:9]})
    return frame.lazy().select(
        "chain_id", "block_number", log_index=pl.lit(0, pl.Int64),
        block_time=pl.from_epoch("ts", "s").dt.replace_time_zone("UTC"), pair="pair",
        gas_used=pl.lit(21_000, pl.Int64), **{c: c for c in columns[4:10]})


def test_legs_are_priced_from_the_raw_amounts_and_the_feeds_at_their_second() -> None:
    # Chain 1's native token N (18 decimals) costs 3,000 USD from second 0. Pool P's base is
    # token1 (18 decimals), its quote token0 (6 decimals) at 1 USD; pool Q's base is token0 and
    # its quote's feed E has no price before second 60. Chain 2 has no priced native token and
    # pool R's quote no feed. Pool Z is no known pair.
    frames = {
        "swaps": _lake_swaps([
            (1, 10, 100, "P", 10 * 10**6, 0, 0, 5 * 10**18, 2 * 10**15, "M"),
            (1, 11, 50, "Q", 300 * 10**18, 0, 0, 10**18, None, "M"),
            (1, 12, 100, "Z", 1, 0, 0, 1, 1, "M"),
            (2, 10, 100, "R", 0, 4 * 10**18, 2 * 10**18, 0, 10**18, "W")]),
        "pair_tokens": pl.LazyFrame({
            "chain_id": [1, 1, 2], "pair": ["P", "Q", "R"], "base_is_token0": [False, True, True],
            "base_decimals": [18, 18, 18], "quote_decimals": [6, 18, 18],
            "quote_feed_id": ["U", "E", None]}),
        "quote_prices": pl.LazyFrame({"feed_id": ["U", "NATIVE", "E"], "ts": [0, 0, 60],
                                      "price_usd": [1.0, 3000.0, 2.0]}),
        "chains": pl.LazyFrame({"chain_id": [1, 2], "native_token": ["N", "N2"]}),
        "tokens": pl.LazyFrame({"chain_id": [1], "address": ["N"], "decimals": [18],
                                "price_feed_id": ["NATIVE"]}),
    }
    legs = assemble_legs(frames).collect()
    assert legs.columns == list(LEG_COLUMNS)
    p, q, r = legs.iter_rows(named=True)
    # P: 10 quote paid in, 5 base out to the maker: a buy worth 10 USD, 2 USD a base unit; its
    # fee is 0.002 native at 3,000 USD.
    assert (p["chain_id"], p["block_number"], p["side"], p["base_amount"],
            p["quote_amount"]) == (1, 10, "buy", 5.0, 10.0)
    assert (p["quote_usd"], p["volume_usd"], p["price_usd"]) == (1.0, 10.0, 2.0)
    assert p["fee_usd"] == pytest.approx(6.0)
    assert p["ts"] == 100 and p["block_time"] == datetime.fromtimestamp(100, UTC)
    # Q: 300 base (past 2^64 raw) sold for 1 quote before its feed's first price: no USD, and
    # no fee without a receipt.
    assert (q["chain_id"], q["block_number"], q["side"], q["base_amount"],
            q["quote_amount"]) == (1, 11, "sell", 300.0, 1.0)
    assert (q["quote_usd"], q["volume_usd"], q["price_usd"], q["fee_usd"]) == (None,) * 4
    # R: 2 base out for 4 quote in, a buy; no quote feed and no priced native token.
    assert (r["chain_id"], r["block_number"], r["side"], r["base_amount"],
            r["quote_amount"]) == (2, 10, "buy", 2.0, 4.0)
    assert (r["quote_usd"], r["volume_usd"], r["price_usd"], r["fee_usd"]) == (None,) * 4
    assert (r["base_is_token0"], p["base_is_token0"]) == (True, False)


def test_each_chain_reads_its_own_blocks_not_the_hull_of_every_chains() -> None:
    # Chain 1's swap at block 50 cannot be read (its hash does not parse): only a read of
    # blocks 1 to 99 on chain 1, the hull of both chains' blocks, would touch it.
    raw = pl.LazyFrame({"chain_id": [1, 1, 1, 2], "block_number": [1, 2, 50, 99],
                        "log_index": [0, 0, 0, 0], "raw": ["11", "12", "x", "13"]})
    swaps = raw.with_columns(tx_hash=pl.col("raw").str.to_integer().cast(pl.String))
    legs = pl.DataFrame({"chain_id": [2, 1, 1], "block_number": [99, 1, 2],
                         "log_index": [0, 0, 0]})
    assert with_swap_strings(legs, swaps, ("tx_hash",))["tx_hash"].to_list() == ["13", "11", "12"]

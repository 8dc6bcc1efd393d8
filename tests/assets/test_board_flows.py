"""Board flows worked by hand on two interleaved pools of one chain: round trips found among a
pool's own swaps and within one period, hosted volume by the router's venue, routed volume per
aggregator, and distinct buyers per row and chain."""

from datetime import UTC, datetime, timedelta

import polars as pl
import pytest

from assets.boards.buyers import row_buyers
from assets.boards.flows import in_period, pair_flows, router_flows
from assets.sql_models import load_models

AS_OF = datetime(2026, 11, 20, tzinfo=UTC)
DAY = 86_400
# Venue dexa owns pools P1 and P2; P2 was launched on launchpad pad; agg is an aggregator.
VENUES = pl.DataFrame({"chain_id": [1, 1, 1], "venue_id": ["dexa", "pad", "agg"],
                       "router": ["RA", "RP", "RG"],
                       "category": ["dex", "launchpad", "aggregator"]})
PAIRS = pl.DataFrame({"chain_id": [1, 1], "pair": ["P1", "P2"], "venue_id": ["dexa", "dexa"],
                      "launchpad": [None, "pad"], "row_key": ["dexa", "pad"]})
# In lake order: (pool, age in seconds before the watermark, maker, side, router, USD).
SWAPS = [
    ("P1", DAY + 10, "w1", "buy", "RA", 7.0),    # the day before; its sell-back is not
    ("P1", DAY - 10, "w1", "sell", "RA", 8.0),   # in the same period: no round trip
    ("P1", 100, "w1", "buy", "RA", 10.0),        # round trip with the P1 sell below,
    ("P2", 50, "w4", "buy", "RP", 100.0),        # although w1 buys on P2 in between
    ("P2", 40, "w1", "buy", "RA", 1.0),
    ("P1", 90, "w1", "sell", "RA", 20.0),
    ("P1", 80, "w2", "buy", "RG", 40.0),         # routed in by the aggregator: hosted
    ("P2", 30, "w1", "buy", "RG", 2.0),          # hosted too
    ("P1", 70, "w3", "sell", "RA", 5.0),
    ("P2", DAY - 0.4, "w5", "sell", "RA", 0.5),  # 0.4 s into the day: in the day, as in
]                                                # the pair's h24 window


def legs() -> pl.LazyFrame:
    pool, age, maker, side, _, usd = zip(*SWAPS, strict=True)
    n = len(SWAPS)
    return pl.LazyFrame({"chain_id": [1] * n, "block_number": range(n), "log_index": [0] * n,
                         "pair": pool,
                         "block_time": [AS_OF - timedelta(seconds=a) for a in age],
                         "side": side,
                         "maker_key": pl.Series([int(m[1:]) for m in maker], dtype=pl.UInt64),
                         "volume_usd": usd})


def lake() -> pl.LazyFrame:
    """The raw swaps the legs come from, in the same order: where the routers are read."""
    n = len(SWAPS)
    return pl.LazyFrame({"chain_id": [1] * n, "block_number": range(n), "log_index": [0] * n,
                         "sender": [s[4] for s in SWAPS]})


def test_round_trips_hosted_and_own_volume_per_period() -> None:
    flows = pair_flows(router_flows(legs(), lake(), AS_OF).lazy(), PAIRS.lazy(), VENUES.lazy())
    p1, p2 = flows.sort("pair").iter_rows(named=True)
    # P1 today: 8 + 10 + 20 + 40 + 5; buys 10 + 40; wash 10 + 20; hosted 40; own the rest.
    assert (p1["volume_now"], p1["buy_volume_now"], p1["txns_now"]) == (83.0, 50.0, 5)
    assert (p1["wash_volume_now"], p1["hosted_volume_now"]) == (30.0, 40.0)
    assert p1["own_volume_now"] == pytest.approx(83 - 30 - 40)
    assert (p1["volume_d1"], p1["wash_volume_d1"], p1["own_volume_d1"]) == (7.0, 0.0, 7.0)
    assert (p1["volume_d7"], p1["txns_d7"]) == (0.0, 0)
    # P2: its launchpad's router and its venue's own router bring nothing hosted; the sell
    # 0.4 s into the day counts in it.
    assert (p2["volume_now"], p2["wash_volume_now"], p2["hosted_volume_now"]) == (103.5, 0.0, 2.0)
    assert p2["own_volume_now"] == pytest.approx(101.5) and p2["txns_now"] == 4


def test_routed_volume_is_the_aggregator_router_volume_of_the_day() -> None:
    routed = load_models()["board_routed"].run(
        {"board_router_flows": router_flows(legs(), lake(), AS_OF), "venues": VENUES})
    assert routed.rows() == [(1, "agg", 42.0, 2)]


def test_buyers_count_a_wallet_once_per_row_and_per_chain() -> None:
    day = in_period(AS_OF, "now")
    buyers = row_buyers(legs(), PAIRS.lazy(), day)
    counted = {(r["scope"], r["row_key"]): r["buyers"] for r in buyers.iter_rows(named=True)}
    # dexa: w1, w2 (w1's buy of the day before is outside); pad: w4, w1 (twice); chain: 3.
    assert counted == {("protocols", "dexa"): 2, ("protocols", "pad"): 2, ("chains", None): 3}

"""The leaderboard worked by hand on one chain of four pools: shares that leave exactly the
unnamed share, a launchpad's pool in the launchpad's row, hosted volume shown but not ranked, a
wash-dominated row refused, rank movement and growth, both withheld across a method change;
seasons numbered from their epoch and frozen once closed."""

from datetime import UTC, datetime, timedelta

import orjson
import polars as pl
import pytest

from assets.boards.rows import Methodology, assemble_board
from assets.boards.seasons import Seasons, season_item
from checks.outcome import validate
from checks.schemas.boards import (
    BoardPair,
    BoardRow,
    closed_seasons_changed,
    shares_leave_the_unnamed,
)

AS_OF = datetime(2026, 11, 19, 23, 59, tzinfo=UTC)
LONG_AGO = datetime(2026, 1, 5, tzinfo=UTC)
DAY = timedelta(days=1)


def pool(pair, row_key, category, venue, *, launchpad=None, volume=0.0, wash=0.0, hosted=0.0,
         liquidity=0.0, volume_d1=0.0, liquidity_d1=0.0) -> dict:
    """A board pair: its own volume is what is neither wash nor hosted."""
    volume, wash, hosted, volume_d1 = map(float, (volume, wash, hosted, volume_d1))
    liquidity, liquidity_d1 = float(liquidity), float(liquidity_d1)
    return {
        "chain_id": 1, "pair": pair, "row_key": row_key, "category": category,
        "row_name": row_key.upper() if row_key else None, "venue_name": venue,
        "is_perp": False, "launchpad": launchpad, "created_at": AS_OF - 30 * DAY,
        "is_new": False, "is_scam": False, "priced": True, "tradable": True,
        "liquidity_now": liquidity, "liquidity_d1": liquidity_d1, "liquidity_d7": 0.0,
        "quality_liquidity_now": liquidity,
        "volume_now": volume, "buy_volume_now": volume / 2, "txns_now": 10,
        "wash_volume_now": wash, "own_volume_now": volume - wash - hosted,
        "volume_d1": volume_d1, "buy_volume_d1": 0.0, "txns_d1": 1, "wash_volume_d1": 0.0,
        "own_volume_d1": volume_d1,
        "volume_d7": 0.0, "buy_volume_d7": 0.0, "txns_d7": 0, "wash_volume_d7": 0.0,
        "own_volume_d7": 0.0, "hosted_volume_now": hosted,
    }


PAIRS = pl.DataFrame([
    pool("p1", "dexa", "dex", "DexA", volume=100, wash=10, hosted=20, liquidity=1000,
         volume_d1=50, liquidity_d1=800),
    pool("p2", "pad", "launchpad", "DexA", launchpad="pad", volume=80, liquidity=500,
         volume_d1=10, liquidity_d1=400),
    pool("p3", None, None, None, volume=20, liquidity=500, volume_d1=5, liquidity_d1=500),
    pool("p4", "dexb", "dex", "DexB", volume=300, wash=200, liquidity=100, volume_d1=1,
         liquidity_d1=100),
])
BUYERS = pl.DataFrame({"scope": ["protocols", "protocols", "protocols", "chains"],
                       "chain_id": [1, 1, 1, 1], "row_key": ["dexa", "pad", "dexb", None],
                       "buyers_now": [7, 3, 2, 11]})
ROUTED = pl.DataFrame({"chain_id": [1], "venue_id": ["agg"], "routed_volume_now": [20.0],
                       "routed_txns_now": [4]})
VENUES = pl.DataFrame({"chain_id": [1, 1, 1, 1], "venue_id": ["dexa", "dexb", "pad", "agg"],
                       "name": ["DexA", "DexB", "Pad", "Agg"],
                       "category": ["dex", "dex", "launchpad", "aggregator"]})
CHAINS = pl.DataFrame({"chain_id": [1], "slug": ["ethereum"], "display_name": ["Ethereum"],
                       "syncing": [True], "metrics_stale": [False]})


def board(since: datetime = LONG_AGO, reach: datetime = AS_OF - 10 * DAY) -> pl.DataFrame:
    history = pl.DataFrame({"chain_id": [1], "history_start_s": [int(reach.timestamp())]})
    return assemble_board(PAIRS, BUYERS, ROUTED, VENUES, CHAINS, history, AS_OF,
                          Methodology(2, since))


def row(frame: pl.DataFrame, scope: str, key: str) -> dict:
    return frame.filter(pl.col("scope") == scope, pl.col("key") == key).row(0, named=True)


def test_shares_leave_exactly_the_unnamed_share() -> None:
    frame = board()
    # Chain volume 500 (the unnamed pool's 20 included), liquidity 2,100.
    assert row(frame, "protocols", "dexa")["volume_share"] == pytest.approx(100 / 500)
    assert row(frame, "protocols", "pad")["volume_share"] == pytest.approx(80 / 500)
    assert row(frame, "protocols", "dexb")["volume_share"] == pytest.approx(300 / 500)
    named = frame.filter(pl.col("scope") == "protocols")
    assert named["volume_share"].sum() == pytest.approx(1 - 20 / 500)
    assert named["liquidity_share"].sum() == pytest.approx(1 - 500 / 2100)
    assert row(frame, "chains", "ethereum")["volume_share"] == pytest.approx(1.0)
    assert shares_leave_the_unnamed(frame, PAIRS).is_empty()
    skewed = frame.with_columns(pl.when(pl.col("key") == "pad").then(0.2)
                                .otherwise("volume_share").alias("volume_share"))
    assert shares_leave_the_unnamed(skewed, PAIRS).height == 1


def test_launchpad_pool_counts_for_the_launchpad_and_infra_names_its_venue() -> None:
    frame = board()
    pad, dexa = row(frame, "protocols", "pad"), row(frame, "protocols", "dexa")
    assert (pad["pairs"], pad["volume_24h"], pad["category"]) == (1, 80, "launchpad")
    assert (dexa["pairs"], dexa["volume_24h"]) == (1, 100)
    assert pad["infra"] == ["DexA"]
    assert validate("board_pairs", BoardPair, PAIRS).passed
    moved = PAIRS.with_columns(row_key=pl.when(pl.col("pair") == "p2").then(pl.lit("dexa"))
                               .otherwise("row_key"))
    assert not validate("board_pairs", BoardPair, moved).passed


def test_hosted_volume_is_shown_not_ranked_and_wash_dominated_rows_are_refused() -> None:
    frame = board()
    # DexA trades 100 of which 10 wash and 20 hosted: it ranks on 70, below Pad's 80.
    assert row(frame, "protocols", "pad")["rank"] == 1
    assert row(frame, "protocols", "dexa")["rank"] == 2
    assert row(frame, "protocols", "dexa")["hosted_volume_24h"] == 20
    dexb = row(frame, "protocols", "dexb")
    assert (dexb["rank"], dexb["exclusion_reason"]) == (None, "wash_dominated")
    assert dexb["wash_rate"] == pytest.approx(200 / 300)
    agg = row(frame, "protocols", "agg")
    assert (agg["rank"], agg["exclusion_reason"], agg["category"]) == (None, "routes_only",
                                                                      "aggregator")
    assert orjson.loads(agg["item"])["dimensions"]["routed_volume_24h"] == 20
    assert row(frame, "protocols", "dexa")["buyers_24h"] == 7
    assert validate("board_rows", BoardRow, frame).passed
    swapped = frame.with_columns(rank=pl.when(pl.col("key") == "pad").then(2)
                                 .when(pl.col("key") == "dexa").then(1).otherwise("rank"))
    assert not validate("board_rows", BoardRow, swapped).passed


def test_rank_movement_and_growth_against_the_day_before() -> None:
    frame = board()
    dexa, pad = row(frame, "protocols", "dexa"), row(frame, "protocols", "pad")
    # A day ago DexA ranked first (50 against 10); now Pad does.
    assert (dexa["rank_change_24h"], pad["rank_change_24h"]) == (-1, 1)
    assert dexa["growth_24h"] == {"available": True, "volume": pytest.approx(100 / 50 - 1),
                                  "liquidity": pytest.approx(1000 / 800 - 1), "reason": ""}
    assert dexa["growth_7d"]["reason"] == "no_baseline"
    short = row(board(reach=AS_OF - DAY - timedelta(hours=1)), "protocols", "dexa")
    assert (short["growth_24h"]["reason"], short["rank_change_24h"]) == ("history_too_short", 0)


def test_growth_and_movement_withheld_across_a_method_change() -> None:
    frame = board(since=AS_OF - timedelta(hours=1))
    dexa = row(frame, "protocols", "dexa")
    assert dexa["growth_24h"] == {"available": False, "volume": 0.0, "liquidity": 0.0,
                                  "reason": "methodology_changed"}
    assert dexa["growth_7d"]["reason"] == "methodology_changed"
    assert dexa["rank_change_24h"] == 0 and dexa["methodology_version"] == 2
    assert validate("board_rows", BoardRow, frame).passed
    leaked = frame.with_columns(growth_24h=board()["growth_24h"])
    assert not validate("board_rows", BoardRow, leaked).passed


def test_seasons_count_weeks_from_their_epoch() -> None:
    seasons = Seasons(datetime(2026, 1, 5, tzinfo=UTC), 7)
    # 2026-01-05 to 2026-11-16 is 315 days, 45 weeks: the 46th season starts on the 16th.
    assert seasons.number(AS_OF) == 46
    assert seasons.window(46) == (datetime(2026, 11, 16, tzinfo=UTC),
                                  datetime(2026, 11, 23, tzinfo=UTC))
    assert seasons.number(datetime(2026, 11, 16, tzinfo=UTC) - timedelta(microseconds=1)) == 45


def test_closed_seasons_must_come_back_unchanged() -> None:
    before = pl.DataFrame({"season": [45, 46], "scope": ["chains", "chains"],
                           "board": [None, None], "key": ["ethereum", "ethereum"],
                           "rank": [1, 1], "item": [item(1), item(2)], "closed": [True, False],
                           "computed_at": [AS_OF, AS_OF]})
    moved_running = before.with_columns(item=pl.Series([item(1), item(3)]))
    assert closed_seasons_changed(before, moved_running).is_empty()
    recomputed = before.with_columns(item=pl.Series([item(9), item(2)]))
    assert closed_seasons_changed(before, recomputed).height == 1
    assert closed_seasons_changed(before, before.filter(pl.col("season") == 46)).height == 1
    # A season frozen without its metrics at the close (by earlier products) is made again.
    unfrozen = before.with_columns(item=pl.Series(['{"metrics":null}', item(2)]))
    assert closed_seasons_changed(unfrozen, recomputed).is_empty()


def item(volume: float) -> str:
    return orjson.dumps({"metrics": {"volume_24h": volume}}).decode()


def test_a_closed_season_row_carries_only_the_seasons_figures() -> None:
    live = {"key": "dex", "data_state": "live", "rank": 3, "badges": ["top_volume"],
            "dimensions": {"volume": 0.5}, "metrics": {"volume_24h": 123.0}}
    row = {"item": orjson.dumps(live).decode(), "rank": 1, "exclusion_reason": "",
           "volume": 10.0, "buy_volume": 4.0, "liquidity_last": 7.0, "liquidity_peak": 9.0,
           "quality_liquidity": 7.0, "txns": 3, "buyers": 2, "new_pairs": 1}
    at_close = {"key": "dex", "metrics": {"volume_24h": 55.0}}
    closed = orjson.loads(season_item({**row, "closing_item": orjson.dumps(at_close).decode()},
                                      True))
    running = orjson.loads(season_item(row, False))
    # Closed: the run's rolling 24h figures (123 of volume) are not the season's: its metrics
    # are the board's at the close, frozen with it.
    assert (closed["metrics"], closed["badges"], closed["dimensions"]) == (
        {"volume_24h": 55.0}, [], {})
    # A row the board did not have at the close: nothing yet, every figure 0.
    growth = {"available": True, "volume": 0.5, "liquidity": 0.1, "reason": ""}
    fresh = {**live, "metrics": {"volume_24h": 9.0, "pairs": 2, "has_capital_efficiency": True,
                                 "growth_24h": growth}}
    unseen = orjson.loads(season_item({**row, "item": orjson.dumps(fresh).decode(),
                                       "closing_item": None}, True))
    assert unseen["metrics"] == {"volume_24h": 0.0, "pairs": 0, "has_capital_efficiency": False,
                                 "growth_24h": {"available": False, "volume": 0.0,
                                                "liquidity": 0.0, "reason": "no_baseline"}}
    assert closed["data_state"] == "frozen" and closed["season_metrics"]["volume"] == 10.0
    assert running["metrics"] == {"volume_24h": 123.0} and running["data_state"] == "live"
    assert running["rank"] == 1 and running["rank_change_24h"] == 0

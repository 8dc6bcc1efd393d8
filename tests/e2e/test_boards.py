"""Leaderboards, farms and perps end to end over HTTP, checked against the raw lake: a
protocol row's pairs are the lake's pairs of its launchpad or factory, farms are the lake's
farm pools, stale farms are flagged, perp history and liquidations count the lake's rows."""

from datetime import timedelta

import orjson
import polars as pl

from tests.e2e.test_live import _differences
from tests.e2e.test_market import walk


def test_protocol_rows_hold_the_lake_pairs_of_their_launchpad_or_factory(api, lake) -> None:
    board = api.get("/leaderboard", params={"scope": "protocols", "chain": "ethereum",
                                            "limit": 200}).json()
    rows = board["items"] + board["excluded"]
    assert [r["rank"] for r in board["items"]] == list(range(1, len(board["items"]) + 1))
    assert board["population"] == len(board["items"])
    pairs = lake.scan("pairs").filter(pl.col("chain_id") == 1).collect()
    venues = lake.scan("venues").filter(pl.col("chain_id") == 1).collect()
    factory_of = dict(zip(venues["venue_id"], venues["factory"], strict=True))
    for row in rows:
        if row["category"] == "aggregator":
            assert row["metrics"]["pairs"] == 0 and row["exclusion_reason"] == "routes_only"
            continue
        mine = pairs.filter(pl.col("launchpad") == row["key"]) if row["category"] == "launchpad" \
            else pairs.filter(pl.col("launchpad").is_null(),
                              pl.col("factory") == factory_of[row["key"]])
        assert row["metrics"]["pairs"] == mine.height, row["key"]
    named = sum(r["metrics"]["volume_share"] for r in rows)
    assert 0 < named <= 1 + 1e-9
    chains = api.get("/leaderboard", params={"scope": "chains"}).json()
    ethereum = next(r for r in chains["items"] + chains["excluded"] if r["key"] == "ethereum")
    assert ethereum["metrics"]["pairs"] == pairs.height


def test_board_parameters_and_seasons(api) -> None:
    wrong = api.get("/leaderboard", params={"scope": "protocols"})
    assert wrong.status_code == 400 and wrong.json()["param"] == "chain"
    assert api.get("/leaderboard", params={"scope": "chains", "limit": 201}).status_code == 400
    assert api.get("/leaderboard", params={"scope": "chains", "season": 3}).json()["param"] \
        == "season"
    live = api.get("/leaderboard", params={"scope": "chains", "limit": 1}).json()
    assert len(live["items"]) == 1 and live["season"]["live"]
    season = api.get("/leaderboard", params={"scope": "chains", "seasonal": "true"}).json()
    assert season["season"]["number"] == live["season"]["latest"]
    assert all(r["season_metrics"]["volume"] >= 0 for r in season["items"])
    gone = api.get("/leaderboard", params={"scope": "chains", "seasonal": "true", "season": 1})
    assert gone.status_code == 404
    narrowed = api.get("/leaderboard", params={"scope": "chains", "chains": "ethereum"}).json()
    assert {r["chain"]["slug"] for r in narrowed["items"] + narrowed["excluded"]} == {"ethereum"}


def test_farms_are_the_lake_farm_pools_and_stale_ones_say_so(api, lake) -> None:
    observed = lake.scan("farm_pools").collect()
    as_of = lake.progress().watermark
    farms = walk(api, "/farms")
    assert len(farms) == observed.select("chain_id", "farm_address", "pid").unique().height
    latest = observed.group_by("chain_id", "farm_address", "pid").agg(pl.col("observed_at").max())
    stale = {(r["farm_address"], r["pid"]) for r in latest.iter_rows(named=True)
             if r["observed_at"] < as_of - timedelta(hours=2)}
    assert stale, "the simulator stops one farm's observations"
    for farm in farms:
        flagged = farm["lifecycle_state"] == "stale"
        assert flagged == ((farm["address"], farm["pid"]) in stale)
        assert flagged == ("stale_observation" in farm["data_quality_flags"])
        if farm["status"] == "unverified":
            assert farm["lifecycle_state"] != "earning"
    slugs = [f["network"]["slug"] for f in farms]
    assert slugs == sorted(slugs, key=slugs.index)  # grouped chain by chain


def test_farm_pages_merge_chains_and_the_detail_tells_absent_from_empty(api) -> None:
    merged = api.get("/farms", params={"chains": "tron,ethereum", "sort": "apr",
                                       "limit": 3}).json()
    assert "prev_cursor" not in merged
    one = api.get("/farms", params={"chains": "ethereum", "limit": 2}).json()
    following = api.get("/farms", params={"chains": "ethereum", "limit": 2,
                                          "cursor": one["next_cursor"]}).json()
    assert following["prev_cursor"] is not None
    tvls = [float(f["tvl"]) for f in walk(api, "/farms", chains="ethereum", sort="tvl")
            if f["tvl"] is not None]
    assert tvls == sorted(tvls, reverse=True)
    idle = next(f for f in walk(api, "/farms", chains="ethereum")
                if "nothing_staked" in f["data_quality_flags"])
    detail = api.get(f"/chains/ethereum/farms/{idle['address']}", params={"pid": idle["pid"]})
    assert detail.status_code == 200 and detail.json()["tvl"] == "0.00"
    absent = api.get("/chains/ethereum/farms/0x" + "ab" * 20)
    assert absent.status_code == 404 and absent.json()["code"] == "not_found"


def test_perps_history_and_liquidations_count_the_lake(api, lake) -> None:
    markets = walk(api, "/perps")
    assert len(markets) == lake.scan("perp_markets").collect().height
    market = markets[0]["pair_address"]
    snaps = lake.scan("perp_snapshots").filter(pl.col("market") == market).collect()
    history = api.get(f"/perps/{market}/history", params={"interval": "5m", "from": 0}).json()
    assert len(history["items"]) == snaps.height
    unobserved = snaps["oi_long_usd"].null_count()
    blind = [p for p in history["items"] if not p["oi_known"]]
    assert len(blind) == unobserved and all(p["oi_usd"] is None for p in blind)
    days = api.get("/perps/liquidations", params={"from": 0}).json()
    assert days["market"] is None and days["stale"] is True
    counted = sum(d["long_count"] + d["short_count"] for d in days["items"])
    assert counted == lake.scan("liquidations").collect().height
    # Bounds past the calendar's end are valid 64-bit seconds: no days there, not an error.
    far = api.get("/perps/liquidations", params={"from": 2**62, "to": 2**63 - 1})
    assert far.status_code == 200 and far.json()["items"] == []
    assert api.get("/perps/0x" + "cd" * 20 + "/history").status_code == 404


def test_the_board_at_an_instant_is_the_live_board_made_at_that_instant(home) -> None:
    """A closed season's metrics come from the board as it stood at the close (`board_at`):
    made at the watermark, it is the live board the run made, row for row."""
    from assets.boards.assets import METHODOLOGY, history_start
    from assets.boards.closing import board_at
    from assets.boards.rows import BOARD_KEY
    from assets.warehouse import Warehouse

    warehouse = Warehouse(root=str(home / "warehouse"), lake_root=str(home / "lake"))
    as_of = warehouse.clock()["as_of"]
    made = board_at(warehouse, as_of, history_start(warehouse), METHODOLOGY).sort(BOARD_KEY)
    live = warehouse.scan("board_rows").collect().sort(BOARD_KEY)
    assert made.select(BOARD_KEY).equals(live.select(BOARD_KEY))
    # The same rows, their floats summed in another order (to 1e-9 relative).
    for one, other in zip(made["item"], live["item"], strict=True):
        assert _differences(orjson.loads(one), orjson.loads(other)) == []
    # A day earlier the board is another: the day's figures moved.
    earlier = board_at(warehouse, as_of - timedelta(hours=6), history_start(warehouse),
                       METHODOLOGY).sort(BOARD_KEY)
    assert not earlier.select("item").equals(live.select("item"))

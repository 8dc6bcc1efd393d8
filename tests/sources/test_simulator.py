import hashlib
from datetime import timedelta
from pathlib import Path

import numpy as np
import polars as pl
import pytest

from sources.lake import LakeWriter
from sources.simulator import SimulationConfig, market, oracle, simulate
from sources.simulator.amm import k_holds
from sources.simulator.events import EventColumns
from sources.simulator.world import ARCHETYPES, CHAIN_TEMPLATES, build_chain
from tests.conftest import SMALL


def digests(lake: LakeWriter) -> dict[str, list[str]]:
    """Each partition's data files by content (Delta names files by a random id)."""
    found: dict[str, list[str]] = {}
    for name in lake.tables():
        for file in lake.files(name):
            path = Path(file)
            found.setdefault(path.parent.relative_to(lake.root).as_posix(), []).append(
                hashlib.sha256(path.read_bytes()).hexdigest())
    return found


def test_the_same_seed_writes_the_same_lake_and_another_seed_does_not(tmp_path):
    config = SimulationConfig(chains=4, days=1, swaps=2_000, seed=11, end=SMALL.end)
    a, b, c = LakeWriter(tmp_path / "a"), LakeWriter(tmp_path / "b"), LakeWriter(tmp_path / "c")
    simulate(config, a)
    simulate(config, b)
    simulate(SimulationConfig(chains=4, days=1, swaps=2_000, seed=12, end=SMALL.end), c)
    assert digests(a) == digests(b)
    assert digests(a) != digests(c)


def test_every_swap_keeps_x_times_y_after_fees(small_lake):
    reserves = small_lake.read("reserves").sort("chain_id", "block_number", "log_index")
    swaps = small_lake.read("swaps").select("chain_id", "tx_hash", "pair", "amount0_in",
                                            "amount1_in", "amount0_out", "amount1_out")
    fees = small_lake.read("pairs").select("chain_id", pair="address", fee="fee_bps")
    after = reserves.with_columns(
        before0=pl.col("reserve0").shift(1).over("chain_id", "pair"),
        before1=pl.col("reserve1").shift(1).over("chain_id", "pair"))
    joined = swaps.join(after, on=["chain_id", "tx_hash", "pair"]).join(fees, on=["chain_id", "pair"])
    assert joined.height == swaps.height > 5_000
    for r in joined.iter_rows(named=True):
        a0i, a1i, a0o, a1o = (int(r[k]) for k in ("amount0_in", "amount1_in", "amount0_out",
                                                   "amount1_out"))
        b0, b1 = int(r["before0"]), int(r["before1"])
        assert int(r["reserve0"]) == b0 + a0i - a0o and int(r["reserve1"]) == b1 + a1i - a1o
        if a0i:
            assert k_holds(b0, b1, a0i, a1o, r["fee"])
        else:
            assert k_holds(b1, b0, a1i, a0o, r["fee"])


def test_every_wallet_archetype_trades(small_lake):
    rng = np.random.default_rng(5)
    end = SMALL.end
    start = end - timedelta(days=2)
    world = build_chain(CHAIN_TEMPLATES[0], "live", start, end, 8_000, rng)
    book = oracle.PriceBook(start, end)
    events = EventColumns()
    market.deployments(world, events)
    spot = market.Market(world, 8_000, rng, book.quote_usd, events)
    for span in range(spot.spans):
        spot.trade(span)
    makers = set(events.columns["swaps"]["maker"])
    recipients = set(events.columns["transfers"]["to_address"])
    for archetype in ARCHETYPES:
        group = set(world.wallets.by_archetype[archetype])
        if archetype == "transfer_only":
            assert group & recipients and not group & makers
        else:
            assert group & makers, archetype
    assert set(world.wallets.rug_deployers) & {p for p in events.columns["liquidity_events"]["owner"]}


def test_bots_and_wash_traders_round_trip_in_the_next_swap(small_lake):
    legs = (small_lake.read("swaps").sort("chain_id", "pair", "block_number", "log_index")
            .with_columns(next_maker=pl.col("maker").shift(-1).over("chain_id", "pair"),
                          buy0=pl.col("amount1_in") > 0,
                          next_buy0=(pl.col("amount1_in") > 0).shift(-1).over("chain_id", "pair")))
    round_trips = legs.filter((pl.col("maker") == pl.col("next_maker"))
                              & (pl.col("buy0") != pl.col("next_buy0")))
    assert round_trips.height > 50


def test_edge_cases_are_present(small_lake):
    tokens = small_lake.read("tokens")
    pairs = small_lake.read("pairs")
    venues = small_lake.read("venues")
    quotes = tokens.filter(pl.col("is_quote")).select("chain_id", "address")
    unpriceable = (pairs.filter(~pl.col("is_perp"))
                   .join(quotes.rename({"address": "token0"}), on=["chain_id", "token0"], how="anti")
                   .join(quotes.rename({"address": "token1"}), on=["chain_id", "token1"], how="anti"))
    assert unpriceable.height > 0, "tokens nobody can price"
    unnamed = pairs.join(venues, on=["chain_id", "factory"], how="anti")
    assert unnamed.height > 0, "pools nobody can name"
    assert tokens.filter(pl.col("status").is_in([999, 1000])).height > 0, "blocked tokens"
    assert tokens.filter(pl.col("honeypot_test") == "fail").height > 0, "honeypots"
    migrated = pairs.filter(pl.col("migrated_pool").is_not_null())
    assert migrated.join(pairs.select("chain_id", migrated_pool="address"),
                         on=["chain_id", "migrated_pool"]).height > 0, "launchpad migrations"
    locks = small_lake.read("lp_locks")
    assert set(locks["kind"]) == {"lock", "burn"}
    snaps = small_lake.read("perp_snapshots")
    assert snaps.filter(pl.col("oi_long_usd").is_null()).height > 0, "perps with OI gaps"
    end = SMALL.end
    beats = small_lake.read("liquidation_heartbeats")["observed_at"].max()
    assert beats < end - timedelta(hours=24), "a liquidation feed that stops"
    farms = small_lake.read("farm_pools")
    assert not farms.filter(~pl.col("verified")).is_empty(), "unverified farms"
    last = farms.group_by("farm_address").agg(pl.col("observed_at").max())["observed_at"]
    assert last.min() < end - timedelta(hours=20), "stale farm observations"


@pytest.mark.parametrize(("slug", "lag_s", "frozen"), [("tron", 240, False), ("sui", None, True)])
def test_one_chain_lags_and_one_stops_syncing(small_lake, slug, lag_s, frozen):
    chains = small_lake.read("chains")
    chain_id = chains.filter(pl.col("slug") == slug)["chain_id"].item()
    heads = small_lake.read("heads").filter(pl.col("chain_id") == chain_id).sort("observed_at")
    last_hour = heads.tail(60)
    lag = (last_hour["head_block_time"] - last_hour["indexed_block_time"]).dt.total_seconds()
    if frozen:
        assert last_hour["indexed_block"].n_unique() == 1
        assert lag.min() > 3_600
    else:
        assert last_hour["indexed_block"].n_unique() > 1
        assert abs(lag.median() - lag_s) <= 6


def test_addresses_follow_each_chain_format(small_lake):
    pairs = small_lake.read("pairs").join(small_lake.read("chains"), on="chain_id")
    patterns = {"evm": r"^0x[0-9a-f]{40}$", "hex32": r"^0x[0-9a-f]{64}$",
                "base58": r"^[1-9A-HJ-NP-Za-km-z]{32,44}$", "base58check": r"^T[1-9A-HJ-NP-Za-km-z]{33}$"}
    for fmt, pattern in patterns.items():
        subset = pairs.filter(pl.col("address_format") == fmt)
        assert subset.height > 0 and subset["address"].str.contains(pattern).all(), fmt


def test_every_wallet_is_funded_before_its_first_trade(small_lake):
    natives = small_lake.read("chains").select("chain_id", token="native_token")
    funded = (small_lake.read("transfers").join(natives, on=["chain_id", "token"])
              .group_by("chain_id", wallet="to_address").agg(funded=pl.col("block_time").min()))
    first = small_lake.read("swaps").group_by("chain_id", wallet="maker").agg(
        traded=pl.col("block_time").min())
    both = first.join(funded, on=["chain_id", "wallet"], how="left")
    assert both.height > 100
    assert both.filter(pl.col("funded").is_null() | (pl.col("funded") > pl.col("traded"))
                       ).is_empty()


def test_the_history_is_written_a_day_at_a_time_and_the_days_meet_without_gap(small_lake):
    # Two days in pieces of a day each: the blocks of each chain's swaps and reserves are
    # unique, and the day's turn splits no block.
    for name in ("swaps", "reserves", "blocks"):
        frame = small_lake.read(name)
        key = ["chain_id", "block_number"] + (["log_index"] if name != "blocks" else [])
        assert frame.select(key).is_unique().all(), name
    blocks = small_lake.read("blocks")
    counted = pl.concat([small_lake.read(n).select("chain_id", "block_number")
                         for n in ("swaps", "reserves", "transfers", "liquidity_events")]
                        ).group_by("chain_id", "block_number").len()
    joined = counted.join(blocks, on=["chain_id", "block_number"], how="left")
    # Every block's log count covers its logs of these tables (a block's events were placed
    # together, never split between two days' pieces).
    assert joined.filter(pl.col("log_count").is_null() | (pl.col("log_count") < pl.col("len"))
                         ).is_empty()
    assert small_lake.read("swaps")["block_time"].dt.date().n_unique() >= 2


def test_a_migration_deposits_what_the_launchpads_router_withdrew(small_lake):
    """The curve's reserves are withdrawn and deposited by one router: no token is held twice
    (by the router and by the new pool)."""
    pairs = small_lake.read("pairs")
    events = small_lake.read("liquidity_events")
    moves = pairs.filter(pl.col("migrated_pool").is_not_null(),
                         pl.col("launchpad_stage") == "migrated",
                         pl.col("factory_type") == "bonding_curve").select(
        "chain_id", curve="address", pool="migrated_pool")
    burns = events.filter(pl.col("kind") == "burn").select(
        "chain_id", curve="pair", burnt_by="owner", burnt="amount0", burnt1="amount1")
    mints = events.filter(pl.col("kind") == "mint").select(
        "chain_id", pool="pair", minted_by="owner", minted="amount0", minted1="amount1")
    both = moves.join(burns, on=["chain_id", "curve"]).join(mints, on=["chain_id", "pool"])
    assert both.height == moves.height > 0
    assert (both["burnt_by"] == both["minted_by"]).all()
    # The base side moves whole (the quote less the launchpad's 5 %): one of the two amounts.
    assert ((both["burnt"] == both["minted"]) | (both["burnt1"] == both["minted1"])).all()


def test_a_new_pools_snipers_buy_in_its_first_blocks(small_lake):
    """Snipers buy a new pool's first swaps in its own block and the two after it."""
    pairs = small_lake.read("pairs").select("chain_id", "created_block", "token0", pair="address")
    first = (small_lake.read("swaps").sort("block_number", "log_index")
             .group_by("chain_id", "pair", maintain_order=True).first()
             .join(pairs, on=["chain_id", "pair"]))
    sniped = first.filter(pl.col("block_number") < pl.col("created_block") + 3)
    assert sniped.height > 0
    assert (sniped["block_number"] >= sniped["created_block"]).all()

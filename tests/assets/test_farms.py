"""Farm rows worked by hand: TVL as the staked share of the pool, the reward APR from the
reward token's price, an idle farm, an unverified farm that is never a confirmed yield, a stale
farm that is never shown as fresh, and a pool nobody could price."""

from datetime import UTC, datetime, timedelta
from decimal import Decimal

import orjson
import polars as pl
import pytest

from assets.farms.rows import assemble_farms
from checks.outcome import validate
from checks.schemas.farms import FarmRow, stale_shown_fresh

AS_OF = datetime(2026, 11, 19, 23, 59, tzinfo=UTC)
HOUR = timedelta(hours=1)


def observation(farm: str, pid: int, lp: str, staked: int, *, verified: bool = True,
                age: timedelta = HOUR) -> dict:
    return {"chain_id": 1, "farm_address": farm, "pid": pid, "lp_token": lp,
            "reward_token": "0xreward", "reward_per_second_raw": Decimal(10**15),
            "staked_raw": Decimal(staked), "factory": "0xfactory", "verified": verified,
            "observed_at": AS_OF - age}


OBSERVATIONS = pl.DataFrame([
    observation("0xf", 0, "0xpool", 25, age=2 * HOUR),
    observation("0xf", 0, "0xpool", 25),
    observation("0xf", 1, "0xpool", 0),
    observation("0xg", 0, "0xpool", 10, verified=False),
    observation("0xh", 0, "0xpool", 10, age=3 * HOUR),
    observation("0xk", 0, "0xdark", 10),
])
POOLS = pl.DataFrame({"chain_id": [1, 1], "slug": ["ethereum"] * 2, "pair": ["0xpool", "0xdark"],
                      "ticker": ["ABC/WETH", "DRK/WETH"], "liquidity_usd": [1_000_000.0, None],
                      "pair_apr": [10.0, 0.0]})
SUPPLY = pl.DataFrame({"chain_id": [1, 1], "pair": ["0xpool", "0xdark"],
                       "lp_supply": [100.0, 100.0]})
TOKENS = pl.DataFrame({"chain_id": [1], "address": ["0xreward"], "name": ["Reward"],
                       "symbol": ["RWD"], "decimals": [18], "price_usd": [2.0]})
LABELS = pl.DataFrame({"chain_id": [1], "address": ["0xfactory"], "name": ["FarmCo"]})


@pytest.fixture(scope="module")
def farms() -> pl.DataFrame:
    return assemble_farms(OBSERVATIONS.lazy(), POOLS, SUPPLY, TOKENS, LABELS, AS_OF)


def farm(farms: pl.DataFrame, address: str, pid: int = 0) -> dict:
    return farms.filter(pl.col("address") == address, pl.col("pid") == pid).row(0, named=True)


def test_tvl_and_aprs_by_hand(farms) -> None:
    f = farm(farms, "0xf")
    # 25 of 100 LP tokens staked in a $1M pool; 0.001 RWD a second at $2 is $63,072 a year.
    assert f["tvl_usd"] == pytest.approx(250_000)
    assert f["lp_reward_apr"] == pytest.approx(63_072 / 250_000 * 100)
    item = orjson.loads(f["item"])
    assert item["tvl"] == "250000.00"
    assert item["apr_year"] == {"base_apr": "10.000000", "lp_reward_apr": "25.228800"}
    assert item["apr_daily"] == {"base_apr": f"{10 / 365:.6f}", "lp_reward_apr": "0.069120"}
    assert item["factory"] == {"address": "0xfactory", "name": "FarmCo"}
    assert (item["status"], item["lifecycle_state"], item["data_quality_flags"]) == (
        "verified", "earning", [])
    assert item["updated_at"] == "2026-11-19T22:59:00Z"


def test_idle_unverified_stale_and_unpriced(farms) -> None:
    idle = farm(farms, "0xf", 1)
    assert (idle["lifecycle_state"], idle["tvl_usd"], idle["lp_reward_apr"]) == ("idle", 0, None)
    # Nothing staked earns nothing: the wire says 0, a decimal string, never null.
    assert orjson.loads(idle["item"])["apr_year"]["lp_reward_apr"] == "0.000000"
    unverified = farm(farms, "0xg")
    assert (unverified["status"], unverified["lifecycle_state"]) == ("unverified", "unconfirmed")
    assert "unverified_contract" in unverified["data_quality_flags"]
    stale = farm(farms, "0xh")
    assert stale["lifecycle_state"] == "stale" and "stale_observation" in stale["data_quality_flags"]
    dark = orjson.loads(farm(farms, "0xk")["item"])
    assert dark["tvl"] is None and "unpriced_lp" in dark["data_quality_flags"]
    assert dark["apr_year"]["lp_reward_apr"] == "0.000000" and dark["apr_daily"]["base_apr"]
    assert validate("farm_rows", FarmRow, farms).passed
    assert stale_shown_fresh(farms, AS_OF).is_empty()


def test_a_stale_farm_shown_fresh_fails(farms) -> None:
    fresh = farms.with_columns(stale=pl.lit(False))
    assert stale_shown_fresh(fresh, AS_OF).height == 1
    assert not validate("farm_rows", FarmRow, fresh).passed
    confirmed = farms.with_columns(lifecycle_state=pl.lit("earning"))
    assert not validate("farm_rows", FarmRow, confirmed).passed

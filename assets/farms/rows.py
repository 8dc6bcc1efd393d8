"""Farm rows (spec 2.7): one per (chain, farm contract, pid) from its latest observation, with
TVL and APRs priced from the pool and the reward token, and what is known about its quality."""

from datetime import datetime

import orjson
import polars as pl

from checks.schemas.farms import STALE_AFTER
from core.vocabulary import WIRE_TIME
from figures.pair_trades import human

KEY = ["chain_id", "address", "pid"]
# Farms are observed hourly: an observation older than this is stale.
YEAR_S = 365 * 86_400


def latest_observations(observations: pl.LazyFrame, as_of: datetime) -> pl.LazyFrame:
    """Each farm's latest observation at or before the watermark."""
    return (observations.filter(pl.col("observed_at") <= as_of)
            .sort("observed_at").group_by("chain_id", "farm_address", "pid").last()
            .rename({"farm_address": "address"}))


def lifecycle_state() -> pl.Expr:
    """stale (not observed lately: nothing current is known), ended (no rewards), idle (nothing
    staked), unconfirmed (an unverified contract: its yield is a claim), else earning."""
    return (pl.when("stale").then(pl.lit("stale"))
            .when(pl.col("reward_per_second") <= 0).then(pl.lit("ended"))
            .when(pl.col("staked_share") <= 0).then(pl.lit("idle"))
            .when(~pl.col("verified")).then(pl.lit("unconfirmed"))
            .otherwise(pl.lit("earning")))


def quality_flags() -> pl.Expr:
    """What a reader should know before trusting the row's figures."""
    return pl.concat_list(
        pl.when("stale").then(pl.lit("stale_observation")),
        pl.when(~pl.col("verified")).then(pl.lit("unverified_contract")),
        pl.when(pl.col("tvl_usd").is_null()).then(pl.lit("unpriced_lp")),
        pl.when(pl.col("reward_price_usd").is_null()).then(pl.lit("unpriced_reward")),
        pl.when(pl.col("staked_share") <= 0).then(pl.lit("nothing_staked")),
    ).list.drop_nulls()


def assemble_farms(observations: pl.LazyFrame, pools: pl.DataFrame, supply: pl.DataFrame,
                   tokens: pl.DataFrame, labels: pl.DataFrame, as_of: datetime) -> pl.DataFrame:
    """Farm rows. `pools`: per pair its chain slug, ticker, liquidity (USD) and fee APR;
    `supply`: per pair its LP supply (raw); `tokens`: decimals, name, symbol and USD price."""
    rewards = tokens.select("chain_id", reward_token="address", reward_name="name",
                            reward_symbol="symbol", reward_decimals="decimals",
                            reward_price_usd="price_usd")
    frame = (latest_observations(observations, as_of).collect()
             .join(pools.rename({"pair": "lp_token"}), on=["chain_id", "lp_token"], how="left")
             .join(supply.rename({"pair": "lp_token"}), on=["chain_id", "lp_token"], how="left")
             .join(rewards, on=["chain_id", "reward_token"], how="left")
             .join(labels.select("chain_id", factory="address", factory_name="name"),
                   on=["chain_id", "factory"], how="left")
             .with_columns(
                 staked_share=pl.when(pl.col("lp_supply") > 0).then(
                     (pl.col("staked_raw").cast(pl.Float64) / pl.col("lp_supply")).clip(0, 1))
                 .otherwise(0.0),
                 reward_per_second=human("reward_per_second_raw", "reward_decimals").fill_null(
                     pl.col("reward_per_second_raw").cast(pl.Float64)),
                 stale=pl.col("observed_at") < pl.lit(as_of) - STALE_AFTER))
    frame = frame.with_columns(tvl_usd=pl.col("staked_share") * pl.col("liquidity_usd"))
    yearly = pl.col("reward_per_second") * YEAR_S * pl.col("reward_price_usd")
    frame = frame.with_columns(
        base_apr=pl.col("pair_apr"),
        lp_reward_apr=pl.when(pl.col("tvl_usd") > 0).then(yearly / pl.col("tvl_usd") * 100.0),
        status=pl.when("verified").then(pl.lit("verified")).otherwise(pl.lit("unverified")),
        lifecycle_state=lifecycle_state(), data_quality_flags=quality_flags())
    frame = frame.with_columns(
        apr=pl.col("base_apr").fill_null(0.0) + pl.col("lp_reward_apr").fill_null(0.0),
        updated_at=pl.col("observed_at"))
    items = [farm_item(r) for r in frame.iter_rows(named=True)]
    return (frame.with_columns(item=pl.Series(items, dtype=pl.String))
            .select(*KEY, "slug", "ticker", "lp_token", "factory", "reward_token", "verified",
                    "status", "lifecycle_state", "data_quality_flags", "stale", "staked_share",
                    "tvl_usd", "base_apr", "lp_reward_apr", "apr", "updated_at", "item")
            .sort(KEY))


def decimal(value: float | None, places: int) -> str | None:
    """A figure as a fixed-point decimal string; None stays None (unknown is never zero)."""
    return None if value is None else f"{value:.{places}f}"


def farm_item(row: dict) -> str:
    """A farm row's JSON (spec 2.7)."""
    def aprs(scale: int) -> dict:
        # An APR is always a decimal string: what is not earned (nothing staked, no reward
        # rate) or cannot be valued (an unpriced reward or LP) adds 0, and
        # data_quality_flags says which.
        return {"base_apr": decimal(_div(row["base_apr"] or 0.0, scale), 6),
                "lp_reward_apr": decimal(_div(row["lp_reward_apr"] or 0.0, scale), 6)}

    return orjson.dumps({
        "network": {"slug": row["slug"], "chain_id": row["chain_id"]},
        "address": row["address"], "pid": row["pid"], "ticker": row["ticker"],
        "tvl": decimal(row["tvl_usd"], 2),
        "reward_token": {"address": row["reward_token"], "name": row["reward_name"],
                         "symbol": row["reward_symbol"], "chain_id": row["chain_id"]},
        "apr_year": aprs(1), "apr_daily": aprs(365),
        "factory": {"address": row["factory"], "name": row["factory_name"] or ""},
        "updated_at": row["updated_at"].strftime(WIRE_TIME), "status": row["status"],
        "lifecycle_state": row["lifecycle_state"],
        "data_quality_flags": row["data_quality_flags"],
    }).decode()


def _div(value: float | None, by: int) -> float | None:
    return None if value is None else value / by

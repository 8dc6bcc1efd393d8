"""Farm products: the schema of record and the farm rules of spec 2.7 (keyed by chain,
contract and pid; an unverified pool is never a confirmed yield; stale is never fresh)."""

from datetime import datetime, timedelta

import pandera.polars as pa
import polars as pl

from checks.schemas.product import Product
from core.columns import Timestamp, ts

# A farm last observed longer ago than this is stale: nothing current is known of it.
STALE_AFTER = timedelta(hours=2)

LIFECYCLE = ["earning", "unconfirmed", "idle", "ended", "stale"]
FLAGS = ["stale_observation", "unverified_contract", "unpriced_lp", "unpriced_reward",
         "nothing_staked"]


def _has(flag: str) -> pl.Expr:
    return pl.col("data_quality_flags").list.contains(flag)


class FarmRow(Product):
    """One farm: a contract's pool `pid` on a chain."""

    chain_id: int
    address: str
    pid: int = pa.Field(ge=0)
    status: str = pa.Field(isin=["verified", "unverified"])
    lifecycle_state: str = pa.Field(isin=LIFECYCLE)
    staked_share: float = pa.Field(ge=0, le=1)
    tvl_usd: float | None = pa.Field(nullable=True, ge=0)
    updated_at: Timestamp = ts()
    item: str

    class Config:
        unique = ["chain_id", "address", "pid"]

    @pa.dataframe_check

    @classmethod
    def status_is_the_contract_verification(cls, data) -> pl.LazyFrame:
        """`status` states whether the farm contract is verified."""
        return data.lazyframe.select((pl.col("status") == "verified") == pl.col("verified"))

    @pa.dataframe_check

    @classmethod
    def unverified_never_a_confirmed_yield(cls, data) -> pl.LazyFrame:
        """Only a verified, freshly observed farm is `earning` (a confirmed yield)."""
        return data.lazyframe.select((pl.col("lifecycle_state") != "earning")
                                     | (pl.col("verified") & ~pl.col("stale")))

    @pa.dataframe_check

    @classmethod
    def stale_is_flagged(cls, data) -> pl.LazyFrame:
        """A stale observation is flagged and its state is `stale`, never a fresh figure."""
        return data.lazyframe.select((pl.col("stale") == _has("stale_observation"))
                                     & (pl.col("stale") == (pl.col("lifecycle_state") == "stale")))

    @pa.dataframe_check

    @classmethod
    def aprs_are_decimal_strings(cls, data) -> pl.LazyFrame:
        """Every APR of the wire is a decimal string (spec 2.7): no reward is "0.000000"."""
        item = pl.col("item")
        return data.lazyframe.select(pl.all_horizontal(
            item.str.json_path_match(f"$.{block}.{name}").str.contains(r"^\d+\.\d{6}$")
            .fill_null(False)
            for block in ("apr_year", "apr_daily") for name in ("base_apr", "lp_reward_apr")))

    @pa.dataframe_check

    @classmethod
    def unknown_tvl_is_flagged(cls, data) -> pl.LazyFrame:
        """A TVL nobody could price is null and flagged, never zero."""
        return data.lazyframe.select(pl.col("tvl_usd").is_null() == _has("unpriced_lp"))


def stale_shown_fresh(farms: pl.DataFrame, as_of: datetime) -> pl.DataFrame:
    """Farms whose last observation is older than the staleness bound yet not marked stale."""
    return farms.filter(pl.col("updated_at") < pl.lit(as_of) - STALE_AFTER, ~pl.col("stale"))

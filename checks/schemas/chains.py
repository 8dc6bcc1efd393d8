"""The chain record (spec 2.9) and /config's lists: schemas of record and their meaning rules."""


import pandera.polars as pa
import polars as pl

from checks.schemas.product import ExactProduct
from core import vocabulary
from core.columns import Strings, strings
from sources.contract import ADDRESS_FORMATS


class ChainRecord(ExactProduct):
    """One chain's record as /config and /chains serve it."""

    slug: str = pa.Field(str_matches=r"^[a-z0-9-]{1,32}$", unique=True)
    display_name: str
    native_address_format: str = pa.Field(isin=ADDRESS_FORMATS)
    explorer_url: str = pa.Field(str_startswith="https://")
    chain_id: int = pa.Field(gt=0, unique=True)
    latest_block: int = pa.Field(ge=0)
    head_block: int = pa.Field(ge=0)
    block_lag_seconds: int = pa.Field(ge=0)
    pairs: int = pa.Field(ge=0)
    txns_24h: int = pa.Field(ge=0)
    new_pairs_24h: int = pa.Field(ge=0)
    new_pairs_24h_total: int = pa.Field(ge=0)
    scams_total: int = pa.Field(ge=0)
    scams_on_pool: int = pa.Field(ge=0)
    scams_inherited: int = pa.Field(ge=0)
    scams_24h: int = pa.Field(ge=0)
    deployers_total: int = pa.Field(ge=0)
    new_deployers_24h: int = pa.Field(ge=0)
    deployer_abusers: int = pa.Field(ge=0)
    syncing: bool
    metrics_stale: bool
    protocols: Strings = strings()
    dex_names: Strings = strings()
    liquidity_usd: float = pa.Field(ge=0)
    volume_24h_usd: float = pa.Field(ge=0)
    min_liquidity_usd: float = pa.Field(ge=0)
    quality_liquidity_usd: float = pa.Field(ge=0)
    gainer_pair_address: str | None = pa.Field(nullable=True)
    gainer_ticker: str | None = pa.Field(nullable=True)
    gainer_value: float | None = pa.Field(nullable=True)
    loser_pair_address: str | None = pa.Field(nullable=True)
    loser_ticker: str | None = pa.Field(nullable=True)
    loser_value: float | None = pa.Field(nullable=True)


    @pa.dataframe_check

    @classmethod
    def head_at_or_above_latest_block(cls, data) -> pl.LazyFrame:
        return data.lazyframe.select(pl.col("head_block") >= pl.col("latest_block"))

    @pa.dataframe_check

    @classmethod
    def scams_split_into_on_pool_and_inherited(cls, data) -> pl.LazyFrame:
        total = pl.col("scams_on_pool") + pl.col("scams_inherited")
        return data.lazyframe.select(pl.col("scams_total") == total)

    @pa.dataframe_check

    @classmethod
    def recent_counts_within_totals(cls, data) -> pl.LazyFrame:
        return data.lazyframe.select(
            (pl.col("scams_24h") <= pl.col("scams_total"))
            & (pl.col("new_pairs_24h") <= pl.col("new_pairs_24h_total"))
            & (pl.col("new_pairs_24h_total") <= pl.col("pairs"))
            & (pl.col("new_deployers_24h") <= pl.col("deployers_total"))
            & (pl.col("deployer_abusers") <= pl.col("deployers_total")))

    @pa.dataframe_check

    @classmethod
    def quality_liquidity_within_liquidity(cls, data) -> pl.LazyFrame:
        return data.lazyframe.select(
            pl.col("quality_liquidity_usd") <= pl.col("liquidity_usd") * (1 + 1e-9) + 1e-6)

    @pa.dataframe_check

    @classmethod
    def a_chain_not_syncing_is_stale(cls, data) -> pl.LazyFrame:
        return data.lazyframe.select(pl.col("syncing") | pl.col("metrics_stale"))

    @pa.dataframe_check

    @classmethod
    def dex_names_are_protocols(cls, data) -> pl.LazyFrame:
        return data.lazyframe.select(
            pl.col("dex_names").list.set_difference(pl.col("protocols")).list.len() == 0)

    @pa.dataframe_check

    @classmethod
    def gainer_not_below_loser(cls, data) -> pl.LazyFrame:
        return data.lazyframe.select(
            pl.col("gainer_value").is_null() | (pl.col("gainer_value") >= pl.col("loser_value")))


class Config(ExactProduct):
    """/config's value lists: exactly the values the service accepts."""

    resolutions: Strings = strings()
    tx_types: Strings = strings()
    sort_options: Strings = strings()
    timeframes: Strings = strings()
    min_liquidity_usd: float = pa.Field(ge=0)

    @pa.dataframe_check

    @classmethod
    def one_row(cls, data) -> pl.LazyFrame:
        return data.lazyframe.select(pl.len() == 1)

    @pa.dataframe_check

    @classmethod
    def lists_are_the_accepted_values(cls, data) -> pl.LazyFrame:
        accepted = {"resolutions": vocabulary.RESOLUTIONS, "tx_types": vocabulary.TX_TYPES,
                    "sort_options": vocabulary.SORT_OPTIONS, "timeframes": vocabulary.TIMEFRAMES}
        same = [pl.col(name).list.sort() == pl.lit(sorted(values), pl.List(pl.String))
                for name, values in accepted.items()]
        return data.lazyframe.select(pl.all_horizontal(same))

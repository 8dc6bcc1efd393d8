"""The pair row (spec 2.3): schema of record and the meaning rules of 2.3 and section 3."""

import pandera.polars as pa
import polars as pl

VERDICTS = ["ok", "watch", "blocked", "unknown"]
PAIR_STATUSES = ["active", "inactive", "rugged", "unresolved"]


class PairRow(pa.DataFrameModel):
    """One pair: the columns lists and lookups read, and `item`, its wire JSON."""

    chain_id: int = pa.Field(gt=0)
    slug: str
    pair: str = pa.Field(str_length={"min_value": 1, "max_value": 128})
    ticker: str
    base: str
    quote: str
    liquidity_usd: float | None = pa.Field(nullable=True, ge=0)
    volume_h24_usd: float = pa.Field(ge=0)
    txns_h24: int = pa.Field(ge=0)
    makers_h24: int = pa.Field(ge=0)
    price_change_h24: float
    score: int = pa.Field(ge=0, le=100)
    verdict: str = pa.Field(isin=VERDICTS)
    status: str = pa.Field(isin=PAIR_STATUSES)
    is_perp: bool
    launchpad: str | None = pa.Field(nullable=True)
    is_scam: bool
    item: str = pa.Field(str_startswith='{"network":')

    class Config:
        strict = False
        coerce = True
        unique = ["chain_id", "pair"]

    @pa.dataframe_check
    def scams_are_blocked(cls, data) -> pl.LazyFrame:
        """A pair with scam evidence is blocked, and only such a pair."""
        return data.lazyframe.select(pl.col("is_scam") == (pl.col("verdict") == "blocked"))

    @pa.dataframe_check
    def unresolved_pairs_are_unknown(cls, data) -> pl.LazyFrame:
        """A pair that cannot be priced is `unknown`, never `ok`: ok is not a clearance."""
        return data.lazyframe.select(
            (pl.col("status") != "unresolved") | (pl.col("verdict") == "unknown"))

    @pa.dataframe_check
    def the_item_carries_the_verdict(cls, data) -> pl.LazyFrame:
        """The wire JSON says the same verdict as the column lists filter on."""
        return data.lazyframe.select(
            pl.col("item").str.json_path_match("$.verdict.status") == pl.col("verdict"))

    @pa.dataframe_check
    def makers_cover_the_day(cls, data) -> pl.LazyFrame:
        """Swaps in the day come from at least one maker, and never fewer swaps than makers."""
        return data.lazyframe.select(
            (pl.col("txns_h24") >= pl.col("makers_h24"))
            & ((pl.col("txns_h24") == 0) == (pl.col("makers_h24") == 0)))

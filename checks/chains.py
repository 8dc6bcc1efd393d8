"""Chain records against the raw lake: counts recomputed independently must agree."""

import polars as pl

from checks.outcome import Outcome, failed


def counts_agree_with_lake(records: pl.DataFrame, pairs: pl.LazyFrame, swaps: pl.LazyFrame,
                           heads: pl.LazyFrame, as_of) -> Outcome:
    """pairs, txns_24h, latest and head block recomputed from raw tables match the records."""
    day_ago = as_of - pl.duration(days=1)
    raw_pairs = (pairs.filter(pl.col("created_at") <= as_of).group_by("chain_id")
                 .agg(raw_pairs=pl.len()))
    raw_txns = (swaps.filter((pl.col("block_time") > day_ago) & (pl.col("block_time") <= as_of))
                .group_by("chain_id").agg(raw_txns=pl.len()))
    raw_heads = (heads.filter(pl.col("observed_at") <= as_of).sort("observed_at")
                 .group_by("chain_id").last()
                 .select("chain_id", raw_latest="indexed_block", raw_head="head_block"))
    joined = (records.lazy().join(raw_pairs, on="chain_id", how="left")
              .join(raw_txns, on="chain_id", how="left").join(raw_heads, on="chain_id", how="left")
              .with_columns(pl.col("raw_pairs", "raw_txns").fill_null(0)).collect())
    bad = joined.filter(
        (pl.col("pairs") != pl.col("raw_pairs")) | (pl.col("txns_24h") != pl.col("raw_txns"))
        | (pl.col("latest_block") != pl.col("raw_latest"))
        | (pl.col("head_block") != pl.col("raw_head"))
    ).select("slug", "pairs", "raw_pairs", "txns_24h", "raw_txns", "latest_block", "raw_latest",
             "head_block", "raw_head")
    return failed("chain_records", "counts_agree_with_lake", bad)

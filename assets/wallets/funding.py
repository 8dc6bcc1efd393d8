"""Who funded a wallet: every transfer of the chain's native token into it, priced."""

import polars as pl

from figures.pair_trades import FeedPrices, human, native_tokens


def assemble_funding(frames: dict[str, pl.LazyFrame], as_of) -> pl.DataFrame:
    """Native-token transfers up to the watermark, by receiving wallet, with their USD value at
    the time (null before the native token had a price), in time order (ties in chain order, so
    that two runs give the same rows in the same order)."""
    prices = FeedPrices.of(frames["quote_prices"].collect())
    natives = native_tokens(frames, prices).lazy().select(
        "chain_id", "decimals", "native_ix", token="native_token").drop_nulls("decimals")
    funded = (frames["transfers"].filter(pl.col("block_time") <= as_of)
              .join(natives, on=["chain_id", "token"])
              .select("chain_id", "block_number", "log_index", "tx_hash", wallet="to_address",
                      funder="from_address", ts=pl.col("block_time").dt.epoch("s"),
                      amount=human("amount", "decimals"), native_ix="native_ix")
              .sort("ts", "chain_id", "block_number", "log_index").collect())
    return funded.with_columns(
        amount_usd=pl.col("amount") * prices.at(funded["native_ix"], funded["ts"])).drop(
        "native_ix")

"""Who funded a wallet: every transfer of the chain's native token into it, priced."""

import polars as pl

from assets.market.pair_trades import human, native_prices


def assemble_funding(frames: dict[str, pl.LazyFrame], as_of) -> pl.DataFrame:
    """Native-token transfers up to the watermark, by receiving wallet, with their USD value at
    the time (null before the native token had a price)."""
    chains, tokens = frames["chains"], frames["tokens"]
    native = chains.select("chain_id", token="native_token")
    prices = native_prices(chains, tokens, frames["quote_prices"])
    return (frames["transfers"].filter(pl.col("block_time") <= as_of)
            .join(native, on=["chain_id", "token"])
            .join(tokens.select("chain_id", token="address", decimals="decimals"),
                  on=["chain_id", "token"])
            .select("chain_id", "block_number", "log_index", "tx_hash", wallet="to_address",
                    funder="from_address", ts=pl.col("block_time").dt.epoch("s"),
                    amount=human("amount", "decimals"))
            .sort("ts")
            .join_asof(prices, on="ts", by="chain_id", strategy="backward",
                       check_sortedness=False)
            .with_columns(amount_usd=pl.col("amount") * pl.col("native_usd"))
            .drop("native_decimals", "native_usd")
            .collect())

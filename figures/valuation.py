"""Reserves valued at their quote's price: oracle updates as USD prices, raw reserves as whole
base and quote tokens, their USD value at an instant, and a pool's liquidity."""

import polars as pl

from core.quotes import prices_at
from figures.pair_trades import human


def quote_price_rows(updates: pl.LazyFrame) -> pl.LazyFrame:
    """Oracle updates as USD prices by feed and publish time."""
    return (updates.select("feed_id", ts="publish_time",
                           price_usd=pl.col("price") * pl.lit(10.0).pow(pl.col("expo")))
            .sort("feed_id", "ts"))


def in_tokens(reserves: pl.LazyFrame, pairs: pl.LazyFrame) -> pl.LazyFrame:
    """Raw reserves (reserve0, reserve1) as whole base and quote tokens, with the quote's
    feed (`pairs`: the pair tokens' sides, decimals and feed)."""
    b0 = pl.col("base_is_token0")
    return (reserves.join(pairs, on=["chain_id", "pair"])
            .with_columns(base_reserve=pl.when(b0).then("reserve0").otherwise("reserve1"),
                          quote_reserve=pl.when(b0).then("reserve1").otherwise("reserve0"))
            .select("chain_id", "pair", "quote_feed_id",
                    base_reserve=human("base_reserve", "base_decimals"),
                    quote_reserve=human("quote_reserve", "quote_decimals")))


def valued(reserves: pl.LazyFrame, prices: pl.DataFrame, ts: int) -> pl.LazyFrame:
    """Reserves in whole tokens valued at unix second `ts`: the quote's USD price and the
    base's, quote reserve over base reserve in USD."""
    usd = prices_at(prices.lazy(), ts).select(quote_feed_id="feed_id", quote_usd="price_usd")
    return (reserves.join(usd, on="quote_feed_id", how="left")
            .select("chain_id", "pair", "base_reserve", "quote_reserve", "quote_usd",
                    price_usd=pl.when(pl.col("base_reserve") > 0).then(
                        pl.col("quote_reserve") / pl.col("base_reserve") * pl.col("quote_usd"))))


def liquidity(suffix: str = "") -> pl.Expr:
    """Both sides of a constant-product pool are worth the same: twice the quote side."""
    return 2.0 * pl.col(f"quote_reserve{suffix}") * pl.col(f"quote_usd{suffix}")

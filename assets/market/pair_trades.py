"""Pair trades (spec 2.7, 4.6): every swap and liquidity event of every pair, priced, as the
edge pages them."""

import polars as pl

from assets.market.pair_rows import KEY

TRADE_COLUMNS = ("chain_id", "pair", "block_number", "log_index", "ts", "hash", "maker",
                 "from_address", "to_address", "tx_type", "gas_used", "fee_usd", "amount0",
                 "amount1", "price0", "price1", "price_usd0", "price_usd1", "price_usd",
                 "volume_usd")


def _by_position(base: str, quote: str) -> dict[str, pl.Expr]:
    """token0 and token1 figures from base and quote ones."""
    b0 = pl.col("base_is_token0")
    return {"0": pl.when(b0).then(pl.col(base)).otherwise(pl.col(quote)),
            "1": pl.when(b0).then(pl.col(quote)).otherwise(pl.col(base))}


def native_prices(chains: pl.LazyFrame, tokens: pl.LazyFrame,
                  prices: pl.LazyFrame) -> pl.LazyFrame:
    """Each chain's native token: decimals and its USD price at every oracle update."""
    native = chains.join(tokens.select("chain_id", "address", "decimals", "price_feed_id"),
                         left_on=["chain_id", "native_token"], right_on=["chain_id", "address"])
    return (native.join(prices, left_on="price_feed_id", right_on="feed_id")
            .select("chain_id", "ts", native_decimals="decimals", native_usd="price_usd")
            .sort("ts"))


def assemble_trades(frames: dict[str, pl.LazyFrame]) -> pl.DataFrame:
    """Swaps and liquidity events with both tokens' amounts and prices, sorted by pair, then
    block and log."""
    pairs = frames["pair_tokens"].select(*KEY, "base_is_token0", "base_decimals",
                                         "quote_decimals", "quote_feed_id")
    quote_usd = (frames["quote_prices"].rename({"feed_id": "quote_feed_id",
                                                "price_usd": "quote_usd"}).sort("ts"))
    swaps = frames["swap_legs"].select(
        *KEY, "block_number", "log_index", "ts", "base_amount", "quote_amount", "quote_feed_id",
        "gas_used", "price_usd", "volume_usd", hash="tx_hash", maker="maker",
        from_address="sender", to_address="recipient", tx_type="side",
        fee_raw=pl.col("tx_fee_raw").cast(pl.Float64))
    adds = pl.col("kind") == "mint"
    liquidity = (frames["liquidity_events"].join(pairs, on=KEY)
                 .with_columns(**{f"human{i}": pl.col(f"amount{i}").cast(pl.Float64)
                                  / pl.lit(10.0).pow(pl.when(pl.col("base_is_token0") == (i == 0))
                                                     .then("base_decimals")
                                                     .otherwise("quote_decimals"))
                                  for i in (0, 1)})
                 .select(*KEY, "block_number", "log_index", "quote_feed_id",
                         ts=pl.col("block_time").dt.epoch("s"), hash="tx_hash", maker="owner",
                         from_address=pl.when(adds).then("owner").otherwise("pair"),
                         to_address=pl.when(adds).then("pair").otherwise("owner"),
                         tx_type=pl.when(adds).then(pl.lit("add")).otherwise(pl.lit("remove")),
                         base_amount=pl.when("base_is_token0").then("human0").otherwise("human1"),
                         quote_amount=pl.when("base_is_token0").then("human1")
                         .otherwise("human0"))
                 .sort("ts")
                 .join_asof(quote_usd, on="ts", by="quote_feed_id", strategy="backward",
                            check_sortedness=False)
                 .with_columns(volume_usd=pl.col("quote_amount") * pl.col("quote_usd") * 2.0,
                               price_usd=pl.when(pl.col("base_amount") > 0).then(
                                   pl.col("quote_amount") * pl.col("quote_usd")
                                   / pl.col("base_amount")),
                               gas_used=pl.lit(None, pl.Int64),
                               fee_raw=pl.lit(None, pl.Float64))
                 .drop("quote_usd"))
    native = native_prices(frames["chains"], frames["tokens"], frames["quote_prices"])
    events = (pl.concat([swaps, liquidity], how="diagonal_relaxed")
              .join(pairs.select(*KEY, "base_is_token0"), on=KEY)
              .sort("ts")
              .join_asof(quote_usd, on="ts", by="quote_feed_id", strategy="backward",
                         check_sortedness=False)
              .join_asof(native, on="ts", by="chain_id", strategy="backward",
                         check_sortedness=False))
    amount = _by_position("base_amount", "quote_amount")
    usd = _by_position("price_usd", "quote_usd")
    return (events.select(
        *KEY, "block_number", "log_index", "ts", "hash", "maker", "from_address", "to_address",
        "tx_type", "gas_used", "price_usd", "volume_usd",
        fee_usd=pl.col("fee_raw") / pl.lit(10.0).pow(pl.col("native_decimals"))
        * pl.col("native_usd"),
        amount0=amount["0"], amount1=amount["1"], price_usd0=usd["0"], price_usd1=usd["1"])
        .with_columns(price0=pl.when(pl.col("amount0") > 0).then(
                          pl.col("amount1") / pl.col("amount0")),
                      price1=pl.when(pl.col("amount1") > 0).then(
                          pl.col("amount0") / pl.col("amount1")))
        .select(TRADE_COLUMNS)
        .sort("chain_id", "pair", "block_number", "log_index")
        .collect())

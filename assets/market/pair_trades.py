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


def human(raw: str, decimals: str) -> pl.Expr:
    """A raw integer amount in whole tokens."""
    return pl.col(raw).cast(pl.Float64) / pl.lit(10.0).pow(pl.col(decimals))


def per_chain(prices: pl.LazyFrame, chains: pl.LazyFrame) -> pl.LazyFrame:
    """Quote prices repeated for every chain and in time order within each chain and feed: the
    lake keeps a chain's events in time order, so as-of joins by chain need no global sort."""
    return (chains.select("chain_id").join(prices, how="cross")
            .select("chain_id", "ts", quote_feed_id="feed_id", quote_usd="price_usd")
            .sort("chain_id", "quote_feed_id", "ts"))


def assemble_legs(frames: dict[str, pl.LazyFrame]) -> pl.DataFrame:
    """Every swap from its base token's side, in the lake's order (by chain, then block and
    log): buy or sell, amounts, the quote's USD price, USD value and price, and the fee in USD."""
    pairs = frames["pair_tokens"].select(*KEY, "base_is_token0", "base_decimals",
                                         "quote_decimals", "quote_feed_id")
    b0 = pl.col("base_is_token0")
    native = native_prices(frames["chains"], frames["tokens"], frames["quote_prices"])
    return (frames["swaps"].join(pairs, on=KEY, how="inner", maintain_order="left")
            .with_columns(
                base_in=pl.when(b0).then("amount0_in").otherwise("amount1_in"),
                base_out=pl.when(b0).then("amount0_out").otherwise("amount1_out"),
                quote_in=pl.when(b0).then("amount1_in").otherwise("amount0_in"),
                quote_out=pl.when(b0).then("amount1_out").otherwise("amount0_out"),
                ts=pl.col("block_time").dt.epoch("s"))
            .with_columns(
                side=pl.when(pl.col("base_out") > 0).then(pl.lit("buy")).otherwise(pl.lit("sell")),
                base_amount=human("base_in", "base_decimals") + human("base_out", "base_decimals"),
                quote_amount=(human("quote_in", "quote_decimals")
                              + human("quote_out", "quote_decimals")))
            .join_asof(per_chain(frames["quote_prices"], frames["chains"]), on="ts",
                       by=["chain_id", "quote_feed_id"], strategy="backward",
                       check_sortedness=False)
            .join_asof(native, on="ts", by="chain_id", strategy="backward",
                       check_sortedness=False)
            .with_columns(volume_usd=pl.col("quote_amount") * pl.col("quote_usd"),
                          fee_usd=human("tx_fee_raw", "native_decimals") * pl.col("native_usd"))
            .select("chain_id", "block_number", "log_index", "block_time", "ts", "tx_hash",
                    "pair", "maker", "sender", "recipient", "side", "base_is_token0",
                    "base_amount", "quote_amount", "quote_usd", "volume_usd", "gas_used",
                    "fee_usd", price_usd=pl.col("volume_usd") / pl.col("base_amount"))
            .collect())


def assemble_trades(frames: dict[str, pl.LazyFrame]) -> pl.DataFrame:
    """Swaps (from the legs) and liquidity events with both tokens' amounts and prices; in no
    particular order (the trades serving table is sorted when it is published)."""
    pairs = frames["pair_tokens"].select(*KEY, "base_is_token0", "base_decimals",
                                         "quote_decimals", "quote_feed_id")
    quote_usd = (frames["quote_prices"].rename({"feed_id": "quote_feed_id",
                                                "price_usd": "quote_usd"}).sort("ts"))
    swaps = frames["swap_legs"].select(
        *KEY, "block_number", "log_index", "ts", "base_is_token0", "base_amount",
        "quote_amount", "quote_usd", "gas_used", "fee_usd", "price_usd", "volume_usd",
        hash="tx_hash", maker="maker", from_address="sender", to_address="recipient",
        tx_type="side")
    adds = pl.col("kind") == "mint"
    liquidity = (frames["liquidity_events"].join(pairs, on=KEY)
                 .with_columns(**{f"human{i}": pl.col(f"amount{i}").cast(pl.Float64)
                                  / pl.lit(10.0).pow(pl.when(pl.col("base_is_token0") == (i == 0))
                                                     .then("base_decimals")
                                                     .otherwise("quote_decimals"))
                                  for i in (0, 1)})
                 .select(*KEY, "block_number", "log_index", "quote_feed_id", "base_is_token0",
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
                               fee_usd=pl.lit(None, pl.Float64))
                 .drop("quote_feed_id"))
    events = pl.concat([swaps, liquidity], how="diagonal_relaxed")
    amount = _by_position("base_amount", "quote_amount")
    usd = _by_position("price_usd", "quote_usd")
    return (events.select(
        *KEY, "block_number", "log_index", "ts", "hash", "maker", "from_address", "to_address",
        "tx_type", "gas_used", "price_usd", "volume_usd", "fee_usd",
        amount0=amount["0"], amount1=amount["1"], price_usd0=usd["0"], price_usd1=usd["1"])
        .with_columns(price0=pl.when(pl.col("amount0") > 0).then(
                          pl.col("amount1") / pl.col("amount0")),
                      price1=pl.when(pl.col("amount1") > 0).then(
                          pl.col("amount0") / pl.col("amount1")))
        .select(TRADE_COLUMNS)
        .collect())

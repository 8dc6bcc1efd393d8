"""Holder balances: what every address holds of every token at the lake's watermark, from
supply mints and wallet moves, swaps (paid in by the maker, paid out to the recipient) and the
liquidity a wallet added or removed. Pools and the mint address are not holders.

Every swap is folded by the fingerprint of its (chain, pair, maker, recipient) before it fans
out to the pair's two tokens, so the ten million swaps of a week are summed in one hash table
of integers, not of address strings; amounts stay exact raw integers until the last division.
"""

from datetime import datetime

import polars as pl

from assets.fingerprints import distinct, gathered, keyed, lookup

RAW = pl.Int128
RAW_SWAPPED = ("amount0_in", "amount1_in", "amount0_out", "amount1_out")


def _negated(column: str) -> pl.Expr:
    # Int128 has subtraction but no negation.
    return pl.lit(0, RAW) - pl.col(column)


def _swap_moves(swaps: pl.LazyFrame, pools: pl.DataFrame) -> pl.LazyFrame:
    """Per pool and wallet, the net raw amounts of token0 and token1 its swaps moved: the
    maker pays in, the recipient is paid out (one row when they are the same wallet)."""
    moved = swaps.select(pool=lookup(keyed("chain_id", "pair"), pools["key"]), holder="maker",
                         recipient="recipient",
                         **{c: pl.col(c).cast(RAW) for c in RAW_SWAPPED})
    same = pl.col("holder") == pl.col("recipient")
    kept = {f"amount{i}": pl.when(same).then(pl.col(f"amount{i}_out")).otherwise(pl.lit(0, RAW))
            - pl.col(f"amount{i}_in") for i in (0, 1)}
    return (pl.concat([moved.select("pool", "holder", **kept),
                       moved.filter(~same).select("pool", holder="recipient",
                                                  amount0="amount0_out", amount1="amount1_out")])
            .drop_nulls("pool")
            .group_by(keyed("pool", "holder"))
            .agg(pl.col("pool", "holder").first(), pl.col("amount0", "amount1").sum()))


def assemble_holders(frames: dict[str, pl.LazyFrame], as_of: datetime) -> pl.DataFrame:
    """One row per token and holding address with a positive balance (chain_id, token, holder,
    balance in whole tokens)."""
    tokens = frames["tokens"].select("chain_id", "address", "decimals").collect()
    tokens = tokens.with_columns(
        key=distinct(tokens.select(keyed("chain_id", "address")).to_series(), "tokens"))
    pools = frames["pairs"].select("chain_id", "address", "token0", "token1").collect()
    pools = pools.with_columns(
        key=distinct(pools.select(keyed("chain_id", "address")).to_series(), "pairs"),
        **{f"token{i}": lookup(keyed("chain_id", f"token{i}"), tokens["key"]) for i in (0, 1)})
    live = pl.col("block_time") <= as_of
    transfers = frames["transfers"].filter(live).with_columns(
        token=lookup(keyed("chain_id", "token"), tokens["key"]), amount=pl.col("amount").cast(RAW))
    swaps = _swap_moves(frames["swaps"].filter(live), pools)
    liquidity = frames["liquidity_events"].filter(live).with_columns(
        pool=lookup(keyed("chain_id", "pair"), pools["key"]),
        sign=pl.when(pl.col("kind") == "mint").then(pl.lit(-1, RAW)).otherwise(pl.lit(1, RAW)))
    moves = [transfers.select("token", holder="to_address", amount="amount"),
             transfers.select("token", holder="from_address", amount=_negated("amount"))]
    for i in (0, 1):
        token = gathered(pools[f"token{i}"], "pool").alias("token")
        moves += [swaps.select(token, holder="holder", amount=f"amount{i}"),
                  liquidity.select(token, holder="owner",
                                   amount=pl.col(f"amount{i}").cast(RAW) * pl.col("sign"))]
    mints = (frames["transfers"].filter(live)
             .join(frames["tokens"].select("chain_id", token="address", tx_hash="deploy_tx"),
                   on=["chain_id", "token", "tx_hash"])
             .select(keyed("chain_id", "from_address")))
    not_holders = pl.concat([pools.lazy().select("key"), mints])
    return (pl.concat(moves).drop_nulls("token")
            .group_by(keyed("token", "holder"))
            .agg(pl.col("token", "holder").first(), raw=pl.col("amount").sum())
            .filter(pl.col("raw") > 0)
            .with_columns(gathered(tokens["chain_id"], "token"))
            .with_columns(keyed("chain_id", "holder"))
            .join(not_holders, on="key", how="anti")
            .select("chain_id", gathered(tokens["address"], "token").alias("token"), "holder",
                    balance=pl.col("raw").cast(pl.Float64)
                    / pl.lit(10.0).pow(gathered(tokens["decimals"], "token")))
            .collect())

"""A wallet's trades in the live tail: the ledger's events (swaps and bare movements) of the
lake's new rows, made by the ledger's own functions, as the wallet trades table holds them."""

from datetime import datetime

import polars as pl

from figures.ledger import wallet_events, with_swap_hashes

WALLET_TRADE_COLUMNS = ("chain_id", "wallet", "block_number", "log_index", "seq", "ts", "tx_hash",
                        "token", "token_symbol", "pair", "side", "qty", "price_usd",
                        "notional_usd", "fee_usd", "fee_is_estimated")


def live_wallet_trades(frames: dict[str, pl.LazyFrame], as_of: datetime) -> pl.DataFrame:
    """The wallet trades of `frames` (the tail's swap legs, swaps, transfers and liquidity
    events, with the pairs' sides and the tokens), in each wallet's chain order."""
    events = wallet_events(frames, as_of)
    symbols = frames["tokens"].select("chain_id", token="address", token_symbol="symbol").collect()
    return (with_swap_hashes(events, frames["swaps"])
            .join(symbols, on=["chain_id", "token"], how="left")
            .with_columns(pl.col("side").cast(pl.String))
            .select(WALLET_TRADE_COLUMNS)
            .sort("chain_id", "wallet", "block_number", "log_index", "seq"))

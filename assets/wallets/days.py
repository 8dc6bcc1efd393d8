"""What a lake day's ledger is made from: the day's swap legs and movements (the first day's with
every movement before it), the mint addresses of every day, and the books and marks the day
before left."""

import functools

import polars as pl

from assets.wallets.ledger import latest_books, mint_wallets
from assets.warehouse import Warehouse, fingerprints

LEDGER_INPUTS = ("swap_legs", "swaps", "pair_tokens", "transfers", "liquidity_events", "tokens")
# What a lake day's ledger is accounted from, stored at each day's end.
CARRIED = ("wallet_book_states", "token_marks")


class LedgerDays:
    """The lake's days as the wallet ledger is made from them, at the run's watermark."""

    def __init__(self, warehouse: Warehouse) -> None:
        self.warehouse = warehouse
        self.as_of = warehouse.clock()["as_of"]
        self.days = warehouse.lake().days_made("swaps")
        self.frames = warehouse.frames(("swaps", "pair_tokens", "tokens"))

    @functools.cached_property
    def mints(self) -> pl.LazyFrame:
        """The mint addresses of every day: a day's transfers may not hold its token's
        deployment."""
        transfers = (self.warehouse.scan("transfers").filter(pl.col("block_time") <= self.as_of)
                     .select("chain_id", "token", "tx_hash", "from_address"))
        return mint_wallets(transfers, self.frames["tokens"]).collect().lazy()

    def inputs(self, day: str) -> dict[str, pl.LazyFrame]:
        """A day's ledger inputs: its swap legs and movements (`Warehouse.scan_day`: those
        since the day of swaps before it, the first day's with every one before it), and the
        lake's swaps, pools and tokens."""
        return {**self.frames, "swap_legs": self.warehouse.product_days("swap_legs", [day]),
                **{name: self.warehouse.scan_day(name, day)
                   for name in ("transfers", "liquidity_events")}}

    def carried(self, day: str) -> tuple[pl.DataFrame | None, pl.DataFrame | None]:
        """The books and marks at a day's start: every position's books from the last earlier
        day that touched it (`latest_books`), and the marks stored at the end of the day
        before (none before the first day)."""
        if day not in self.days:
            raise FileNotFoundError(f"the lake holds no swaps of {day}")
        earlier = self.days[:self.days.index(day)]
        if not earlier:
            return None, None
        missing = [f"{name} of {gone}" for name in CARRIED for gone in (
            earlier if not self.warehouse.exists(name)
            else sorted(set(earlier) - self.warehouse.files(name).keys()))]
        if missing:
            raise FileNotFoundError(
                f"{', '.join(missing)} not materialised, before {day}: materialise the wallet "
                "days from the first of them")
        books = latest_books(self.warehouse.product_days("wallet_book_states", earlier))
        marks = self.warehouse.product_days("token_marks", earlier[-1:]).collect()
        return fingerprints(books, "position"), marks

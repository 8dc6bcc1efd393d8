"""What a lake day's ledger is made from: the day's swap legs and movements (the first day's with
every movement before it), the mint addresses of every day, and the books and marks the day
before left."""

import functools

import polars as pl

from assets.days import Segment
from assets.tables import fingerprints, storable
from assets.warehouse import Warehouse
from figures.ledger import latest_books, mint_wallets

LEDGER_INPUTS = ("swap_legs", "swaps", "pair_tokens", "transfers", "liquidity_events", "tokens")
# What a lake day's ledger is accounted from, stored at each day's end.
CARRIED = ("wallet_book_states", "token_marks")


class LedgerDays:
    """The lake's days as the wallet ledger is made from them, at the run's watermark."""

    def __init__(self, warehouse: Warehouse) -> None:
        self.warehouse = warehouse
        self.as_of = warehouse.clock()["as_of"]
        self.days = warehouse.lake().days_made("swaps")
        self.frames = warehouse.frames(("pair_tokens", "tokens"))

    @functools.cached_property
    def mints(self) -> pl.LazyFrame:
        """The mint addresses of every day: a day's transfers may not hold its token's
        deployment."""
        transfers = (self.warehouse.scan("transfers").filter(pl.col("block_time") <= self.as_of)
                     .select("chain_id", "token", "tx_hash", "from_address"))
        return mint_wallets(transfers, self.frames["tokens"]).collect().lazy()

    def inputs(self, segment: Segment) -> dict[str, pl.LazyFrame]:
        """A segment's ledger inputs (`Segment`: a day's hours): its swap legs, its swaps
        (where the legs' makers are found) and movements (`Warehouse.scan_day`: those since
        the day of swaps before it, the first day's with every one before it), and the lake's
        pools and tokens."""
        legs = self.warehouse.product_days("swap_legs", [segment.day])
        return {**self.frames, "swap_legs": segment.rows(legs),
                **{name: segment.rows(self.warehouse.scan_day(name, segment.day))
                   for name in ("swaps", "transfers", "liquidity_events")}}

    def carried(self, first: Segment) -> tuple[pl.LazyFrame | None, pl.DataFrame | None]:
        """What a run from the segment `first` is accounted from: the books stored at the end
        of each earlier day and of the earlier hours of its own, in order, unread
        (`stored_books` reads a day's positions of them), and the marks stored with the last
        of them (none before the first day's first hour)."""
        if first.day not in self.days:
            raise FileNotFoundError(f"the lake holds no swaps of {first.day}")
        earlier = self.days[:self.days.index(first.day)]
        missing = [f"{name} of {gone}" for name in CARRIED for gone in (
            earlier if not self.warehouse.exists(name)
            else sorted(set(earlier) - self.warehouse.files(name).keys()))]
        if missing:
            raise FileNotFoundError(
                f"{', '.join(missing)} not materialised, before {first.day}: materialise the "
                "wallet days from the first of them")
        files = {name: [path for day in earlier for path in self.warehouse.files(name)[day]]
                 + (self._hours_before(name, first) if first.hour else []) for name in CARRIED}
        if not files["wallet_book_states"]:
            return None, None
        return (self.warehouse.read(files["wallet_book_states"]),
                self.warehouse.read(files["token_marks"][-1:]).collect())

    def _hours_before(self, name: str, first: Segment) -> list[str]:
        """A product's files of `first`'s day before its hour."""
        begins = self.warehouse.hours(name, first.day)
        if first.hour not in begins:
            raise FileNotFoundError(f"{name} of {first.day} holds no file from "
                                    f"{first.hour:02d}:00: make the day whole")
        paths = self.warehouse.files(name)[first.day]
        return [path for path, hour in zip(paths, begins, strict=True) if hour < first.hour]


def stored_books(stored: pl.LazyFrame | None, touched: pl.Series) -> pl.DataFrame | None:
    """The books of the positions `touched` (`touched_positions`) as the stored days left them
    (`LedgerDays.carried`): each one's from the last day that touched it. Only those
    positions' rows are read into memory, not every position the lake has seen."""
    if stored is None:
        return None
    return fingerprints(latest_books(stored, storable(touched.to_frame())["position"]),
                        "position")

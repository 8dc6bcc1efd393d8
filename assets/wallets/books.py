"""How the wallet books are made: the stored ledger read a chain at a time (a big chain's
pieces each read and folded in a worker process), its folds beside it, each product written
and checked piece by piece. `wallet_books` runs these steps in order."""

import collections
import contextlib
import functools
import multiprocessing
import os
import queue
import threading
from collections.abc import Callable, Generator, Iterator, Set
from concurrent.futures import Future, ProcessPoolExecutor, ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any, TypeVar

import dagster as dg
import numpy as np
import polars as pl

from assets.checks import SCHEMA_CHECK, as_result, stored_outcome
from assets.tables import Tables, streamed
from assets.wallets.behaviour import TRAIT_INPUTS, wallet_traits
from assets.wallets.positions import (
    BOOK_INPUTS,
    Accounts,
    Owners,
    assemble_positions,
    assemble_rounds,
)
from assets.wallets.windows import assemble_windows
from assets.warehouse import Warehouse, materialized
from checks.outcome import combined
from checks.products import piece_outcome, rules_of
from core.fingerprints import keyed
from core.settings import whole_number
from figures.ledger import slots

T = TypeVar("T")
FOLDS = ("wallet_positions", "wallet_rounds", "wallet_traits", "wallet_windows")
# The tables the folds look up, each read once for every chain when a fold that reads it is
# asked for (a worker's piece: its chain's rows): (name, product, the columns read, folds that
# read it).
LOOKUPS = (("tokens", "token_rows",
            ("chain_id", "address", "symbol", "price_usd", "rating_score", "token_status"),
            ("wallet_positions", "wallet_windows")),
           ("pools", "pair_tokens", ("chain_id", "pair", "created_at"), ("wallet_traits",)))
# A fold mostly keeps one core busy: two run at once, beside the ledger's next chain.
FOLDING_THREADS = 2
# A chain of more ledger rows than this (CHAINTAPE_LEDGER_PIECE_ROWS) is folded in pieces of
# its wallets, each about this size, so a run holds a piece's folds whatever a chain trades;
# the traits, which follow each pool's swaps across wallets, are folded from the whole chain's
# few columns they read.
PIECE_ROWS = 1_000_000
# How often a folding process looks whether the run's process that started it is still there.
PARENT_LOOK_S = 1.0
# Pieces whose folds may be under way or waiting at once: the next is read only when fewer
# are, or every piece of the ledger would be read, and held, before the folds caught up.
PIECES_IN_FLIGHT = 2
# A big chain's pieces are read and folded in worker processes, each taking the next piece:
# what a piece's folds allocate and free stays in its worker, and the run's own process holds
# only the folds' rows on their way to the writers (folded in the run's process, the freed
# pages of piece after piece, kept for reuse, took it past 3 GB at 10M swaps a week).
FOLDING_PROCESSES = PIECES_IN_FLIGHT


class BooksRun:
    """One run of `wallet_books`: the products and checks asked for, the fold pieces on their
    way to their writers, and the threads that make, write and check them."""

    def __init__(self, context: dg.AssetExecutionContext, warehouse: Warehouse) -> None:
        self.warehouse = warehouse
        self.made = {key.path[-1]: key for key in context.selected_asset_keys}
        self.checked = {check.asset_key.path[-1]: check.asset_key
                        for check in context.selected_asset_check_keys}
        # Positions alone do not depend on the watermark: it is read only by what does.
        self.clock = functools.cache(warehouse.clock)
        self.folds = [name for name in FOLDS if name in self.made]
        self.pieces: dict[str, queue.SimpleQueue[Any]] = {
            name: queue.SimpleQueue() for name in self.folds}
        # Each product's check of each piece as it passes.
        self.outcomes: dict[str, list[Future[Any]]] = {
            name: [] for name in self.made.keys() & self.checked.keys()}
        self.tables: dict[str, pl.DataFrame | None] = {}
        self.writing: ThreadPoolExecutor
        self.folding: ThreadPoolExecutor
        self.checking: ThreadPoolExecutor
        self.workers: ProcessPoolExecutor | None = None

    def stored_checks(self) -> Iterator[dg.AssetCheckResult]:
        """The checks asked for without their product: of the stored product."""
        for name in self.checked.keys() - self.made.keys():
            yield as_result(stored_outcome(self.warehouse, name), self.checked[name],
                            SCHEMA_CHECK)

    @contextlib.contextmanager
    def threads(self) -> Iterator[None]:
        """The writers (one per fold), the folding threads and the checking thread."""
        with (ThreadPoolExecutor(max(1, len(self.folds))) as self.writing,
              ThreadPoolExecutor(FOLDING_THREADS) as self.folding,
              ThreadPoolExecutor(1) as self.checking):
            try:
                yield
            finally:
                if self.workers is not None:
                    self.workers.shutdown(cancel_futures=True)

    def read_lookups(self) -> None:
        """The tables the asked folds look up, read once for every chain."""
        self.tables = {name: self.warehouse.scan(table).select(columns).collect()
                       if self.made.keys() & set(by) else None
                       for name, table, columns, by in LOOKUPS}

    def start_writers(self) -> list[Future[dg.MaterializeResult]]:
        """Each fold's writer: it writes its product piece by piece as the pieces come."""
        return [self.writing.submit(self._write_fold, name) for name in self.folds]

    def fold_ledger(self) -> None:
        """The stored ledger read in pieces (`_pieces`: the next read while one is folded, and
        only while at most one other's folds are under way), each piece's folds started from
        it; then the writers are told the pieces ended, or, when reading or folding a piece
        failed, that the products are refused."""
        failure: BaseException | None = None
        started: collections.deque[list[Future[Any]]] = collections.deque()
        try:
            for ledger, folds in ahead(self._pieces()):
                started.append(self._start_folds(ledger, folds))
                del ledger
                while len(started) >= PIECES_IN_FLIGHT:
                    _failed_or_done(started.popleft())
            # A piece that failed fails every product, as a ledger that cannot be read does.
            while started:
                _failed_or_done(started.popleft())
        except BaseException as error:
            failure = error
            raise
        finally:
            for waiting in self.pieces.values():
                waiting.put(failure)

    def _pieces(self) -> Iterator[tuple["pl.DataFrame | Piece", set[str]]]:
        """The stored ledger in pieces, each with the folds made of it: a chain at a time (the
        empty ledger when there is none), or a chain of more than PIECE_ROWS rows as its
        traits' columns, then its wallets in pieces of about PIECE_ROWS rows for the rest,
        each of these named (`Piece`) for a worker process to read and fold."""
        version = self.warehouse.version("wallet_ledger")
        stored = self.warehouse.scan("wallet_ledger", version)
        folds = set(self.folds)
        books = folds - {"wallet_traits"}
        sizes = stored.group_by("chain_id").agg(rows=pl.len()).sort("chain_id").collect()
        if sizes.is_empty():
            yield stored.select(ledger_columns(folds)).collect(), folds
        for chain, rows in sizes.iter_rows():
            pieces = pieces_of(rows)
            if pieces == 1 or not books:
                yield (stored.filter(pl.col("chain_id") == chain)
                       .select(ledger_columns(folds)).collect(), folds)
                continue
            if "wallet_traits" in folds:
                yield Piece(version, chain, pieces, None), {"wallet_traits"}
            for piece in range(pieces):
                yield Piece(version, chain, pieces, piece), books

    def results(self, products: list[dg.MaterializeResult]
                ) -> Iterator[dg.MaterializeResult | dg.AssetCheckResult]:
        """Each product, then its check: the outcomes of all its pieces combined."""
        for product in products:
            yield product
            key = product.asset_key
            if key is not None and key.path[-1] in self.outcomes:
                name = key.path[-1]
                outcome = combined(name, [o.result() for o in self.outcomes[name]])
                if outcome.passed:
                    self.warehouse.passed(name, self.warehouse.files(name)[None],
                                          rules_of(name))
                yield as_result(outcome, key, SCHEMA_CHECK)

    def _write_fold(self, name: str) -> dg.MaterializeResult:
        return materialized(self.warehouse, name,
                            streamed(self._checked(name, _drained(self.pieces[name]))),
                            self.made[name])

    def _checked(self, name: str, frames: Iterator[pl.DataFrame]) -> Iterator[pl.DataFrame]:
        """A product's frames, each one's check started as it passes when it is asked for."""
        for frame in frames:
            if name in self.outcomes:
                self.outcomes[name].append(self.checking.submit(piece_outcome, name, frame))
            yield frame
            del frame

    def _start_folds(self, ledger: "pl.DataFrame | Piece", folds: set[str]
                     ) -> list[Future[Any]]:
        """The folds of one piece of the ledger started (a named piece's in a worker
        process), each handed to its product's writer; returns them."""
        if isinstance(ledger, Piece):
            return self._start_in_worker(ledger, folds)
        slot = slots(ledger)[0]
        accounts = Accounts.of(ledger, slot) if folds - {"wallet_traits"} else None
        futures = folds_of(self.folding, folds, ledger, slot, accounts, self.clock,
                           self.tables)
        for name in self.folds:
            if name in folds:
                self.pieces[name].put(futures[name])
        return [future for future in futures.values() if future is not None]

    def _start_in_worker(self, piece: "Piece", folds: set[str]) -> list[Future[Any]]:
        """A named piece read and folded in a worker process; each fold's rows handed to its
        product's writer as they come back."""
        if self.workers is None:
            # Spawned, not forked: a fork of a process running threads may copy a held lock.
            self.workers = ProcessPoolExecutor(
                FOLDING_PROCESSES, mp_context=multiprocessing.get_context("spawn"),
                initializer=exit_with, initargs=(os.getpid(),))
        as_of_s = self.clock()["as_of_s"] if folds & {"wallet_rounds", "wallet_windows"} \
            else None
        folded = self.workers.submit(fold_piece, (self.warehouse.lake_root, self.warehouse.root),
                                     piece, frozenset(folds), as_of_s)
        for name in self.folds:
            if name in folds:
                self.pieces[name].put(_taken_from(folded, name))
        return [folded]


def piece_rows() -> int:
    """The ledger rows of a piece (CHAINTAPE_LEDGER_PIECE_ROWS, by default PIECE_ROWS): what a
    folding process holds follows it."""
    return whole_number("CHAINTAPE_LEDGER_PIECE_ROWS", PIECE_ROWS, "rows")


def pieces_of(rows: int) -> int:
    """How many pieces of at most `piece_rows` ledger rows hold `rows` (one, for none)."""
    return max(1, -(-rows // piece_rows()))


def exit_with(parent: int) -> None:
    """In a folding process: exit once the run's process that started it is gone (killed, it
    cannot stop its folding processes, which would otherwise wait for work for ever)."""

    def look() -> None:
        while os.getppid() == parent:
            threading.Event().wait(PARENT_LOOK_S)
        os._exit(1)

    threading.Thread(target=look, name="parent", daemon=True).start()


def _failed_or_done(folds: list[Future[Any]]) -> None:
    """Wait for a piece's folds; the first one's failure raised."""
    for fold in folds:
        fold.result()


def ahead(items: Iterator[T]) -> Generator[T, None, None]:
    """The items of an iterator, each one made on a thread while the one before is used: a
    chain's ledger is read while the chain before is folded. At most one is
    made ahead; an error making one is raised where it would have come, and a reader that stops
    early waits only for the one under way."""
    with ThreadPoolExecutor(1) as making:
        coming = making.submit(next, items, _END)
        while (item := coming.result()) is not _END:
            coming = making.submit(next, items, _END)
            yield item
            del item


_END: Any = object()


def _drained(pieces: "queue.SimpleQueue[Any]") -> Iterator[pl.DataFrame]:
    """The fold pieces handed over, in order, each let go of once given; ends at None and
    fails at an error (the product is then not written)."""
    while not isinstance(piece := pieces.get(), BaseException | None):
        frame = piece.result()
        del piece
        yield frame
        del frame
    if piece is not None:
        raise RuntimeError("the wallet ledger failed before this fold was whole") from piece


def folds_of(folding: ThreadPoolExecutor, made: Set[str], ledger: pl.DataFrame,
             slot: np.ndarray, accounts: Accounts | None, clock: Callable[[], dict[str, Any]],
             tables: dict[str, pl.DataFrame | None]) -> dict[str, Future[Any] | None]:
    """The folds asked for of one piece of the ledger (each row's position number `slot`;
    the books' arrays `accounts` unless only the traits are asked for), started on the folding
    threads; folds others need are started when they are not asked for."""

    def needed(fold: Callable[[], Any], *by: str) -> Future[Any] | None:
        """`fold` started when a product in `by` is asked for."""
        return folding.submit(fold) if made & set(by) else None

    def result(future: Future[Any] | None) -> Any:
        assert future is not None  # started whenever what waits on it is
        return future.result()

    def table(name: str) -> pl.DataFrame:
        found = tables[name]
        assert found is not None  # read whenever a fold that looks it up is asked for
        return found

    def books() -> Accounts:
        assert accounts is not None  # made whenever a fold of the books is asked for
        return accounts

    # Every fold waits only on folds started before it, so two threads never both wait. The
    # longest chain (positions, then the window records) starts first.
    positions = needed(lambda: assemble_positions(ledger, table("tokens"), books()),
                       "wallet_positions", "wallet_windows")
    rounds = needed(lambda: assemble_rounds(ledger, clock()["as_of_s"], books()),
                    "wallet_rounds")
    owners = needed(lambda: Owners.of(ledger, slot), "wallet_traits", "wallet_windows")
    windows = needed(lambda: assemble_windows(
        ledger, clock()["as_of_s"], result(positions), books(), result(owners)),
        "wallet_windows")
    traits = needed(lambda: wallet_traits(ledger, table("pools"), slot, result(owners)),
                    "wallet_traits")
    return {"wallet_positions": positions, "wallet_rounds": rounds, "wallet_traits": traits,
            "wallet_windows": windows}


def ledger_columns(folds: Set[str]) -> list[str]:
    """The ledger's columns these folds read."""
    books = BOOK_INPUTS if folds - {"wallet_traits"} else ()
    traits = TRAIT_INPUTS if "wallet_traits" in folds else ()
    return list(dict.fromkeys((*books, *traits)))


@dataclass(frozen=True)
class Piece:
    """A piece of a big chain's stored ledger (at `version`), named for a worker process to
    read: its traits' columns whole (`piece` None), or the wallets whose key falls in piece
    `piece` of `pieces`."""

    version: int
    chain: int
    pieces: int
    piece: int | None

    def read(self, warehouse: Tables, folds: Set[str]) -> pl.DataFrame:
        """The piece's rows, with the columns these folds read."""
        of_chain = warehouse.scan("wallet_ledger", self.version).filter(
            pl.col("chain_id") == self.chain)
        if self.piece is None:
            return of_chain.select(ledger_columns(folds)).collect()
        # Streamed: the chain's rows pass a batch at a time, only the piece's kept.
        return (of_chain.filter(keyed("chain_id", "wallet") % self.pieces == self.piece)
                .select(ledger_columns(folds)).collect(engine="streaming"))


def fold_piece(where: tuple[str, str], piece: Piece, folds: Set[str],
               as_of_s: int | None) -> dict[str, pl.DataFrame]:
    """In a worker process: a piece of the ledger read from the warehouse (`where`: the lake's
    and the warehouse's roots), its folds made (`as_of_s`: the watermark, for the folds that
    read it) and returned, by product."""
    try:
        warehouse = Tables(*where)
        ledger = piece.read(warehouse, folds)
        tables = {name: warehouse.scan(table).filter(pl.col("chain_id") == piece.chain)
                  .select(columns).collect() if folds & set(by) else None
                  for name, table, columns, by in LOOKUPS}
        slot = slots(ledger)[0]
        accounts = Accounts.of(ledger, slot) if folds - {"wallet_traits"} else None
        with ThreadPoolExecutor(FOLDING_THREADS) as folding:
            futures = folds_of(folding, folds, ledger, slot, accounts,
                               lambda: {"as_of_s": as_of_s}, tables)
            return {name: future.result() for name, future in futures.items()
                    if name in folds and future is not None}
    except Exception as error:
        # Said in words the run's process can read: an error of a reader's own class (Delta's,
        # polars') may not cross back whole.
        raise RuntimeError(f"folding {piece} of the wallet ledger failed: "
                           f"{type(error).__name__}: {error}") from None


def _taken_from(folded: "Future[dict[str, pl.DataFrame]]", name: str) -> Future[pl.DataFrame]:
    """One product's rows of a piece folded in a worker, as a future of their own; a
    failure of the piece is the product's."""
    taken: Future[pl.DataFrame] = Future()

    def done(whole: "Future[dict[str, pl.DataFrame]]") -> None:
        if whole.cancelled():
            # Given up when the run failed: its writer ends on this rather than waiting.
            taken.set_exception(RuntimeError("the wallet ledger failed before this piece "
                                             "was folded"))
        elif (error := whole.exception()) is not None:
            taken.set_exception(error)
        else:
            taken.set_result(whole.result()[name])

    folded.add_done_callback(done)
    return taken

"""What the tails built on a snapshot read of it (`Basis`), prepared in a process of its own
(`preparer`), which imports only what the preparation needs: this module and what it reads."""

import multiprocessing
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass
from pathlib import Path

from core.handover import sent
from core.priority import as_batch
from core.store import ObjectStore
from publish.reader import Manifest, load_snapshot, table_parts
from tail.rows import READS, TRADE_COLUMNS, AtSnapshot


@dataclass(frozen=True)
class Basis:
    """A snapshot as the tails built on it read it: its manifest and what the live rows are
    made from (None when it lacks the tables)."""

    manifest: Manifest
    at: AtSnapshot | None


def basis_of(store: ObjectStore, snapshot_id: str) -> Basis:
    """Read a snapshot's manifest and make what its tails' live rows are made from."""
    snapshot = load_snapshot(store, snapshot_id, only=("pairs", "token_basis"))
    manifest = snapshot.manifest
    if not set(READS) <= set(manifest.tables):
        return Basis(manifest, None)
    trades = table_parts(store, manifest, "trades", TRADE_COLUMNS)
    return Basis(manifest, AtSnapshot.of(manifest.as_of, trades, snapshot.tables["pairs"],
                                         snapshot.tables["token_basis"]))


def prepared(store: ObjectStore, snapshot_id: str, directory: Path) -> bytes:
    """`basis_of` in the preparing process, handed over through files of `directory`
    (`core.handover`): the writer maps its frames rather than reading a copy of them."""
    return sent(basis_of(store, snapshot_id), directory)


def preparer() -> ProcessPoolExecutor:
    """A process of its own, at the batch's priority, where snapshots are prepared: the tails
    get the CPU first, and the preparation never holds the writer's interpreter. It ends after
    each snapshot (and the next is a new process), so what a preparation took is given back
    rather than held between snapshots."""
    return ProcessPoolExecutor(1, mp_context=multiprocessing.get_context("spawn"),
                               initializer=as_batch, max_tasks_per_child=1)

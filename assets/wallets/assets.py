"""Wallet products: the accounted ledger with its folds (positions, rounds, the metrics records
per window), funding and profiles."""

import functools
import queue
from collections.abc import Iterator, Set
from concurrent.futures import Future, ThreadPoolExecutor
from typing import TypeVar

import dagster as dg
import numpy as np
import polars as pl

from assets.checks import SCHEMA_CHECK, as_result, schema_check_spec, stored_outcome
from assets.domains import keys
from assets.wallets.behaviour import TRAIT_INPUTS, wallet_traits
from assets.wallets.funding import assemble_funding
from assets.wallets.ledger import ACCOUNTED, account, accounted, parted, stored
from assets.wallets.positions import (
    Accounts,
    Owners,
    assemble_positions,
    assemble_rounds,
)
from assets.wallets.profiles import RANKING_INPUTS, assemble_profiles, assemble_rankings
from assets.wallets.windows import assemble_windows
from assets.warehouse import Warehouse, materialized, streamed
from checks.outcome import combined
from checks.products import piece_outcome

GROUP = "wallets"
T = TypeVar("T")


LEDGER_INPUTS = ("swap_legs", "swaps", "pair_tokens", "transfers", "liquidity_events", "tokens")
FOLDS = ("wallet_positions", "wallet_rounds", "wallet_traits", "wallet_windows")


def _spec(name: str, deps: tuple[str, ...], description: str) -> dg.AssetSpec:
    return dg.AssetSpec([GROUP, name], group_name=GROUP, deps=keys(*deps),
                        description=description)


@dg.multi_asset(
    name="wallet_books",
    specs=[
        _spec("wallet_ledger", (*LEDGER_INPUTS, "as_of"),
              "Every swap and bare token movement of every wallet in chain order, with "
              "average-cost accounting: held, cost basis, realised profit, the cost a sell "
              "closed, and rounds."),
        _spec("wallet_positions", ("wallet_ledger", "token_rows"),
              "One row per wallet and token it swapped, every round averaged together, marked "
              "now."),
        _spec("wallet_rounds", ("wallet_ledger", "as_of"),
              "One row per round: from the first unit in to the last unit out of a position."),
        _spec("wallet_traits", ("wallet_ledger", "pair_tokens"),
              "What each wallet's own rows say about it: first seen and last active, peak "
              "capital, swaps by side, immediate round trips, entries and snipes, swaps in "
              "established pools, pools traded and hours of day: what the classifiers read."),
        _spec("wallet_windows", ("wallet_ledger", "token_rows", "as_of"),
              "Each wallet's metrics record per window ending at the lake's watermark (spec "
              "2.4): realised, unrealised, total and rated PNL, gross profit and loss, "
              "invested, volume, ROI, win rate with the rated-sample rule, trade win rate, "
              "median ROI, profit factor, average trade and hold, trade and position counts, "
              "and the three exclusion counts."),
    ],
    check_specs=[schema_check_spec(name, *keys(name)) for name in ("wallet_ledger", *FOLDS)],
    can_subset=True)
def wallet_books(context: dg.AssetExecutionContext, warehouse: Warehouse):
    """The accounted ledger and its folds (positions, rounds, traits, window records), each
    materialisable alone from the stored ledger. Made with the ledger, they are made a chain at
    a time (`accounted`): a chain's ledger is written as it is made, while its folds run from it
    in memory, two at a time (a fold mostly keeps one core busy), and the next chain is
    accounted. Each fold's product is written a chain at a time too, by its own writer, so a
    run holds a chain's folds, not the week's. The window records fold the positions' standing
    in, made in memory when positions are not asked for. Each product is checked against its
    schema of record a chain at a time as it is made (no rule spans two chains), rather than
    read back whole: a check asked for without its product checks the stored one."""
    made = {key.path[-1]: key for key in context.selected_asset_keys}
    checked = {check.asset_key.path[-1]: check.asset_key
               for check in context.selected_asset_check_keys}
    for name in checked.keys() - made.keys():
        yield as_result(stored_outcome(warehouse, name), checked[name], SCHEMA_CHECK)
    if not made:
        return
    # Positions alone do not depend on the watermark: it is read only by what does.
    clock = functools.cache(warehouse.clock)
    folds = [name for name in FOLDS if name in made]
    # The tables the folds look up, read once for every chain.
    tables = {name: warehouse.scan(table).collect() if made.keys() & set(by) else None
              for name, table, by in (
                  ("tokens", "token_rows", ("wallet_positions", "wallet_windows")),
                  ("pools", "pair_tokens", ("wallet_traits",)))}
    pieces = {name: queue.SimpleQueue() for name in folds}
    # Each product's check of each piece, on a thread of their own beside the folds.
    outcomes: dict[str, list[Future]] = {name: [] for name in made.keys() & checked.keys()}
    with (ThreadPoolExecutor(max(1, len(folds))) as writing,
          ThreadPoolExecutor(2) as folding, ThreadPoolExecutor(1) as checking):

        def checking_each(name: str, frames: Iterator[pl.DataFrame]) -> Iterator[pl.DataFrame]:
            """The frames of a product, each one's check started as it passes when the
            product's check is asked for."""
            for frame in frames:
                if name in outcomes:
                    outcomes[name].append(checking.submit(piece_outcome, name, frame))
                yield frame
                del frame

        results = [writing.submit(lambda name=name: materialized(
            warehouse, name, streamed(checking_each(name, _drained(pieces[name]))),
            made[name])) for name in folds]

        def started(ledger: pl.DataFrame, accounts: Accounts) -> None:
            """A piece of the ledger's folds started, each handed to its product's writer."""
            futures = _folded(folding, made.keys(), ledger, accounts, clock, tables)
            for name in folds:
                pieces[name].put(futures[name])

        def folded(parts: Iterator[tuple[pl.DataFrame, np.ndarray]]) -> Iterator[pl.DataFrame]:
            """Each chain's ledger as stored, its folds started from it whole as it passes."""
            for ledger, slot in parts:
                started(ledger, Accounts.of(ledger, slot))
                yield stored(ledger)

        written, outcome = None, None
        try:
            if "wallet_ledger" in made:
                # Each chain's ledger is written as it is made, the next one accounted
                # meanwhile, and let go of once its folds are.
                chains = ahead(accounted(warehouse.frames(LEDGER_INPUTS), clock()["as_of"]))
                written = materialized(warehouse, "wallet_ledger", streamed(checking_each(
                    "wallet_ledger", folded(chains))), made["wallet_ledger"])
            else:
                # The stored ledger keeps no working columns: its rows are accounted again.
                reads = (*ACCOUNTED, *(TRAIT_INPUTS if "wallet_traits" in made else ()))
                ledger, slot = parted(account(warehouse.scan("wallet_ledger").select(reads)
                                              .collect()))
                started(ledger, Accounts.of(ledger, slot))
        except BaseException as error:
            outcome = error
            raise
        finally:
            # The writers end their products, or, when the ledger failed, refuse them.
            for waiting in pieces.values():
                waiting.put(outcome)
        products = ([written] if written is not None else []) + [r.result() for r in results]
    for product in products:
        yield product
        name = product.asset_key.path[-1]
        if name in outcomes:
            yield as_result(combined(name, [o.result() for o in outcomes[name]]),
                            product.asset_key, SCHEMA_CHECK)


def ahead(items: Iterator[T]) -> Iterator[T]:
    """The items of an iterator, each one made on a thread while the one before is used: a
    chain's ledger is accounted while the chain before is written and folded. At most one is
    made ahead; an error making one is raised where it would have come, and a reader that stops
    early waits only for the one under way."""
    with ThreadPoolExecutor(1) as making:
        coming = making.submit(next, items, _END)
        while (item := coming.result()) is not _END:
            coming = making.submit(next, items, _END)
            yield item
            del item


_END = object()


def _drained(pieces: queue.SimpleQueue) -> Iterator[pl.DataFrame]:
    """The fold pieces handed over, in order, each let go of once given; ends at None and
    fails at an error (the product is then not written)."""
    while not isinstance(piece := pieces.get(), BaseException | None):
        frame = piece.result()
        del piece
        yield frame
        del frame
    if piece is not None:
        raise RuntimeError("the wallet ledger failed before this fold was whole") from piece


def _folded(folding: ThreadPoolExecutor, made: Set[str], ledger: pl.DataFrame,
            accounts: Accounts, clock, tables: dict[str, pl.DataFrame | None]
            ) -> dict[str, Future]:
    """The folds asked for of one piece of the ledger, started on the folding threads; folds
    others need are started when they are not asked for."""

    def needed(fold, *by: str) -> Future | None:
        """`fold` started when a product in `by` is asked for."""
        return folding.submit(fold) if made & set(by) else None

    # Every fold waits only on folds started before it, so two threads never both wait. The
    # longest chain (positions, then the window records) starts first.
    positions = needed(lambda: assemble_positions(ledger, tables["tokens"], accounts),
                       "wallet_positions", "wallet_windows")
    rounds = needed(lambda: assemble_rounds(ledger, clock()["as_of_s"], accounts),
                    "wallet_rounds")
    owners = needed(lambda: Owners.of(ledger, accounts.slot), "wallet_traits", "wallet_windows")
    windows = needed(lambda: assemble_windows(
        ledger, clock()["as_of_s"], positions.result(), accounts, owners.result()),
        "wallet_windows")
    traits = needed(lambda: wallet_traits(ledger, tables["pools"], accounts.slot,
                                          owners.result()), "wallet_traits")
    return {"wallet_positions": positions, "wallet_rounds": rounds, "wallet_traits": traits,
            "wallet_windows": windows}


@dg.asset(key_prefix=GROUP, group_name=GROUP,
          deps=keys("transfers", "chains", "tokens", "quote_prices", "as_of"))
def wallet_funding(warehouse: Warehouse) -> dg.MaterializeResult:
    """Every native-token transfer into a wallet, priced: who funded it and when."""
    frame = assemble_funding(warehouse.frames(("transfers", "chains", "tokens",
                                               "quote_prices")), warehouse.clock()["as_of"])
    return materialized(warehouse, "wallet_funding", frame)


@dg.asset(key_prefix=GROUP, group_name=GROUP,
          deps=keys("wallet_traits", "wallet_windows", "wallet_funding", "pair_tokens",
                     "pair_risk", "tokens", "address_labels", "chain_records"))
def wallet_profiles(warehouse: Warehouse) -> dg.MaterializeResult:
    """Every wallet's profile: type, tier, labels, scores and signals, cluster, first and last
    activity (its metrics records are the wallet's ranking rows)."""
    parts = {
        "pair_tokens": warehouse.scan("pair_tokens").collect(),
        "traits": warehouse.scan("wallet_traits").collect(),
        "windows": warehouse.scan("wallet_windows").collect(),
        "funding": warehouse.scan("wallet_funding").collect(),
        "pair_risk": warehouse.scan("pair_risk").collect(),
        "tokens": warehouse.scan("tokens").collect(),
        "labels": warehouse.scan("address_labels").collect(),
        "chains": warehouse.scan("chain_records").select("chain_id", "slug").collect(),
    }
    frame = assemble_profiles(parts)
    return materialized(warehouse, "wallet_profiles", frame.drop(
        pl.selectors.by_dtype(pl.List, pl.Struct) - pl.selectors.by_name("head")))


@dg.asset(key_prefix=GROUP, group_name=GROUP, deps=keys("wallet_profiles", "wallet_windows"))
def wallet_rankings(warehouse: Warehouse) -> dg.MaterializeResult:
    """One ranking row per wallet and window: what GET /wallets filters and sorts on, that
    window's metrics, and the wallet's parts of the list item (spec 2.5)."""
    profiles = warehouse.scan("wallet_profiles").select(RANKING_INPUTS).collect()
    frame = assemble_rankings(profiles, warehouse.scan("wallet_windows").collect())
    return materialized(warehouse, "wallet_rankings", frame)

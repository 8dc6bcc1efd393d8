"""Positions (one row per wallet and token it swapped, every round averaged together) and rounds
(one row per cycle from the first unit in to the last unit out): folds of the accounted ledger,
each one pass over its rows in chain order."""

from typing import Any, NamedTuple

import numba
import numpy as np
import polars as pl

from assets.folds import by_field
from core.fingerprints import first_indices, first_rows, keyed, numbered
from figures.ledger import BUY, POSITION, SELL, side_codes, slots
from publish.wallets import marked

COUNTS = ("buys", "sells", "transfers_in", "transfers_out")
# A group's sums, in the order `_fold` gives them: quantities and money swapped (a notional
# without a USD price adds nothing), the priced quantities the average prices divide by, and the
# accounting.
SUMS = ("bought_qty", "sold_qty", "bought_usd", "sold_usd", "_priced_in", "_priced_out",
        "cost_in_usd", "realized_usd", "cost_closed_usd")


# The ledger's columns the books (positions, rounds) are folded from.
BOOK_INPUTS = ("position", *POSITION, "side", "qty", "notional_usd", "cost_in_usd",
               "realized_usd", "cost_closed_usd", "held", "cost", "incomplete", "opens",
               "closes", "ts", "round_opened_at", "round")


class Accounts(NamedTuple):
    """The ledger's columns the folds read, as arrays (a null notional is NaN), with each
    row's position number and how many positions there are: made once for every fold."""

    slot: np.ndarray
    positions: int
    side: np.ndarray
    qty: np.ndarray
    notional: np.ndarray
    cost_in: np.ndarray
    realized: np.ndarray
    cost_closed: np.ndarray
    held: np.ndarray
    cost: np.ndarray
    incomplete: np.ndarray
    opens: np.ndarray
    closes: np.ndarray
    ts: np.ndarray
    opened_at: np.ndarray
    round: np.ndarray

    @classmethod
    def of(cls, ledger: pl.DataFrame, slot: np.ndarray | None = None) -> "Accounts":
        """The arrays of `ledger`; `slot` is each row's position number (`slots`) when the
        caller has it."""
        slot, positions = slots(ledger) if slot is None else (slot, int(slot.max(initial=-1)) + 1)
        return cls(slot, positions, side_codes(ledger["side"]), ledger["qty"].to_numpy(),
                   ledger["notional_usd"].fill_null(np.nan).to_numpy(),
                   *(ledger[c].to_numpy() for c in (
                       "cost_in_usd", "realized_usd", "cost_closed_usd", "held", "cost",
                       "incomplete", "opens", "closes", "ts", "round_opened_at", "round")))


class Owners(NamedTuple):
    """Each position's first row and the number of the wallet holding it (wallets numbered from
    0 in the order of their first rows), and how many wallets there are."""

    first: np.ndarray
    wallet: np.ndarray
    wallets: int

    @classmethod
    def of(cls, ledger: pl.DataFrame, slot: np.ndarray) -> "Owners":
        """From the ledger's rows and each row's position number (`slots`)."""
        first = first_indices(slot, int(slot.max(initial=-1)) + 1)
        wallet, wallets = numbered(ledger.select(keyed("chain_id", "wallet").gather(first))
                                   .to_series().to_numpy())
        return cls(first, wallet, wallets)


# A group's state in `_fold`: one row of floats per group, so that a ledger row's update touches
# a few neighbouring cache lines rather than a line in each of twenty arrays (counts and instants
# stay exact as floats below 2^53). Its fields, in order:
FOLDED = (*COUNTS, *SUMS, "_priced_swaps", "held", "open_cost_usd", "basis_is_incomplete",
          "_opened", "opened_at", "first_trade_at", "last_trade_at", "closed_at",
          "closed_by_sell")
(_BOUGHT_QTY, _BOUGHT_USD, _PRICED_IN, _COST_IN, _REALIZED, _COST_CLOSED, _PRICED_SWAPS, _HELD,
 _OPEN_COST, _INCOMPLETE, _OPENED, _OPENED_AT, _FIRST_TRADE, _LAST_TRADE, _CLOSED_AT,
 _BY_SELL) = (FOLDED.index(name) for name in (
    "bought_qty", "bought_usd", "_priced_in", "cost_in_usd", "realized_usd", "cost_closed_usd",
    "_priced_swaps", "held", "open_cost_usd", "basis_is_incomplete", "_opened", "opened_at",
    "first_trade_at", "last_trade_at", "closed_at", "closed_by_sell"))
FOLDED_TYPES: dict[Any, Any] = {**dict.fromkeys(("opened_at", "first_trade_at", "last_trade_at", "closed_at"),
                                pl.Int64),
                **dict.fromkeys((*COUNTS, "_priced_swaps", "_opened"), pl.UInt32),
                **dict.fromkeys(("basis_is_incomplete", "closed_by_sell"), pl.Boolean)}


@numba.njit(cache=True, nogil=True)
def _fold(group, groups, accounts):
    """Every group's first row and its state (FOLDED, a row per group), for groups numbered in
    the order of their first rows, over the ledger's rows (`accounts`): counts per side, sums
    (a notional without a USD price adds nothing), the last holding and cost, whether any row
    made the basis incomplete, rounds opened, the first row's round start, the first and last
    swap, and the last close (-1 for none of these instants)."""
    first = first_indices(group, groups)
    state = np.zeros((groups, len(FOLDED)))
    for each in range(len(first)):
        state[each, _FIRST_TRADE] = state[each, _LAST_TRADE] = state[each, _CLOSED_AT] = -1.0
        state[each, _OPENED_AT] = accounts.opened_at[first[each]]
    for row in range(len(group)):
        mine, side = state[group[row]], accounts.side[row]
        mine[side] += 1  # FOLDED opens with the count of each side, by its code
        if side <= SELL:  # a swap: the swap sides come first
            out = 1 if side == SELL else 0
            qty, notional = accounts.qty[row], accounts.notional[row]
            mine[_BOUGHT_QTY + out] += qty
            if not np.isnan(notional):
                mine[_BOUGHT_USD + out] += notional
                mine[_PRICED_IN + out] += qty
                mine[_PRICED_SWAPS] += 1
            at = accounts.ts[row]
            mine[_FIRST_TRADE] = at if mine[_FIRST_TRADE] < 0 else min(mine[_FIRST_TRADE], at)
            mine[_LAST_TRADE] = max(mine[_LAST_TRADE], at)
        mine[_COST_IN] += accounts.cost_in[row]
        mine[_REALIZED] += accounts.realized[row]
        mine[_COST_CLOSED] += accounts.cost_closed[row]
        mine[_HELD], mine[_OPEN_COST] = accounts.held[row], accounts.cost[row]
        if accounts.incomplete[row]:
            mine[_INCOMPLETE] = 1.0
        mine[_OPENED] += accounts.opens[row]
        if accounts.closes[row]:
            mine[_CLOSED_AT] = max(mine[_CLOSED_AT], accounts.ts[row])
            if side == SELL:
                mine[_BY_SELL] = 1.0
    return first, state


def _folded(accounts: Accounts, group: np.ndarray, groups: int,
            opened_only: bool = False) -> pl.DataFrame:
    """One row per group that swapped (and, when `opened_only`, opened a round), in the order
    of their first rows: `_row` (the first row), counts, sums and the accounting (the columns
    both positions and rounds show)."""
    first, state = _fold(group, groups, accounts)
    # Only the groups shown are copied out: no frame of them all is made to be filtered.
    shown = state[:, BUY] + state[:, SELL] > 0
    if opened_only:
        shown &= state[:, _OPENED] > 0
    rows = np.flatnonzero(shown)
    first, state = first[rows], by_field(state, rows)
    instants = ("first_trade_at", "last_trade_at", "closed_at")
    return (pl.DataFrame({"_row": first, **dict(zip(FOLDED, state, strict=True))})
            .with_columns(pl.when(pl.col(*instants) >= 0).then(pl.col(*instants)))
            .cast(FOLDED_TYPES))


def _prices() -> dict[str, pl.Expr]:
    def ratio(usd: str, qty: str) -> pl.Expr:
        return pl.when(pl.col(qty) > 0).then(pl.col(usd) / pl.col(qty))

    return {"avg_entry_price_usd": ratio("bought_usd", "_priced_in"),
            "avg_exit_price_usd": ratio("sold_usd", "_priced_out"),
            "realized_roi": pl.when(pl.col("cost_closed_usd") > 0)
            .then(pl.col("realized_usd") / pl.col("cost_closed_usd")).otherwise(0.0)}


HELPERS = ("_priced_in", "_priced_out", "_priced_swaps", "_opened")


def book_positions(ledger: pl.DataFrame, accounts: Accounts | None = None) -> pl.DataFrame:
    """Every token a wallet swapped, lifetime, as its own rows make it: flows, the open holding
    and its cost, realised profit. Nothing here moves with a price: a position changes only
    when its wallet's ledger does.

    A position is tracked when at least one of its swaps had a USD price; an untracked one
    realises nothing. Tokens that only ever moved by transfer are no position."""
    accounts = Accounts.of(ledger) if accounts is None else accounts
    folded = (_folded(accounts, accounts.slot, accounts.positions)
              .rename({"_opened": "rounds"}).drop("opened_at", "closed_at", "closed_by_sell"))
    return (first_rows(ledger, folded, ("position", *POSITION))
        .with_columns(tracked=pl.col("_priced_swaps") > 0, is_open=pl.col("held") > 0,
                      **_prices())
        .with_columns(realized_usd=pl.when("tracked").then("realized_usd").otherwise(0.0))
        .drop(*HELPERS[:3]))


def assemble_positions(ledger: pl.DataFrame, tokens: pl.DataFrame,
                       accounts: Accounts | None = None) -> pl.DataFrame:
    """Every token a wallet swapped, lifetime (`book_positions`), the open holding marked at
    the token's price (`marked`: zero for a condemned token, whatever its score), realised,
    unrealised and total."""
    return marked(book_positions(ledger, accounts), tokens)


@numba.njit(cache=True, nogil=True)
def _round_groups(slot, rnd, positions):
    """Each row's round as a number from 0, in the order of the rounds' first rows (a
    position's rounds only rise along its rows), and how many rounds there are. The rows in no
    round (-1) between two rounds are a group of their own, which opens nothing."""
    current, number = np.full(positions, -2, np.int64), np.empty(positions, np.int64)
    group, total = np.empty(len(slot), np.int64), 0
    for row in range(len(slot)):
        position = slot[row]
        if rnd[row] != current[position]:
            current[position], number[position] = rnd[row], total
            total += 1
        group[row] = number[position]
    return group, total


def assemble_rounds(ledger: pl.DataFrame, as_of_s: int,
                    accounts: Accounts | None = None) -> pl.DataFrame:
    """Every round of every position: opened and closed (null while open), flows, realised
    profit over the cost it closed, and how long it was held (to the watermark while open)."""
    accounts = Accounts.of(ledger) if accounts is None else accounts
    group, groups = _round_groups(accounts.slot, accounts.round, accounts.positions)
    folded = _folded(accounts, group, groups, opened_only=True).drop("first_trade_at",
                                                                     "last_trade_at")
    return (first_rows(ledger, folded, (*POSITION, "round"))
        .with_columns(
            is_open=pl.col("closed_at").is_null(),
            hold_seconds=pl.coalesce("closed_at", pl.lit(as_of_s)) - pl.col("opened_at"),
            **_prices())
        .drop(*HELPERS))

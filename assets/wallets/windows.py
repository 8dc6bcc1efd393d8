"""Each wallet's metrics record per window (spec 2.4): a fold of the accounted ledger into each
position's flows inside every window, then of a wallet's positions into its records.

A position counts in a window when it swapped there. It is rated when it is tracked (some swap
had a USD price) and a sell in the window gave it an outcome; bought-only ones have no outcome
yet. Realised figures and wins count for tracked positions only; unrealised profit is a counted
position's open holding marked now. A wallet with nothing in a window (no swap, no transfer) has
no record for it."""

import numba
import numpy as np
import polars as pl

from assets.folds import by_field
from assets.wallets.positions import Accounts, Owners
from core.vocabulary import MIN_RATED_POSITIONS, WALLET_WINDOW_SECONDS, WALLET_WINDOWS
from figures.ledger import BUY, SELL

# A position's flows in one band of time, in the order `_banded` keeps them.
FLOWS = ("swaps", "sells", "transfers", "invested", "volume", "realized", "cost_closed",
         "gross_profit", "gross_loss", "winning", "losing", "closed_rounds", "held_for")
(_SWAPS, _SELLS, _TRANSFERS, _INVESTED, _VOLUME, _REALIZED, _COST_CLOSED, _GROSS_PROFIT,
 _GROSS_LOSS, _WINNING, _LOSING, _CLOSED_ROUNDS, _HELD_FOR) = range(len(FLOWS))
# A record's sums and counts, in the order `_windowed` gives them.
SUMS = ("realized_pnl_usd", "unrealized_pnl_usd", "rated_pnl_usd", "gross_profit_usd",
        "gross_loss_usd", "invested_usd", "volume_usd", "cost_closed_usd", "held_for")
COUNTS = ("active", "trades", "winning_trades", "losing_trades", "tokens_traded",
          "closed_positions", "open_positions", "rated_positions", "winning_positions",
          "excluded_transfer_only", "excluded_untracked", "excluded_no_outcome",
          "closed_rounds")
(_S_REALIZED, _S_UNREALIZED, _S_RATED, _S_PROFIT, _S_LOSS, _S_INVESTED, _S_VOLUME,
 _S_COST_CLOSED, _S_HELD_FOR) = range(len(SUMS))
(_C_ACTIVE, _C_TRADES, _C_WINNING, _C_LOSING, _C_TOKENS, _C_CLOSED, _C_OPEN, _C_RATED,
 _C_WINNERS, _C_TRANSFER_ONLY, _C_UNTRACKED, _C_NO_OUTCOME, _C_ROUNDS) = range(len(COUNTS))
# A record's stored columns, after its wallet and window.
RECORD = ("realized_pnl_usd", "unrealized_pnl_usd", "total_pnl_usd", "rated_pnl_usd",
          "gross_profit_usd", "gross_loss_usd", "invested_usd", "volume_usd", "cost_closed_usd",
          "roi", "win_rate", "trade_win_rate", "median_roi", "profit_factor", "avg_trade_usd",
          "avg_hold_seconds", "trades", "winning_trades", "losing_trades", "tokens_traded",
          "closed_positions", "open_positions", "rated_positions", "winning_positions",
          "excluded_transfer_only", "excluded_untracked", "excluded_no_outcome")


def assemble_windows(ledger: pl.DataFrame, as_of_s: int, positions: pl.DataFrame,
                     accounts: Accounts | None = None,
                     owners: Owners | None = None) -> pl.DataFrame:
    """One metrics record per wallet and window ending at the watermark that it was active in:
    realised, unrealised, total and rated PNL, gross profit and loss, invested, volume, ROI, win
    rate with the rated-sample rule, trade win rate, median ROI, profit factor, average trade
    and hold, trade and position counts, and the three exclusion counts. `positions` gives each
    position's standing (tracked, open, unrealised). Wallets come in the order of their first
    rows, each one's windows in order."""
    rows = Accounts.of(ledger) if accounts is None else accounts
    first, wallet, wallets = Owners.of(ledger, rows.slot) if owners is None else owners
    standing = ledger.select(pl.col("position").gather(first)).join(
        positions.select("position", "tracked", "is_open", "unrealized_usd"),
        on="position", how="left", maintain_order="left")
    row, starts = _grouped(wallet, wallets)
    flows, present = _banded(rows, row, bands(rows.ts, as_of_s), len(WALLET_WINDOWS))
    windows = len(WALLET_WINDOWS)
    kept, sums, counts, median = _windowed(
        flows, present, starts, windows,
        *(_by_row(standing[c].fill_null(v).to_numpy(), row) for c, v in
          (("tracked", False), ("is_open", False), ("unrealized_usd", 0.0))))
    wallet_first = _by_row(first, row)[starts[:-1]]
    return (ledger.select(pl.col("chain_id", "wallet").gather(wallet_first[kept // windows]))
            .with_columns(window=pl.Series(WALLET_WINDOWS)[kept % windows],
                          **{name: sums[i] for i, name in enumerate(SUMS)},
                          **{name: pl.Series(counts[i], dtype=pl.Int32)
                             for i, name in enumerate(COUNTS)},
                          median_roi=median)
            .with_columns(**_ratios()).select("chain_id", "wallet", "window", *RECORD))


def bands(ts: np.ndarray, as_of_s: int) -> np.ndarray:
    """Each row's band: the shortest wallet window holding it (windows nest)."""
    band = np.full(len(ts), len(WALLET_WINDOW_SECONDS) - 1, np.int8)
    for index, seconds in reversed(list(enumerate(WALLET_WINDOW_SECONDS.values()))):
        if seconds is not None:
            band[ts > as_of_s - seconds] = index
    return band


def _ratios() -> dict[str, pl.Expr]:
    """A record's ratios from its sums and counts: a ratio over nothing is 0, but for the
    profit factor, null when there is no loss to divide by."""
    def ratio(over: str, under: str, otherwise: float | None = 0.0) -> pl.Expr:
        return pl.when(pl.col(under) > 0).then(pl.col(over) / pl.col(under)).otherwise(otherwise)

    exits = pl.col("winning_trades") + pl.col("losing_trades")
    return {
        "total_pnl_usd": pl.col("realized_pnl_usd") + pl.col("unrealized_pnl_usd"),
        "roi": ratio("realized_pnl_usd", "cost_closed_usd"),
        "win_rate": pl.when(pl.col("rated_positions") >= MIN_RATED_POSITIONS)
        .then(pl.col("winning_positions") / pl.col("rated_positions")).otherwise(0.0),
        "trade_win_rate": pl.when(exits > 0).then(pl.col("winning_trades") / exits)
        .otherwise(0.0),
        "profit_factor": ratio("gross_profit_usd", "gross_loss_usd", None),
        "avg_trade_usd": ratio("volume_usd", "trades"),
        "avg_hold_seconds": ratio("held_for", "closed_rounds"),
    }


@numba.njit(cache=True, nogil=True)
def _grouped(wallet, wallets):
    """Positions grouped by wallet, each wallet's in their own order: each position's row in
    that grouping, and where each wallet's rows start (plus the end)."""
    starts = np.zeros(wallets + 1, np.int64)
    for position in range(len(wallet)):
        starts[wallet[position] + 1] += 1
    for each in range(wallets):
        starts[each + 1] += starts[each]
    row, at = np.empty(len(wallet), np.int64), starts[:-1].copy()
    for position in range(len(wallet)):
        row[position] = at[wallet[position]]
        at[wallet[position]] += 1
    return row, starts


def _by_row(values: np.ndarray, row: np.ndarray) -> np.ndarray:
    """Per-position values laid out by each position's row in the wallet grouping."""
    out = np.empty_like(values)
    out[row] = values
    return out


@numba.njit(cache=True, nogil=True)
def _banded(accounts, row, band, windows):
    """Each position's FLOWS per band its ledger rows (`accounts`) are in (the shortest window
    holding a row; `row` is each position's row in the wallet grouping): a row
    of floats per position and band present, positions in the wallet grouping's order, each
    one's bands in order; and which of a position's bands are present (at its row in the
    grouping times `windows` plus the band). A week's positions are nearly all in only one or
    two of the five bands: laid out densely, the flows took four times the memory."""
    present = np.zeros(len(row) * windows, np.bool_)
    # Each row's place in the flows, worked out a step at a time: each step's lookups are
    # independent of one another, so their cache misses overlap (chained in one loop, a row
    # would wait on three in turn).
    slot = accounts.slot
    at_of = np.empty(len(slot), np.int64)
    for each in range(len(slot)):
        at_of[each] = row[slot[each]] * windows + band[each]
        present[at_of[each]] = True
    place = np.cumsum(present.astype(np.int64)) - 1
    for each in range(len(slot)):
        at_of[each] = place[at_of[each]]
    state = np.zeros((place[-1] + 1 if len(place) else 0, len(FLOWS)))
    for each in range(len(slot)):
        side, realized = accounts.side[each], accounts.realized[each]
        flows = state[at_of[each]]
        notional = accounts.notional[each]
        paid = 0.0 if np.isnan(notional) else notional
        if side <= SELL:  # a swap: the swap sides come first
            flows[_SWAPS] += 1
            flows[_VOLUME] += paid
        else:
            flows[_TRANSFERS] += 1
        if side == BUY:
            flows[_INVESTED] += paid
        flows[_REALIZED] += realized
        flows[_COST_CLOSED] += accounts.cost_closed[each]
        if side == SELL:
            flows[_SELLS] += 1
            if realized > 0:
                flows[_GROSS_PROFIT] += realized
                flows[_WINNING] += 1
            elif realized < 0:
                flows[_GROSS_LOSS] -= realized
                flows[_LOSING] += 1
            if accounts.closes[each]:
                flows[_CLOSED_ROUNDS] += 1
                flows[_HELD_FOR] += accounts.ts[each] - accounts.opened_at[each]
    return state, present


@numba.njit(cache=True, nogil=True)
def _windowed(flows, present, starts, windows, tracked, is_open, unrealized):
    """Per wallet and window with activity: the record's place (wallet times `windows` plus
    window), its SUMS and COUNTS (one array each) and its median ROI over rated positions that
    closed cost (0 for none). A window's flows are its band's and the shorter ones'."""
    wallets, fields = len(starts) - 1, len(FLOWS)
    sums = np.zeros((wallets * windows, len(SUMS)))
    counts = np.zeros((wallets * windows, len(COUNTS)), np.int64)
    median, active = np.zeros(wallets * windows), np.zeros(wallets * windows, np.bool_)
    widest = max(1, np.max(starts[1:] - starts[:-1])) if wallets else 1
    rois, rated_rois = np.empty((windows, widest)), np.zeros(windows, np.int64)
    flow = np.empty(fields)
    at = 0  # the next row of flows: positions and their bands come in the order `_banded` laid out
    for owner in range(wallets):
        rated_rois[:] = 0
        for position in range(starts[owner], starts[owner + 1]):
            on, flow[:] = tracked[position], 0.0
            for window in range(windows):
                record = owner * windows + window
                if present[position * windows + window]:
                    for field in range(fields):
                        flow[field] += flows[at, field]
                    at += 1
                swapped, sells, transfers = flow[_SWAPS] > 0, flow[_SELLS], flow[_TRANSFERS]
                realized = flow[_REALIZED] if on else 0.0
                cost_closed = flow[_COST_CLOSED] if on else 0.0
                open_pnl = unrealized[position] if swapped else 0.0
                counts[record, _C_ACTIVE] += flow[_SWAPS] + transfers
                counts[record, _C_TRADES] += flow[_SWAPS]
                counts[record, _C_ROUNDS] += flow[_CLOSED_ROUNDS]
                sums[record, _S_REALIZED] += realized
                sums[record, _S_UNREALIZED] += open_pnl
                sums[record, _S_INVESTED] += flow[_INVESTED]
                sums[record, _S_VOLUME] += flow[_VOLUME]
                sums[record, _S_COST_CLOSED] += cost_closed
                sums[record, _S_HELD_FOR] += flow[_HELD_FOR]
                if on:
                    sums[record, _S_PROFIT] += flow[_GROSS_PROFIT]
                    sums[record, _S_LOSS] += flow[_GROSS_LOSS]
                    counts[record, _C_WINNING] += flow[_WINNING]
                    counts[record, _C_LOSING] += flow[_LOSING]
                if swapped:
                    counts[record, _C_TOKENS] += 1
                    counts[record, _C_OPEN if is_open[position] else _C_CLOSED] += 1
                    if not on:
                        counts[record, _C_UNTRACKED] += 1
                    elif sells == 0:
                        counts[record, _C_NO_OUTCOME] += 1
                    else:
                        sums[record, _S_RATED] += realized + open_pnl
                        counts[record, _C_RATED] += 1
                        counts[record, _C_WINNERS] += realized > 0
                        if cost_closed > 0:
                            rois[window, rated_rois[window]] = realized / cost_closed
                            rated_rois[window] += 1
                elif transfers > 0:
                    counts[record, _C_TRANSFER_ONLY] += 1
        for window in range(windows):
            record = owner * windows + window
            active[record] = counts[record, _C_ACTIVE] > 0
            rated = rated_rois[window]
            if rated:
                # Sorted in place: np.median would copy each wallet's few values first.
                rois[window, :rated].sort()
                median[record] = (rois[window, (rated - 1) // 2] + rois[window, rated // 2]) / 2
    kept = np.flatnonzero(active)
    return kept, by_field(sums, kept), by_field(counts, kept), median[kept]

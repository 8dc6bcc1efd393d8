"""The wallet ledger: every swap and bare token movement of every wallet, in chain order, with
average-cost accounting per wallet and token (held, cost basis, realised profit, rounds)."""

from concurrent.futures import ThreadPoolExecutor
from typing import NamedTuple

import numba
import numpy as np
import polars as pl

from checks.schemas.wallets import LEDGER_ORDER
from core.columns import EVENT
from core.fingerprints import distinct, first_indices, gathered, keyed, lookup, numbered
from core.vocabulary import SIDES, SWAP_SIDES
from figures.pair_trades import human, with_swap_strings

# A holding below this share of what ever came in is dust left by float sums: the round closed.
DUST = 1e-9
POSITION = ("chain_id", "wallet", "token")


def swap_events(legs: pl.LazyFrame, raw: pl.LazyFrame, pair_tokens: pl.LazyFrame) -> pl.LazyFrame:
    """Each swap as its maker's buy or sell of the pair's base token, with the maker of the
    lake's swap (`raw`), found by its event (where its hash is read when a trade is shown); a
    swap whose quote has no USD price keeps a null notional. The pool's base is found
    by fingerprint, so the legs keep their order and no address is joined on."""
    pools = pair_tokens.select("base", key=keyed("chain_id", "pair")).collect()
    pool = lookup(keyed("chain_id", "pair"), distinct(pools["key"], "pair_tokens"))
    kept = legs.with_columns(token=gathered(pools["base"], pool)).drop_nulls("token").collect()
    return (with_swap_strings(kept, raw, ("maker",)).lazy()
            .select("chain_id", "block_number", "log_index", "ts", "pair", "token",
                    wallet="maker", side="side", qty="base_amount",
                    price_usd=pl.when(pl.col("volume_usd").is_not_null()).then("price_usd"),
                    notional_usd="volume_usd", fee_usd="fee_usd", gas_used="gas_used"))


def mint_wallets(transfers: pl.LazyFrame, tokens: pl.LazyFrame) -> pl.LazyFrame:
    """The addresses that sent a token's supply out in its deploy transaction: each chain's
    mint address, which is no wallet."""
    return (transfers.join(tokens.select("chain_id", token="address", tx_hash="deploy_tx"),
                           on=["chain_id", "token", "tx_hash"])
            .select("chain_id", wallet="from_address").unique())


def movement_events(transfers: pl.LazyFrame, liquidity: pl.LazyFrame,
                    pair_tokens: pl.LazyFrame, tokens: pl.LazyFrame,
                    mints: pl.LazyFrame | None = None) -> pl.LazyFrame:
    """Bare movements of non-quote tokens: transfers between wallets (both ends) and the base
    tokens a wallet puts into a pool or takes out of it. The mint address is no wallet (`mints`,
    else found among these transfers: `mint_wallets`), and a transfer to oneself moves nothing
    (its two ends, one event, would have no order)."""
    tradable = tokens.filter(~pl.col("is_quote")).select("chain_id", token="address",
                                                         decimals="decimals")
    mints = mint_wallets(transfers, tokens) if mints is None else mints
    moved = transfers.filter(pl.col("from_address") != pl.col("to_address")).join(
        tradable, on=["chain_id", "token"]).with_columns(
        qty=human("amount", "decimals"))
    ends = [moved.select("chain_id", "block_number", "log_index", "block_time", "tx_hash",
                         "token", "qty", wallet=col, side=pl.lit(side))
            for col, side in (("to_address", "transfer_in"), ("from_address", "transfer_out"))]
    pools = pair_tokens.select("chain_id", "pair", token="base", b0="base_is_token0",
                               decimals="base_decimals")
    pooled = liquidity.join(pools, on=["chain_id", "pair"]).select(
        "chain_id", "block_number", "log_index", "block_time", "tx_hash", "token",
        qty=pl.when("b0").then(pl.col("amount0")).otherwise(pl.col("amount1")).cast(pl.Float64)
        / pl.lit(10.0).pow(pl.col("decimals")),
        wallet="owner",
        side=pl.when(pl.col("kind") == "mint").then(pl.lit("transfer_out"))
        .otherwise(pl.lit("transfer_in")))
    return (pl.concat([*ends, pooled])
            .join(mints, on=["chain_id", "wallet"], how="anti")
            .filter(pl.col("qty") > 0)
            .with_columns(ts=pl.col("block_time").dt.epoch("s")).drop("block_time"))


def marked(rows: pl.LazyFrame, swaps: pl.LazyFrame,
           before: pl.DataFrame | None = None) -> pl.LazyFrame:
    """Rows (chain, token, time) with the token's last priced swap price at or before them
    (`mark_usd`, null before any), searched among `swaps`, and else the token's mark before
    them all (`before`: `token_marks` of the day before). Tokens are matched by fingerprint,
    and only the swaps of the rows' tokens are searched."""
    moved = rows.with_columns(key=keyed("chain_id", "token")).collect()
    prices = (swaps.filter(pl.col("price_usd").is_not_null())
              .select("ts", "price_usd", key=keyed("chain_id", "token"))
              .filter(pl.col("key").is_in(moved["key"].implode()))
              .select("key", "ts", mark_usd="price_usd"))
    found = (moved.lazy().sort("ts")
             .join_asof(prices, on="ts", by="key", strategy="backward", check_sortedness=False))
    if before is not None:
        carried = before.lazy().select(key=keyed("chain_id", "token"), carried="mark_usd")
        found = (found.join(carried, on="key", how="left", maintain_order="left")
                 .with_columns(mark_usd=pl.coalesce("mark_usd", "carried")).drop("carried"))
    return found.drop("key")


def token_marks(events: pl.DataFrame, before: pl.DataFrame | None) -> pl.DataFrame:
    """Each token's mark after `events` (in chain order): its last priced swap's USD price
    among them, else its mark `before` them; what the next day's rows are marked from when no
    swap of theirs came first."""
    last = (events.lazy().filter(pl.col("price_usd").is_not_null())
            .group_by("chain_id", "token").agg(mark_usd=pl.col("price_usd").last()))
    kept = (before.lazy().join(last, on=["chain_id", "token"], how="anti")
            if before is not None else None)
    return (pl.concat([last, *([kept] if kept is not None else [])])
            .select("chain_id", "token", "mark_usd").sort("chain_id", "token").collect())


def fee_model(swaps: pl.DataFrame) -> pl.DataFrame:
    """Per chain and UTC hour (`hour`: seconds since the epoch over 3,600), the median USD fee
    per unit of gas over `swaps` whose receipt gave a fee (`usd_per_gas`): what a swap of that
    hour without one is charged (none for a chain and hour where no receipt gave a fee). By
    the hour, so that a day made in segments of hours charges what it would made whole."""
    return (swaps.lazy().filter(pl.col("fee_usd").is_not_null())
            .group_by("chain_id", hour=pl.col("ts") // 3600)
            .agg(usd_per_gas=(pl.col("fee_usd") / pl.col("gas_used")).median()).collect())


def wallet_events(frames: dict[str, pl.LazyFrame], as_of, marks: pl.DataFrame | None = None,
                  mints: pl.LazyFrame | None = None) -> pl.DataFrame:
    """Swaps and movements up to the watermark, one row per wallet and event, in chain order
    (block, log, then the swap, then a movement's sending end, then its receiving end). A
    movement carries its hash; a swap's is found in the lake by its event when shown, the
    705 MB of a week's swap hashes not being written again (`with_swap_hashes`). For a day's
    events, `marks` are the tokens' marks before the day (`token_marks`) and `mints` the mint
    addresses of every day (`mint_wallets`)."""
    swaps = swap_events(frames["swap_legs"], frames["swaps"], frames["pair_tokens"]).filter(
        pl.col("ts") <= int(as_of.timestamp())).collect()
    # Read once: the movements read the transfers twice (their ends, and the mints).
    transfers, liquidity = (frames[t].filter(pl.col("block_time") <= as_of).collect().lazy()
                            for t in ("transfers", "liquidity_events"))
    # Charged at the token's mark: movements, and swaps without a USD notional (paid in an
    # unpriced token), marked in one search; a priced swap is accounted at its notional.
    unpriced = (swaps.with_row_index("_swap").filter(pl.col("notional_usd").is_null())
                .select("_swap", "chain_id", "token", "ts"))
    movements = movement_events(transfers, liquidity, frames["pair_tokens"], frames["tokens"],
                                mints)
    charged = marked(pl.concat([movements, unpriced.lazy()], how="diagonal_relaxed"),
                     swaps.lazy(), marks).collect()
    moves = charged.filter(pl.col("_swap").is_null()).drop("_swap").lazy()
    swapped = charged.filter(pl.col("_swap").is_not_null())
    mark = np.full(swaps.height, np.nan)
    mark[swapped["_swap"].to_numpy()] = swapped["mark_usd"].fill_null(np.nan).to_numpy()
    per_gas = pl.col("usd_per_gas")
    modelled = swaps.lazy().with_columns(
        mark_usd=pl.Series(mark).fill_nan(None), hour=pl.col("ts") // 3600).join(
        fee_model(swaps).lazy(), on=["chain_id", "hour"], how="left", maintain_order="left"
    ).with_columns(
        fee_is_estimated=pl.col("fee_usd").is_null() & per_gas.is_not_null(),
        fee_usd=pl.coalesce("fee_usd", per_gas * pl.col("gas_used")),
        seq=pl.lit(0, pl.UInt8)).drop("gas_used", "hour", "usd_per_gas")
    # A transfer's sending end before its receiving end: every row then has its own key and
    # the order is the same from run to run.
    moves = moves.with_columns(
        seq=pl.when(pl.col("side") == "transfer_in").then(2).otherwise(1).cast(pl.UInt8),
        fee_is_estimated=pl.lit(False))
    # Sides as an enum: coded once here (a side not in SIDES is refused), not by every reader.
    # Gathered in order from one piece of memory: across the many pieces the reads leave, it
    # costs several times more.
    events = (pl.concat([modelled, moves], how="diagonal_relaxed")
              .with_columns(pl.col("side").cast(pl.Enum(SIDES))).collect().rechunk())
    return events[chain_order(events)]


# A packed key's bits, from the top: the chain's rank, the block, the log index, the row's seq.
_KEY_BITS = {"chain_id": 4, "block_number": 40, "log_index": 18, "seq": 2}


def chain_order(events: pl.DataFrame) -> pl.Series:
    """The row positions that put events in chain order (LEDGER_ORDER). When every part fits
    its bits, one 64-bit key is sorted: events come in sorted runs (a chain's day of swaps, the
    movements), which sorting one key orders far faster than sorting four columns. Otherwise
    the four columns are sorted."""
    chains = events["chain_id"].unique().sort()
    parts = ("block_number", "log_index", "seq")
    bounds = events.select(*[pl.col(c).max().alias(c) for c in parts],
                           low=pl.min_horizontal(pl.col(*parts).min()))
    if (events.is_empty() or len(chains) > 1 << _KEY_BITS["chain_id"]
            or bounds["low"].item() < 0
            or any(bounds[c].item() >= 1 << _KEY_BITS[c] for c in parts)):
        return events.select(pl.arg_sort_by(*LEDGER_ORDER)).to_series()
    key, shift = pl.lit(0, pl.UInt64), 64
    for column, bits in _KEY_BITS.items():
        shift -= bits
        part = (pl.lit(chains).search_sorted(pl.col(column)) if column == "chain_id"
                else pl.col(column))
        key = key + part.cast(pl.UInt64) * pl.lit(1 << shift, pl.UInt64)
    return events.select(key).to_series().arg_sort()


def account_onto(events: pl.DataFrame | pl.LazyFrame, before: pl.DataFrame | None
                 ) -> tuple[pl.DataFrame, pl.DataFrame]:
    """Average-cost accounting per wallet and token over events (chain, wallet, token, time,
    side, quantity, USD notional and mark) in chain order, from the books `before` them (each
    position's after the days before: `latest_books`, `books_after`) or from empty books (None);
    the books' columns an event already has (a stored ledger's) are made again. Also the
    closing books of the positions the events touched, in the order of their first rows.

    Units that come in add their cost: a priced buy its USD paid, anything else (a transfer in,
    a buy paid in a token without a price) the token's market value then (`mark_usd`), or
    nothing when it had none; such units make the basis incomplete. Units that go out take
    their share of the cost with them; a sell realises its proceeds less that share. Units sold
    beyond what the ledger saw arrive (oversold) break even. A round runs from the first unit in
    to the last unit out; a row taking out units while none are held is in no round (-1).
    Each row keeps its position's number (`slot`, from `slots`: the folds' grouping; not
    stored).
    """
    flow = events.lazy().with_columns(position=keyed(*POSITION)).collect()
    slot, positions = slots(flow)
    first = first_indices(slot, positions)
    touched = flow.select(pl.col("chain_id", "position").gather(first))
    state = _opening(touched, before)
    books = Books(*(np.empty(flow.height, dtype) for dtype in BOOK_COLUMNS.values()))
    _books(Events(slot, side_codes(flow["side"]), flow["qty"].to_numpy(),
                  flow["notional_usd"].fill_null(np.nan).to_numpy(),
                  flow["mark_usd"].fill_null(np.nan).to_numpy(), flow["ts"].to_numpy()),
           books, state)
    ledger = flow.with_columns(slot=slot, **{
        name: pl.Series(name, values) for name, values in zip(BOOK_COLUMNS, books, strict=True)})
    return ledger, touched.with_columns(**{name: pl.Series(name, values) for name, values in
                                           zip(BOOK_STATE, state, strict=True)})


def books_after(before: pl.DataFrame | None, closing: pl.DataFrame) -> pl.DataFrame:
    """Every position's books after a day: the day's closing books (`account_onto`), and those
    of `before` the day did not touch."""
    if before is None:
        return closing
    return pl.concat([before.join(closing, on=["chain_id", "position"], how="anti"), closing])


def latest_books(days: pl.LazyFrame, positions: pl.Series | None = None) -> pl.DataFrame:
    """Every position's books after a run of days (or only those of `positions`, compared as
    the days hold them): the closing books of several days, in order, each position's from the
    last day that touched it. The positions are a filter the scan applies as it reads, so only
    their rows are ever held."""
    if positions is not None:
        days = days.filter(pl.col("position").is_in(positions))
    return days.unique(subset=["chain_id", "position"], keep="last", maintain_order=True).collect()


def touched_positions(events: pl.DataFrame | pl.LazyFrame) -> pl.Series:
    """The positions (wallet and token on a chain) some events touch, once each."""
    return events.lazy().select(keyed(*POSITION).alias("position")).unique().collect()["position"]


def _opening(touched: pl.DataFrame, before: pl.DataFrame | None) -> "BookState":
    """The books' state of each touched position (in slot order) before the events: its row of
    `before`, or empty books for a position it has not."""
    if before is None:
        found = touched.with_columns(**{name: pl.lit(None, dtype) for name, dtype in
                                        BOOK_STATE_TYPES.items()})
    else:
        found = touched.join(before, on=["chain_id", "position"], how="left",
                             maintain_order="left")
    return BookState(*(found[name].fill_null(empty).cast(dtype).to_numpy().copy()
                       for (name, dtype), empty in zip(BOOK_STATE_TYPES.items(), _EMPTY_BOOKS,
                                                       strict=True)))


def chain_halves(chain: np.ndarray) -> tuple[slice, slice]:
    """The rows in two runs of whole chains, split nearest the middle: no position has rows in
    both, so each half is numbered on its own core. The first is empty when the rows are not
    grouped by chain in rising order, or are one chain."""
    starts = np.flatnonzero(np.diff(chain)) + 1
    cut = 0
    if len(starts) and (chain[starts] > chain[starts - 1]).all():
        cut = int(starts[np.abs(starts - len(chain) / 2).argmin()])
    return slice(0, cut), slice(cut, len(chain))


def slots(ledger: pl.DataFrame) -> tuple[np.ndarray, int]:
    """Each row's position as a number from 0, in the order of first rows, and how many
    positions there are. The halves of `chain_halves` are numbered each on its own core, the
    second's numbers following the first's: every first row of the second comes later. A
    stored ledger's fingerprints (signed, `storable`) are read as the same 64 bits."""
    return _numbered_in(ledger["position"].to_numpy().view(np.uint64),
                        chain_halves(ledger["chain_id"].to_numpy()))


def _numbered_in(keys: np.ndarray, halves: tuple[slice, slice]) -> tuple[np.ndarray, int]:
    with ThreadPoolExecutor(2) as pool:
        (first, count), (second, more) = pool.map(lambda half: numbered(keys[half]), halves)
    return np.concatenate([first, second + count]), count + more


BUY, SELL, TRANSFER_IN, TRANSFER_OUT = range(len(SIDES))


def side_codes(side: pl.Series) -> np.ndarray:
    """Each side's code: its place in SIDES (a side not in SIDES is an error)."""
    return side.cast(pl.Enum(SIDES)).to_physical().to_numpy()


# What `_books` fills for every row, in its order, with each column's type.
BOOK_COLUMNS = {"held": np.float64, "closes": np.bool_, "round": np.int32, "cost": np.float64,
                "round_opened_at": np.int64, "realized_usd": np.float64,
                "cost_closed_usd": np.float64, "opens": np.bool_, "cost_in_usd": np.float64,
                "cost_change": np.float64, "incomplete": np.bool_}


class Events(NamedTuple):
    """What the books read of each event, in chain order: its position's slot, its side's
    code, the quantity, the USD notional and the token's mark (NaN when null), the time."""

    slot: np.ndarray
    side: np.ndarray
    qty: np.ndarray
    notional: np.ndarray
    mark: np.ndarray
    ts: np.ndarray


class Books(NamedTuple):
    """What the books write for each event: the BOOK_COLUMNS, in their order."""

    held: np.ndarray
    closes: np.ndarray
    round: np.ndarray
    cost: np.ndarray
    round_opened_at: np.ndarray
    realized_usd: np.ndarray
    cost_closed_usd: np.ndarray
    opens: np.ndarray
    cost_in_usd: np.ndarray
    cost_change: np.ndarray
    incomplete: np.ndarray


# A position's books between two events, as `_books` carries them (and `wallet_book_states`
# stores them at each day's end): the net quantity, its lowest point (what was sold before it
# came), all that came in, the holding and cost after the last event, the running cost of the
# round, the rounds closed, the round the last event was in (-1: none yet) and its start.
BOOK_STATE_TYPES = {"net_qty": pl.Float64, "low_qty": pl.Float64, "came_qty": pl.Float64,
                    "held": pl.Float64, "cost": pl.Float64, "running_cost": pl.Float64,
                    "closed_rounds": pl.Int32, "round": pl.Int32,
                    "round_opened_at": pl.Int64}
BOOK_STATE = tuple(BOOK_STATE_TYPES)
_EMPTY_BOOKS = (0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0, -1, 0)


class BookState(NamedTuple):
    """Each position's books (BOOK_STATE), by slot: read before the events, written after."""

    net: np.ndarray
    low: np.ndarray
    came: np.ndarray
    last_held: np.ndarray
    last_cost: np.ndarray
    running: np.ndarray
    closed: np.ndarray
    current: np.ndarray
    round_start: np.ndarray


@numba.njit(cache=True, nogil=True)
def _books(events, books, state):
    """The running books of every position, event by event in chain order, written into
    `books`, from each position's `state` (left as it stands after the last event): a
    position's state sits in its slot. Held is what came in less what went out, floored at zero
    and at float dust; the cost carries over scaled by the share of the holding kept, and a
    round restarts it. A null notional or mark is NaN."""
    net, low, came, last_held, last_cost, running, closed, current, round_start = state
    for row in range(len(events.slot)):
        position, side, qty = events.slot[row], events.side[row], events.qty[row]
        notional, mark = events.notional[row], events.mark[row]
        inflow = side in (BUY, TRANSFER_IN)
        priced = not np.isnan(notional)
        value = qty * (0.0 if np.isnan(mark) else mark)
        basis_in = (notional if priced else value) if side == BUY else (
            value if side == TRANSFER_IN else 0.0)
        if inflow:
            net[position] += qty
            came[position] += qty
        else:
            net[position] -= qty
        low[position] = min(low[position], net[position])
        held = net[position] - min(low[position], 0.0)
        if held <= DUST * came[position]:
            held = 0.0
        held_before, cost_before = last_held[position], last_cost[position]
        closing = not inflow and held == 0.0 and held_before > 0.0
        straying = not inflow and held_before == 0.0
        # A row that takes out what was never there belongs to no round (-1): a round, once
        # closed, never changes again, so a snapshot shares it with the next.
        in_round = -1 if straying else closed[position]
        if closing:
            closed[position] += 1
        if not straying and in_round != current[position]:
            current[position], running[position], round_start[position] = (
                in_round, 0.0, events.ts[row])
        kept = 1.0 if inflow or held_before == 0.0 or closing else held / held_before
        running[position] = running[position] * kept + basis_in
        cost = 0.0 if closing or straying else running[position]
        covered = 0.0 if inflow else min(qty, held_before)
        books.realized_usd[row] = books.cost_closed_usd[row] = 0.0
        if side == SELL:
            cost_out = cost_before - cost
            books.realized_usd[row] = (notional if priced else 0.0) * covered / qty - cost_out
            books.cost_closed_usd[row] = cost_out
        books.held[row], books.closes[row], books.round[row] = held, closing, in_round
        books.cost[row], books.round_opened_at[row] = cost, round_start[position]
        books.opens[row] = inflow and held_before == 0.0
        books.cost_in_usd[row], books.cost_change[row] = basis_in, cost - cost_before
        books.incomplete[row] = (side == TRANSFER_IN or (side <= SELL and not priced)
                                 or (not inflow and qty - covered
                                     > DUST * max(came[position], qty)))
        last_held[position], last_cost[position] = held, cost


def with_swap_hashes(ledger: pl.DataFrame, swaps: pl.LazyFrame) -> pl.DataFrame:
    """The ledger's rows with every hash: a movement's its own, a swap's read from the lake by
    its event (refused when the lake no longer holds it)."""
    swapped = pl.col("side").is_in(SWAP_SIDES)
    traded = ledger.filter(swapped)
    hashes = with_swap_strings(traded.select(*EVENT), swaps, ("tx_hash",))["tx_hash"]
    return pl.concat([traded.with_columns(tx_hash=hashes), ledger.filter(~swapped)])

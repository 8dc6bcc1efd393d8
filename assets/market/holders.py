"""Holder balances: what every address holds of every token at the lake's watermark, from
supply mints and wallet moves, swaps (paid in by the maker, paid out to the recipient) and the
liquidity a wallet added or removed. Pools and the mint address are not holders. A day's moves
make the day's changes (`HolderTables.changes`); the balances add every day's up
(`holder_balances_of`), so a refresh folds the moves of the days that changed only.

Every move is summed straight into one table keyed by (token, holder fingerprint) as the swaps
are read, each swap's two or four moves at once: the swaps never fan out into rows, and no
address string is hashed into the table. Amounts stay exact 128-bit integers (two 64-bit
halves, stored as decimal(38,0)) until the last division. Each amount remembers the first move
that made it, and its holder's address is read back from there."""

from collections.abc import Mapping
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from datetime import datetime

import numba
import numpy as np
import polars as pl
import pyarrow as pa

from assets.tables import Frame
from core.columns import RAW as DECIMAL_RAW
from core.fingerprints import distinct, gathered, keyed, lookup
from figures.pair_trades import swap_fingerprints
from figures.raw_amounts import RAW_SWAPPED, halves

RAW = pl.Int128
# Where a balance's holder address is read back: a move's source and row, in its slot's tag.
SOURCES = ("maker", "recipient", "to_address", "from_address", "owner")
_MAKER, _RECIPIENT = SOURCES.index("maker"), SOURCES.index("recipient")
TRANSFERRED = ("to_address", "from_address")
# A tag's bits: the token (plus one, so that 0 is an empty slot) above 40, the source above 37.
_ROW_BITS, _TOKEN_SHIFT = 37, 40
_MAX_TOKENS = (1 << 64 - _TOKEN_SHIFT) - 1
# A slot is four words: holder fingerprint, tag (token + 1, source, row), low and high halves.
_HOLDER, _TAG, _LO, _HI = range(4)
_ONE = np.uint64(1)
_ONES = np.uint64(0xFFFFFFFFFFFFFFFF)
_MIX = np.uint64(0x9E3779B97F4A7C15)


def _column(values: pa.Array) -> np.ndarray:
    """A batch's column as the fold reads it: amounts as halves, the rest as plain numbers."""
    if pa.types.is_decimal(values.type):
        return halves(values)
    return values.to_numpy(zero_copy_only=False)


@numba.njit(nogil=True, inline="always")
def _negated(lo, hi):
    lo = (lo ^ _ONES) + _ONE
    return lo, (hi ^ _ONES) + (_ONE if lo == np.uint64(0) else np.uint64(0))


@numba.njit(nogil=True, inline="always")
def _plus(lo, hi, other_lo, other_hi):
    total = lo + other_lo
    return total, hi + other_hi + (_ONE if total < lo else np.uint64(0))


@numba.njit(nogil=True, inline="always")
def _add(slots, token, holder, lo, hi, source, row):
    """Add one 128-bit amount (two's complement halves) to (token, holder)'s balance; 1 when it
    opened a slot."""
    mask = np.uint64(len(slots) - 1)
    owner = np.uint64(token + 1)
    at = (holder ^ (np.uint64(token) * _MIX)) & mask
    while True:
        tag = slots[at, _TAG]
        if tag == np.uint64(0):
            slots[at, _HOLDER] = holder
            slots[at, _TAG] = ((owner << np.uint64(_TOKEN_SHIFT))
                               | (np.uint64(source) << np.uint64(_ROW_BITS)) | np.uint64(row))
            slots[at, _LO] = lo
            slots[at, _HI] = hi
            return 1
        if slots[at, _HOLDER] == holder and tag >> np.uint64(_TOKEN_SHIFT) == owner:
            slots[at, _LO], slots[at, _HI] = _plus(slots[at, _LO], slots[at, _HI], lo, hi)
            return 0
        at = (at + _ONE) & mask


@numba.njit(nogil=True, inline="always")
def _add_side(slots, token, maker, recipient, paid, got, row):
    """One side of a swap: the maker pays `paid` in, the recipient is paid `got` out."""
    if token < 0:
        return 0
    paid_lo, paid_hi = _negated(paid[0], paid[1])
    if maker == recipient:
        lo, hi = _plus(got[0], got[1], paid_lo, paid_hi)
        return _add(slots, token, maker, lo, hi, _MAKER, row)
    return (_add(slots, token, maker, paid_lo, paid_hi, _MAKER, row)
            + _add(slots, token, recipient, got[0], got[1], _RECIPIENT, row))


@numba.njit(nogil=True, cache=True)
def _add_swaps(slots, used, start, offset, token0, token1, pool, maker, recipient, in0, in1,
               out0, out1):
    """Fold a batch of swaps (the lake's rows from `offset` on) from its row `start` on; stops
    at the row where the table is half full and answers it (the batch's length when all are
    in) and the slots now used."""
    n, room = len(pool), len(slots) // 2
    for r in range(start, n):
        if used + 4 > room:
            return r, used
        p = pool[r]
        if p < 0:
            continue
        row = offset + r
        used += _add_side(slots, token0[p], maker[r], recipient[r], in0[r], out0[r], row)
        used += _add_side(slots, token1[p], maker[r], recipient[r], in1[r], out1[r], row)
    return n, used


@numba.njit(nogil=True, cache=True)
def _add_moves(slots, used, start, offset, source, token, holder, amount, negative):
    """Fold a batch of plain moves (a token, a holder, an amount to add or take away) like
    `_add_swaps`."""
    n, room = len(token), len(slots) // 2
    for r in range(start, n):
        if used + 1 > room:
            return r, used
        if token[r] < 0:
            continue
        lo, hi = amount[r, 0], amount[r, 1]
        if negative[r]:
            lo, hi = _negated(lo, hi)
        used += _add(slots, token[r], holder[r], lo, hi, source, offset + r)
    return n, used


@numba.njit(nogil=True, cache=True)
def _rehash(slots, old):
    """Move every used slot of the old table into the new, larger one."""
    mask = np.uint64(len(slots) - 1)
    for k in range(len(old)):
        tag = old[k, _TAG]
        if tag == np.uint64(0):
            continue
        token = (tag >> np.uint64(_TOKEN_SHIFT)) - _ONE
        at = (old[k, _HOLDER] ^ (token * _MIX)) & mask
        while slots[at, _TAG] != np.uint64(0):
            at = (at + _ONE) & mask
        slots[at] = old[k]


@numba.njit(nogil=True, cache=True)
def _nonzero(slots):
    """The slots whose amount is not zero."""
    out = np.empty(len(slots), np.int64)
    k = 0
    for at in range(len(slots)):
        if slots[at, _TAG] != np.uint64(0) and (slots[at, _HI] | slots[at, _LO]):
            out[k] = at
            k += 1
    return out[:k]


class _Balances:
    """An open-addressed table of 128-bit balances by (token, holder fingerprint), doubled when
    half full."""

    def __init__(self, rows: int) -> None:
        self.used = 0
        # Room for a balance per two to four swaps before the table first doubles; a week's
        # lake has about one per three.
        self.slots = np.zeros((max(1 << 16, 1 << (max(1, rows - 1).bit_length() - 1)), 4),
                              np.uint64)

    def fold(self, kernel, rows: pl.DataFrame, *fixed) -> None:
        """Fold every row of `rows` (numbers and raw amounts, no nulls) through `kernel`, the
        fixed arguments first."""
        if rows.height >= 1 << _ROW_BITS:
            raise ValueError(f"{rows.height} rows are too many for one fold")
        offset = 0
        for batch in rows.to_arrow().to_batches():
            columns = [_column(c) for c in batch.columns]
            start = 0
            while True:
                start, self.used = kernel(self.slots, self.used, start, offset, *fixed, *columns)
                if start == batch.num_rows:
                    break
                old, self.slots = self.slots, np.zeros((len(self.slots) * 2, 4), np.uint64)
                _rehash(self.slots, old)
            offset += batch.num_rows

    def nonzero(self) -> pl.DataFrame:
        """Token, where its holder's address is read back (source, row), and raw amount of
        every amount that is not zero."""
        slots = self.slots[_nonzero(self.slots)]
        tags = slots[:, _TAG]
        return pl.DataFrame({
            "token": (tags >> np.uint64(_TOKEN_SHIFT)).astype(np.int64) - 1,
            "source": ((tags >> np.uint64(_ROW_BITS)) & np.uint64(7)).astype(np.int64),
            "row": (tags & np.uint64((1 << _ROW_BITS) - 1)).astype(np.int64),
            "lo": slots[:, _LO], "hi": slots[:, _HI].view(np.int64)}).select(
            "token", "source", "row",
            raw=pl.col("hi").cast(RAW) * pl.lit(2**64, RAW) + pl.col("lo").cast(RAW))


def _index(key: pl.Expr, keys: pl.Series) -> pl.Expr:
    """`lookup` with -1 for absent, as the fold reads it."""
    return lookup(key, keys).fill_null(-1).cast(pl.Int64)


def holder_reads() -> dict[str, pl.Expr]:
    """What the holder changes read of each raw swap, by name: its time and amounts, its
    `swap_fingerprints` and its recipient's fingerprint."""
    return {c: pl.col(c) for c in ("block_time", *RAW_SWAPPED)} | swap_fingerprints() | {
        "recipient_key": keyed("recipient")}


@dataclass(frozen=True)
class HolderTables:
    """The tokens and pools every day's moves are looked up in (by fingerprint), and the
    watermark they count up to: made once for a run's days."""

    tokens: pl.DataFrame
    pools: pl.DataFrame
    as_of: datetime

    @classmethod
    def of(cls, frames: Mapping[str, pl.LazyFrame], as_of: datetime) -> "HolderTables":
        """From the lake's tokens and pairs, at the watermark `as_of`."""
        tokens = frames["tokens"].select("chain_id", "address", "decimals", "deploy_tx").collect()
        if tokens.height > _MAX_TOKENS:
            raise ValueError(f"{tokens.height} tokens are too many for one fold")
        tokens = tokens.with_columns(
            key=distinct(tokens.select(keyed("chain_id", "address")).to_series(), "tokens"))
        pools = frames["pairs"].select("chain_id", "address", "token0", "token1").collect()
        pools = pools.with_columns(
            key=distinct(pools.select(keyed("chain_id", "address")).to_series(), "pairs"),
            **{f"token{i}": _index(keyed("chain_id", f"token{i}"), tokens["key"])
               for i in (0, 1)})
        return cls(tokens, pools, as_of)

    def changes(self, moves: Mapping[str, pl.LazyFrame],
                read: pl.DataFrame | None = None) -> pl.DataFrame:
        """What the moves (swaps, transfers and liquidity events) up to the watermark change
        of what every address holds of every token: one row per token and address whose amount
        changed (chain_id, token, holder, raw `change`), or that sent a token's supply out in
        its deploy transaction (`minted`: the mint address, which is no holder of any token of
        its chain). `read`: the swaps' `holder_reads` when they were read already."""
        tokens, pools = self.tokens, self.pools
        live = pl.col("block_time") <= self.as_of
        swaps = moves["swaps"]
        if read is None:
            read = swaps.select(**holder_reads()).collect()
        # A swap after the watermark keeps its row (rows are where addresses are read back)
        # but moves nothing.
        moved = read.select(*RAW_SWAPPED, "maker_key", "recipient_key", pool=pl.when(live).then(
            _index(pl.col("key"), pools["key"])).otherwise(-1))
        transferring = moves["transfers"].filter(live).select(
            "to_address", "from_address", "tx_hash", "amount",
            token=_index(keyed("chain_id", "token"), tokens["key"]),
            **{f"{source}_key": keyed(source) for source in TRANSFERRED})
        providing = moves["liquidity_events"].filter(live).select(
            "owner", "amount0", "amount1", owner_key=keyed("owner"),
            negative=pl.col("kind") == "mint",
            pool=lookup(keyed("chain_id", "pair"), pools["key"])).drop_nulls("pool")
        balances = _Balances(moved.height)
        # The swaps' fold runs on one core and lets go of the interpreter: the other reads
        # (the transfers, the liquidity events and the makers' addresses) are made meanwhile.
        with ThreadPoolExecutor(1) as reader:
            others = reader.submit(pl.collect_all,
                                   [transferring, providing, swaps.select("maker")])
            balances.fold(_add_swaps, moved.select("pool", "maker_key", "recipient_key",
                                                   *RAW_SWAPPED),
                          pools["token0"].to_numpy(), pools["token1"].to_numpy())
            transfers, liquidity, makers = others.result()
        for source in TRANSFERRED:
            balances.fold(_add_moves, transfers.select(
                "token", f"{source}_key", "amount", negative=pl.lit(source == "from_address")),
                SOURCES.index(source))
        for i in (0, 1):
            balances.fold(_add_moves, liquidity.select(
                gathered(pools[f"token{i}"], "pool"), "owner_key", f"amount{i}", "negative"),
                SOURCES.index("owner"))
        # A recipient's address is read again only where an amount needs it: where every maker
        # is paid out to itself, as most are, none is.
        where: dict[str, pl.DataFrame | pl.LazyFrame] = {
            "maker": makers, "recipient": swaps, "to_address": transfers,
            "from_address": transfers, "owner": liquidity}
        changed = balances.nonzero().sort("row")
        parts = {source: changed.filter(pl.col("source") == i)
                 for i, source in enumerate(SOURCES)}
        held = pl.concat([part.with_columns(holder=where[source].lazy().select(source).collect()
                                            .to_series().gather(part["row"]) if part.height
                                            else pl.Series([], dtype=pl.String))
                          for source, part in parts.items()])
        # The mint address sends a token's supply out in the token's deploy transaction: marked
        # where its amount changed, and a row of its own where it did not.
        mints = transfers.filter(
            pl.col("token") >= 0,
            pl.col("tx_hash") == gathered(tokens["deploy_tx"], pl.col("token").clip(0))).select(
            "token", holder="from_address").unique().with_columns(minted=pl.lit(True))
        flagged = held.select("token", "holder", "raw").join(
            mints, on=["token", "holder"], how="left").with_columns(
            pl.col("minted").fill_null(False))
        unchanged = mints.join(held, on=["token", "holder"], how="anti").select(
            "token", "holder", raw=pl.lit(0, RAW), minted="minted")
        return pl.concat([flagged, unchanged]).select(
            gathered(tokens["chain_id"], "token"),
            gathered(tokens["address"], "token").alias("token"),
            "holder", change=pl.col("raw").cast(DECIMAL_RAW), minted="minted")


def holder_changes_of(frames: Mapping[str, pl.LazyFrame], as_of: datetime) -> pl.DataFrame:
    """`HolderTables.changes` of the moves in `frames`, with the tokens and pairs there."""
    return HolderTables.of(frames, as_of).changes(frames)


def summed(changes: pl.LazyFrame) -> pl.LazyFrame:
    """Changes summed per token and holder; a holder that ever sent a token's supply out in
    its deploy transaction stays marked (`minted`)."""
    return changes.group_by("chain_id", "token", "holder").agg(
        pl.col("change").sum(), pl.col("minted").any())


def holder_balances_of(changes: pl.LazyFrame, frames: dict[str, pl.LazyFrame]) -> pl.DataFrame:
    """One row per token and holding address with a positive balance (chain_id, token, holder,
    balance in whole tokens): the sum of its changes (`holder_changes_of`), of an address that
    is neither a pool nor a mint address."""
    decimals = frames["tokens"].select("chain_id", token="address", decimals="decimals")
    totals = summed(changes)
    not_holders = pl.concat([
        frames["pairs"].select("chain_id", holder="address"),
        totals.filter("minted").select("chain_id", "holder")]).unique()
    return (totals.filter(pl.col("change") > 0)
            .join(not_holders, on=["chain_id", "holder"], how="anti")
            .join(decimals, on=["chain_id", "token"])
            .select("chain_id", "token", "holder",
                    balance=pl.col("change").cast(RAW).cast(pl.Float64)
                    / pl.lit(10.0).pow(pl.col("decimals")))
            .collect())


def ranked_holders(holders: Frame) -> Frame:
    """The holders (`holder_balances`' rows) with each one's rank among its token's holders
    (`rank`, from 1): the largest balance first, equal balances by address, so that a holder's
    rank is the same wherever it is read (the holders' serving table, the top-holder cohort)."""
    return (holders.sort("chain_id", "token", "balance", "holder",
                         descending=[False, False, True, False])
            .with_columns(rank=pl.int_range(1, pl.len() + 1, dtype=pl.UInt32)
                          .over("chain_id", "token")))

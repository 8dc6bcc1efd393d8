"""A token's transfer tax as its swaps show it (docs/market.md, "Taxes"): what a pool's `Swap`
says against what the token's `Transfer`s of the same transaction moved. A buy's tax is the
share of the amount the pool paid out that did not reach the swap's recipient; a sell's, the
share of what the seller sent that did not reach the pool."""

from collections import defaultdict
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from core.vocabulary import SAME_TAX
from sources.evm.families import SwapEvent
from sources.evm.rpc import quantity


@dataclass(frozen=True)
class Leg:
    """A token transfer of a transaction."""

    log_index: int
    token: str
    sender: str
    to: str
    amount: int


@dataclass(frozen=True)
class Measure:
    """One swap's measure of a token's tax on one side."""

    token: str
    side: str
    tax: float
    block: int
    log_index: int


def measures(swaps: list[tuple[dict, SwapEvent, int]], legs: dict[str, list[Leg]],
             tokens: dict[str, tuple[str, str]], untaxed: set[str],
             custodians: set[str]) -> list[Measure]:
    """The tax measures of `swaps` (log, event, block), in chain order, from their
    transactions' `legs`; `tokens` gives each pool's two tokens. Tokens of `untaxed` (the quote
    tokens) are not measured, nor a side whose transfers do not account for the swap (another
    leg of the transaction in between, a pool that does not hold its tokens). A pool's legs
    come before its `Swap` log, after its previous one in the transaction."""
    found: list[Measure] = []
    last_swap: dict[tuple[str, str], int] = {}
    for log, event, block in swaps:
        pool = log["address"].lower()
        pair = tokens.get(pool)
        if pair is None:
            continue
        at = quantity(log["logIndex"])
        tx = log["transactionHash"]
        moved = legs.get(tx, [])
        since = last_swap.get((tx, pool), -1)
        last_swap[(tx, pool)] = at
        outs = ((pair[0], event.amount0_out), (pair[1], event.amount1_out))
        ins = ((pair[0], event.amount0_in), (pair[1], event.amount1_in))
        for token, amount in outs:
            if amount and token not in untaxed and event.recipient not in custodians:
                got = sum(g.amount for g in moved if g.token == token and g.sender == pool
                          and g.to == event.recipient and since < g.log_index < at)
                if 0 < got <= amount:
                    found.append(Measure(token, "buy", share(amount - got, amount), block, at))
        for token, amount in ins:
            if not amount or token in untaxed:
                continue
            paid = [g for g in moved if g.token == token and g.to == pool
                    and since < g.log_index < at]
            senders = {g.sender for g in paid}
            if len(senders) != 1 or sum(g.amount for g in paid) != amount:
                continue
            seller = senders.pop()
            if seller in custodians or seller == token:
                continue
            sent = sum(g.amount for g in moved if g.token == token and g.sender == seller
                       and since < g.log_index < at)
            if sent >= amount:
                found.append(Measure(token, "sell", share(sent - amount, sent), block, at))
    return found


def share(part: int, whole: int) -> float:
    """`part` of `whole`, to nine places (a billionth of a tax is no tax)."""
    return round(part / whole, 9)


def runs(found: list[Measure], times: dict[int, datetime], chain_id: int) -> list[dict[str, Any]]:
    """The `token_taxes` rows of a batch's measures: per token and side, each run of swaps
    measuring the same tax, with how many and where it began and ended."""
    by_side: dict[tuple[str, str], list[Measure]] = defaultdict(list)
    for measure in found:
        by_side[(measure.token, measure.side)].append(measure)
    rows: list[dict[str, Any]] = []
    for (token, side), seen in by_side.items():
        start = 0
        for i in range(1, len(seen) + 1):
            if i < len(seen) and abs(seen[i].tax - seen[start].tax) <= SAME_TAX:
                continue
            first, last = seen[start], seen[i - 1]
            rows.append({"chain_id": chain_id, "token": token, "side": side,
                         "tax": round(last.tax, 6), "swaps": i - start,
                         "block_number": first.block, "log_index": first.log_index,
                         "block_time": times[first.block], "last_block": last.block,
                         "last_time": times[last.block]})
            start = i
    return rows

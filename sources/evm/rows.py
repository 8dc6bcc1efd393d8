"""A batch's rows of the lake's event tables from its logs: swaps (with their receipts' maker,
gas and fee), reserves (`Sync`, or a position-based pool's balances valued at its price),
liquidity events (with the LP or position holder), wallets' transfers and the blocks holding
them; and the LP burned for good along the way."""

from collections import defaultdict
from dataclasses import replace
from datetime import datetime
from typing import Any

import polars as pl

from sources.evm.blocks import Blocks, log_block
from sources.evm.discovery import MAX_RAW, TRANSFER, Known
from sources.evm.families import (
    Liquidity,
    Price,
    Reserves,
    SwapEvent,
    Valued,
    decoded,
    topic,
    topic_address,
)
from sources.evm.ownership import event_row, is_ownership
from sources.evm.rpc import quantity
from sources.evm.taxes import Leg, measures, runs
from sources.evm.tokens import gas, number
from sources.lake import table_frame

ZERO = "0x" + "0" * 40
DEAD = "0x000000000000000000000000000000000000dead"
# ERC-20 `balanceOf(address)`, a V3 pool's `slot0()`, an ERC-721 `ownerOf(uint256)`, and a V3
# position manager's events.
BALANCE_OF = "0x70a08231"
SLOT0 = "0x3850c7bd"
OWNER_OF = "0x6352211e"
INCREASE_LIQUIDITY = topic("IncreaseLiquidity(uint256,uint128,uint256,uint256)")
DECREASE_LIQUIDITY = topic("DecreaseLiquidity(uint256,uint128,uint256,uint256)")
# The tables a batch rewrites by block range, in commit order.
EVENT_TABLES = ("transfers", "ownership", "liquidity_events", "reserves", "swaps", "token_taxes",
                "honeypot_tests", "blocks")


class BatchRows:
    """Makes a batch's rows of one chain's pools, as `known` knows them, reading what the logs
    do not say (receipts, balances, position holders) from the node through `blocks`."""

    def __init__(self, chain_id: int, known: Known, blocks: Blocks) -> None:
        self.chain_id, self.known, self.blocks = chain_id, known, blocks

    def rows(self, pool_logs: list[dict], transfers: list[dict],
              times: dict[int, datetime], tx_counts: dict[int, int], first: int,
              last: int) -> dict[str, pl.DataFrame]:
        """The batch's rows of every event table (the LP burns go to `known`); `transfers`
        holds the tokens' `OwnershipTransferred` logs too."""
        pools = self.known.pools
        # What holds pools' tokens: the pools, and the singletons that hold theirs (a transfer
        # to or from either is a leg of a swap or a liquidity change, not a wallet's).
        custodians = pools.keys() | self.known.singletons()
        cid = self.chain_id
        lp_moves: dict[tuple[str, str], list[tuple[int, str, str, int]]] = defaultdict(list)
        legs: dict[str, list[Leg]] = defaultdict(list)
        out: dict[str, list[dict]] = {t: [] for t in EVENT_TABLES}
        for log in transfers:
            if len(log["topics"]) != 3:
                continue
            token = log["address"].lower()
            if is_ownership(log):
                if token not in pools:
                    out["ownership"].append(event_row(log, times, cid))
                continue
            sender, to = topic_address(log["topics"][1]), topic_address(log["topics"][2])
            amount = transferred(log)
            legs[log["transactionHash"]].append(
                Leg(quantity(log["logIndex"]), token, sender, to, amount))
            place = where(log, times, cid)
            if token in pools:
                lp_moves[(log["transactionHash"], token)].append(
                    (quantity(log["logIndex"]), sender, to, amount))
                if to in (ZERO, DEAD) and sender not in (ZERO, token) and amount:
                    self.known.burned(token, sender, to, amount, log, times)
                continue
            if amount == 0 or sender in custodians or to in custodians or amount > MAX_RAW:
                continue
            out["transfers"].append({**place, "tx_hash": log["transactionHash"],
                                     "token": token, "from_address": sender,
                                     "to_address": to, "amount": amount})
        events = [(log, self._event(log, pools)) for log in pool_logs]
        receipts = self.blocks.swap_receipts([log for log, event in events
                                              if isinstance(event, SwapEvent)], tx_counts)
        holders = self._position_holders(events, first, last)
        out["reserves"] += self._valued_reserves(events, transfers, times, first)
        held, moved, fees = self._singleton_state(events, times, first)
        out["reserves"] += held
        curves = self._curves()
        for log, event in events:
            pool = log["address"].lower()
            base = {**where(log, times, cid), "tx_hash": log["transactionHash"], "pair": pool}
            if isinstance(event, SwapEvent):
                amounts = (event.amount0_in, event.amount1_in, event.amount0_out,
                           event.amount1_out)
                if max(amounts) > MAX_RAW:
                    continue
                receipt = receipts[log["transactionHash"]]
                used, fee = gas(receipt)
                out["swaps"].append({**base, "maker": receipt["from"].lower(),
                                     "sender": event.sender, "recipient": event.recipient,
                                     "amount0_in": amounts[0], "amount1_in": amounts[1],
                                     "amount0_out": amounts[2], "amount1_out": amounts[3],
                                     "gas_used": max(1, used), "tx_fee_raw": fee})
            elif isinstance(event, Reserves):
                if pool in curves:
                    value, factory_type, decimals0, decimals1 = curves[pool]
                    event = value(factory_type, event, decimals0, decimals1)
                out["reserves"].append({**base, "reserve0": event.reserve0,
                                        "reserve1": event.reserve1})
            elif isinstance(event, Liquidity):
                if event.ticks is not None:
                    amount0, amount1 = moved[(log["transactionHash"], quantity(log["logIndex"]))]
                    event = replace(event, amount0=amount0, amount1=amount1)
                owner, liquidity = _liquidity_owner(event, lp_moves[(log["transactionHash"],
                                                                     pool)],
                                                    quantity(log["logIndex"]), pool)
                owner = holders.get((log["transactionHash"], quantity(log["logIndex"])), owner)
                if owner is None or not liquidity or max(event.amount0, event.amount1) > MAX_RAW:
                    continue
                out["liquidity_events"].append({**base, "kind": event.kind, "owner": owner,
                                                "amount0": event.amount0,
                                                "amount1": event.amount1,
                                                "liquidity": liquidity})
        self.known.set_fees(fees)
        swapped = [(log, event, log_block(log)) for log, event in events
                   if isinstance(event, SwapEvent)]
        out["token_taxes"] = runs(measures(
            swapped, legs, self.known.pool_tokens({log["address"].lower() for log, _, _ in swapped}),
            self.known.untaxed(), custodians), times, cid)
        counts: dict[int, int] = defaultdict(int)
        for name in ("transfers", "ownership", "liquidity_events", "reserves", "swaps"):
            for row in out[name]:
                counts[row["block_number"]] += 1
        out["blocks"] = [{"chain_id": cid, "block_number": n, "block_time": times[n],
                          "log_count": c} for n, c in sorted(counts.items())]
        return {name: table_frame(name, rows) for name, rows in out.items()}

    def _singleton_state(self, events: list[tuple[dict, Any]], times: dict[int, datetime],
                         first: int) -> tuple[list[dict], dict[tuple[str, int], tuple[int, int]],
                                              dict[str, int]]:
        """A singleton's pools through the batch (`Family.singleton`): each one's price, tick
        and active liquidity, asked of the manager at the block before the batch and moved
        by its logs; the reserves after each log (what the active liquidity holds at the
        price); each liquidity change's amounts by (transaction, log index), at the price it
        was made; and each pool's last swap's fee in basis points."""
        pools = self.known.pools
        kinds = {log["address"]: kind for log, _ in events
                 if (kind := self.known.family_of(log["address"], pools).singleton)}
        if not kinds:
            return [], {}, {}
        touched = sorted(kinds)
        before = hex(max(first - 1, 0))
        answers = self.blocks.calls([c for p in touched
                                     for c in kinds[p].state_calls(pools[p], p, before)])
        state = {p: kinds[p].read_state(*answers[2 * i:2 * i + 2])
                 for i, p in enumerate(touched)}
        rows: list[dict] = []
        moved: dict[tuple[str, int], tuple[int, int]] = {}
        fees: dict[str, int] = {}
        for log, event in events:
            pool = log["address"]
            if pool not in state:
                continue
            sqrt_price, tick, active = state[pool]
            if isinstance(event, SwapEvent) and event.sqrt_price_x96 is not None:
                sqrt_price, tick, active = (event.sqrt_price_x96, event.tick or 0,
                                            event.liquidity or 0)
                if event.fee_bps is not None:
                    fees[pool] = event.fee_bps
            elif isinstance(event, Price):
                sqrt_price, tick, active = event.sqrt_price_x96, event.tick or 0, 0
            elif isinstance(event, Liquidity) and event.ticks is not None:
                adding = event.kind == "mint"
                change = event.liquidity or 0
                moved[(log["transactionHash"], quantity(log["logIndex"]))] = \
                    kinds[pool].amounts(change, event.ticks, sqrt_price, tick, adding)
                if event.ticks[0] <= tick < event.ticks[1]:
                    active += change if adding else -change
            else:
                continue
            state[pool] = (sqrt_price, tick, active)
            if sqrt_price:
                reserve0, reserve1 = kinds[pool].reserves(active, sqrt_price)
                rows.append({**where(log, times, self.chain_id),
                             "tx_hash": log["transactionHash"], "pair": pool,
                             "reserve0": min(reserve0, MAX_RAW), "reserve1": min(reserve1, MAX_RAW)})
        return rows, moved, fees

    def _curves(self) -> dict[str, tuple[Valued, str, int, int]]:
        """The pools whose logged reserves are kept valued at their curve's price
        (`Family.valued`): each one's family, factory type and tokens' decimals."""
        pools = self.known.pools
        families = {p: v for p in pools if (v := self.known.family_of(p, pools).valued)}
        if not families:
            return {}
        decimals = dict(zip(self.known.tokens["address"], self.known.tokens["decimals"],
                            strict=True))
        return {p: (families[p], kind, decimals[t0], decimals[t1]) for p, kind, t0, t1
                in self.known.pairs.select("address", "factory_type", "token0", "token1")
                .iter_rows() if p in families}

    def _valued_reserves(self, events: list[tuple[dict, Any]], transfers: list[dict],
                         times: dict[int, datetime], first: int) -> list[dict]:
        """The reserves of the batch's concentrated-liquidity pools after each of their logs:
        the pool's token balances (asked at the block before the batch, then moved by the
        tokens' transfers in log order) valued at its price after the log, as two equal halves
        (reserve1 = (balance1 + balance0 * P) / 2, reserve0 = reserve1 / P, P token1 per
        token0): their ratio is the pool's price, twice either side its balances' worth."""
        pools = self.known.pools
        valued = {p for p in pools if self.known.family_of(p, pools).reserves_from_balances}
        touched = sorted({log["address"].lower() for log, _ in events} & valued)
        if not touched:
            return []
        sides = {p: (t0, t1) for p, t0, t1
                 in self.known.pairs.select("address", "token0", "token1").iter_rows()
                 if p in touched}
        before = hex(max(first - 1, 0))
        calls = [("eth_call", [{"to": token, "data": BALANCE_OF + pool[2:].rjust(64, "0")},
                               before]) for pool in touched for token in sides[pool]]
        calls += [("eth_call", [{"to": pool, "data": SLOT0}, before]) for pool in touched]
        answers = self.blocks.calls(calls)
        balances: dict[tuple[str, str], int] = {}
        for i, pool in enumerate(touched):
            for j, token in enumerate(sides[pool]):
                balances[(pool, token)] = number(answers[2 * i + j]) or 0
        price = {pool: number(answers[2 * len(touched) + i]) for i, pool in enumerate(touched)}
        # The pools as a transfer's topics name them: a batch's transfers are read once each.
        named = {"0x" + pool[2:].rjust(64, "0") for pool in sides}
        moves = [(log_block(log), quantity(log["logIndex"]), log, None) for log in transfers
                 if len(log["topics"]) == 3 and (log["topics"][1] in named
                                                 or log["topics"][2] in named)
                 and log_block(log) >= first]
        moves += [(log_block(log), quantity(log["logIndex"]), log, event)
                  for log, event in events if log["address"].lower() in sides]
        rows: list[dict] = []
        for _, _, log, event in sorted(moves, key=lambda m: (m[0], m[1])):
            if event is None:
                token = log["address"].lower()
                amount = transferred(log)
                for end, sign in ((topic_address(log["topics"][2]), 1),
                                  (topic_address(log["topics"][1]), -1)):
                    if end in sides and token in sides[end]:
                        balances[(end, token)] += sign * amount
                continue
            pool = log["address"].lower()
            if isinstance(event, SwapEvent | Price) and event.sqrt_price_x96:
                price[pool] = event.sqrt_price_x96
            sqrt_price = price.get(pool)
            if not sqrt_price:
                continue
            b0, b1 = (max(balances[(pool, t)], 0) for t in sides[pool])
            worth = b1 * 2**192 + b0 * sqrt_price**2
            rows.append({**where(log, times, self.chain_id), "tx_hash": log["transactionHash"],
                         "pair": pool, "reserve0": min(worth // (2 * sqrt_price**2), MAX_RAW),
                         "reserve1": min(worth // 2**193, MAX_RAW)})
        return rows

    def _position_holders(self, events: list[tuple[dict, Any]], first: int,
                          last: int) -> dict[tuple[str, int], str]:
        """Who holds the position each concentrated-liquidity change of the batch made by a
        position manager, by (transaction, log index): the holder of the manager's NFT that
        the change names (by the `IncreaseLiquidity` or `DecreaseLiquidity` that follows it in
        its transaction, or, a V4 manager's, by its salt) when the change was made, from the
        NFT's transfers of the batch, else its owner at that block."""
        managers = {v.position_manager for v in self.known.venues.values() if v.position_manager}
        if not any(isinstance(event, Liquidity) and event.owner in managers
                   for _, event in events):
            return {}
        logs = self.blocks.logs(first, last, sorted(managers),
                          [[INCREASE_LIQUIDITY, DECREASE_LIQUIDITY, TRANSFER]])
        by_tx: dict[str, list[dict]] = defaultdict(list)
        for log in logs:
            by_tx[log["transactionHash"]].append(log)
        # Each NFT's transfers in the batch, in chain order, by (manager, token id).
        moves: dict[tuple[str, int], list[tuple[int, int, str, str]]] = defaultdict(list)
        for log in logs:
            if log["topics"][0] == TRANSFER and len(log["topics"]) == 4:
                moves[(log["address"].lower(), int(log["topics"][3], 16))].append(
                    (log_block(log), quantity(log["logIndex"]),
                     topic_address(log["topics"][1]), topic_address(log["topics"][2])))
        named: dict[tuple[str, int], tuple[str, int, int, int]] = {}
        for log, event in events:
            if not isinstance(event, Liquidity) or event.owner not in managers:
                continue
            key = (log["transactionHash"], quantity(log["logIndex"]))
            token = event.salt
            if token is None:
                follows = next((m for m in by_tx[log["transactionHash"]]
                                if m["topics"][0] in (INCREASE_LIQUIDITY, DECREASE_LIQUIDITY)
                                and quantity(m["logIndex"]) > key[1]), None)
                token = None if follows is None else int(follows["topics"][1], 16)
            if token is not None:
                named[key] = (str(event.owner), token, log_block(log), key[1])
        found: dict[tuple[str, int], str] = {}
        asked: list[tuple[str, int, int]] = []
        for key, (manager, token, block, index) in named.items():
            holder = _holder_at(moves.get((manager, token), []), (block, index))
            if holder is not None:
                found[key] = holder
            else:
                asked.append((manager, token, block))
        asked = sorted(set(asked))
        owners = self.blocks.rpc.batch([("eth_call", [{"to": m, "data": OWNER_OF + f"{t:064x}"},
                                                      hex(block)]) for m, t, block in asked],
                                       errors=True) if asked else []
        held = {nft: "0x" + a[-40:].lower() for nft, a in zip(asked, owners, strict=True)
                if isinstance(a, str) and len(a) >= 42}
        for key, (manager, token, block, _) in named.items():
            if key not in found and (manager, token, block) in held:
                found[key] = held[(manager, token, block)]
        return found

    def _event(self, log: dict, pools: dict[str, str]) -> Any:
        return self.known.family_of(log["address"].lower(), pools).event(log)


def _holder_at(moves: list[tuple[int, int, str, str]], at: tuple[int, int]) -> str | None:
    """Who held an NFT at a place in the chain, from its transfers of the batch: the last one
    at or before it made its receiver the holder; with none, the first after it tells the
    holder then (a new NFT's receiver, minted after its position changed; else its sender).
    None when the batch moved it nowhere."""
    before = [m for m in moves if (m[0], m[1]) <= at]
    if before:
        return before[-1][3] if before[-1][3] != ZERO else before[-1][2]
    after = [m for m in moves if (m[0], m[1]) > at]
    if after:
        return after[0][3] if after[0][2] == ZERO else after[0][2]
    return None


def _liquidity_owner(event: Liquidity, moves: list[tuple[int, str, str, int]], at: int,
                     pool: str) -> tuple[str | None, int | None]:
    """Who added or removed liquidity and how much LP it was, from the pool's LP transfers of
    the same transaction before the event: a mint's transfer from the zero address to the
    owner, a burn's from the pool to the zero address."""
    before = [m for m in moves if m[0] < at]
    if event.kind == "mint":
        minted = [m for m in before if m[1] == ZERO and m[2] != ZERO]
        return (minted[-1][2], minted[-1][3]) if minted else (event.owner, event.liquidity)
    burnt = [m for m in before if m[1] == pool and m[2] == ZERO]
    return event.owner, burnt[-1][3] if burnt else event.liquidity


def transferred(log: dict) -> int:
    """The amount an ERC-20 `Transfer` log moved (0 when its data is empty)."""
    return decoded(["uint256"], log["data"][:66])[0] if log["data"] not in ("0x", "") else 0


def where(log: dict, times: dict[int, datetime], chain_id: int) -> dict[str, Any]:
    """A log's place: its chain, block, index in the block and the block's time."""
    block = log_block(log)
    return {"chain_id": chain_id, "block_number": block, "log_index": quantity(log["logIndex"]),
            "block_time": times[block]}

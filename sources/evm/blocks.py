"""A chain's blocks, logs and receipts as its node answers them, batched: the headers of a
range, each naming the one before as its parent (a reorg's fork point found among the kept
hashes), the logs of addresses and topics in chain order, and the receipts of transactions."""

import re
from collections import defaultdict
from collections.abc import Callable, Iterable, Sequence
from datetime import UTC, datetime
from typing import Any

from sources.evm.rpc import Rpc, RpcError, quantity
from sources.lake import LakeError

# Addresses named in one eth_getLogs filter; more are asked in several.
ADDRESSES_PER_QUERY = 500
# Calls in one JSON-RPC batch request.
CALLS_PER_BATCH = 200
# What a node answers for a method it does not have.
UNSUPPORTED = re.compile(r"not (found|supported|available|exist)|unsupported|unknown method|"
                         r"does not exist|method .*not", re.IGNORECASE)


class ChainMoved(LakeError):
    """The node's chain changed while a batch was read."""


class Blocks:
    """Reads one node's chain: headers, logs and receipts, CALLS_PER_BATCH calls a request."""

    def __init__(self, rpc: Rpc) -> None:
        self.rpc = rpc
        # Whether the node answers `eth_getBlockReceipts` (until it says it does not).
        self.block_receipts = True

    def linked(self, first: int, last: int, hashes: dict[int, str]) -> tuple[int, dict[int, dict]]:
        """The headers of [first, last], each naming the one before as its parent and the
        first naming the kept hash of the block before it (`hashes`); `first` moves back to a
        reorg's fork point when the node's chain no longer holds the kept one."""
        for _ in range(8):
            headers = self.headers(range(first, last + 1))
            kept = hashes.get(first - 1)
            if kept is not None and headers[first]["parentHash"] != kept:
                first = self.fork_point(first - 1, hashes) + 1
                continue
            if all(headers[n]["parentHash"] == headers[n - 1]["hash"]
                   for n in range(first + 1, last + 1)):
                return first, headers
        raise ChainMoved(f"the node's chain kept changing under blocks {first}..{last}")

    def fork_point(self, below: int, hashes: dict[int, str]) -> int:
        """The newest kept block at or below `below` whose hash the node still has."""
        kept = sorted((n for n in hashes if n <= below), reverse=True)
        now = self.headers(kept)
        for n in kept:
            if now[n]["hash"] == hashes[n]:
                return n
        raise LakeError(f"a reorg deeper than the {len(kept)} blocks whose hashes are kept "
                        f"(below block {below}): ingest again with --from-block")

    def headers(self, numbers: Iterable[int]) -> dict[int, dict]:
        """The headers of blocks `numbers`."""
        return self.each("eth_getBlockByNumber", list(numbers), lambda n: [hex(n), False],
                         "block")

    def each(self, method: str, keys: list, params: Callable[[Any], list],
             what: str) -> dict:
        """`method` for each key, CALLS_PER_BATCH to a request; a key the node has nothing
        for is an error."""
        found = {}
        chunks = [keys[i:i + CALLS_PER_BATCH] for i in range(0, len(keys), CALLS_PER_BATCH)]
        answered = self.rpc.batches([[(method, params(k)) for k in chunk] for chunk in chunks])
        for chunk, answers in zip(chunks, answered, strict=True):
            for key, answer in zip(chunk, answers, strict=True):
                if answer is None:
                    raise LakeError(f"the node has no {what} {key}")
                found[key] = answer
        return found

    def calls(self, calls: list[tuple[str, list[Any]]]) -> list[Any]:
        """Many calls, CALLS_PER_BATCH to a request, each answer or its error in order."""
        return [a for chunk in self.rpc.batches(
            [calls[i:i + CALLS_PER_BATCH] for i in range(0, len(calls), CALLS_PER_BATCH)],
            errors=True) for a in chunk]

    def times(self, numbers: set[int]) -> dict[int, datetime]:
        """The times of blocks `numbers`."""
        return {n: block_time(h) for n, h in self.headers(sorted(numbers)).items()}

    def head_time(self, head: int, headers: dict[int, dict]) -> datetime:
        """The head block's time, from `headers` when they hold it."""
        return block_time(headers.get(head) or self.headers([head])[head])

    def logs(self, first: int, last: int, addresses: Sequence[str] | None,
             topics: list[Any]) -> list[dict]:
        """The logs of [first, last] from `addresses` (None: any) matching `topics`, in chain
        order."""
        parts = [None] if addresses is None else [
            addresses[i:i + ADDRESSES_PER_QUERY]
            for i in range(0, len(addresses), ADDRESSES_PER_QUERY)]
        found = [log for part in parts for log in self.rpc.spread_logs(first, last, part, topics)]
        return sorted(found, key=lambda x: (log_block(x), quantity(x["logIndex"])))

    def receipts(self, hashes: set[str]) -> dict[str, dict]:
        """The receipts of transactions `hashes`."""
        return self.each("eth_getTransactionReceipt", sorted(hashes), lambda h: [h],
                         "receipt of")

    def swap_receipts(self, logs: list[dict], tx_counts: dict[int, int]) -> dict[str, dict]:
        """The receipts of the swaps' transactions: a block's all at once
        (`eth_getBlockReceipts`) where they are at least half its transactions, else one by
        one; one by one throughout on a node without the method."""
        wanted: dict[int, set[str]] = defaultdict(set)
        for log in logs:
            wanted[log_block(log)].add(log["transactionHash"])
        whole = [n for n, hashes in wanted.items() if self.block_receipts
                 and 2 * len(hashes) >= tx_counts.get(n, len(hashes) + 1)]
        found: dict[str, dict] = {}
        if whole:
            try:
                blocks = self.each("eth_getBlockReceipts", sorted(whole), lambda n: [hex(n)],
                                   "receipts of block")
            except RpcError as err:
                if not UNSUPPORTED.search(err.message):
                    raise
                self.block_receipts, whole = False, []
            else:
                found = {r["transactionHash"]: r for receipts in blocks.values()
                         for r in receipts}
        rest = {h for n, hashes in wanted.items() if n not in whole for h in hashes}
        return {**found, **self.receipts(rest)}


def log_block(log: dict) -> int:
    """A log's block number."""
    return quantity(log["blockNumber"])


def block_time(header: dict) -> datetime:
    """A block header's time."""
    return datetime.fromtimestamp(quantity(header["timestamp"]), UTC)


def same_chain(logs: list[dict], headers: dict[int, dict], first: int) -> None:
    """Every log of the batch's range comes from the blocks whose headers were read (else the
    chain changed between the two reads, and the batch is read again)."""
    for log in logs:
        block = log_block(log)
        if block >= first and block in headers and log["blockHash"] != headers[block]["hash"]:
            raise ChainMoved(f"block {block} changed while it was read")

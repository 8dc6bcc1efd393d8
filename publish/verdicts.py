"""Token verdicts as EIP-712 structs, and the Merkle tree over one epoch's verdicts that each
snapshot publishes: a leaf is a verdict's EIP-712 struct hash, a parent the keccak of its two
children in ascending byte order, an unpaired node moves up unchanged."""

from datetime import datetime
from typing import Any

import polars as pl
from eth_utils.crypto import keccak

DOMAIN = {"name": "chaintape", "version": "1"}
TYPES = {
    "TokenVerdict": [("chainId", "uint256"), ("token", "string"), ("status", "string"),
                     ("epoch", "uint64")],
    "VerdictRoot": [("epoch", "uint64"), ("root", "bytes32"), ("leaves", "uint256")],
}
EMPTY_ROOT = bytes(32)


def epoch_of(as_of: datetime) -> int:
    """A snapshot's epoch: the Unix second its figures are as of."""
    return int(as_of.timestamp())


def _type_hash(primary: str) -> bytes:
    fields = ",".join(f"{kind} {name}" for name, kind in TYPES[primary])
    return keccak(f"{primary}({fields})".encode())


_TYPE_HASHES = {primary: _type_hash(primary) for primary in TYPES}


def _encode(kind: str, value: Any) -> bytes:
    if kind == "string":
        return bytes(keccak(value.encode()))
    if kind == "bytes32":
        return bytes(value)
    return int(value).to_bytes(32, "big")


def struct_hash(primary: str, message: dict[str, Any]) -> bytes:
    """EIP-712 hashStruct of `message` as the `primary` type."""
    return keccak(_TYPE_HASHES[primary] + b"".join(
        _encode(kind, message[name]) for name, kind in TYPES[primary]))


def verdict_message(chain_id: int, token: str, status: str, epoch: int) -> dict[str, Any]:
    """The TokenVerdict a leaf hashes and the verdict read signs."""
    return {"chainId": chain_id, "token": token, "status": status, "epoch": epoch}


def typed_data(primary: str, message: dict[str, Any]) -> dict[str, Any]:
    """The full EIP-712 document (as eth_signTypedData_v4 takes it) for one message."""
    shown = {k: "0x" + v.hex() if isinstance(v, bytes) else v for k, v in message.items()}
    return {"types": {"EIP712Domain": [{"name": "name", "type": "string"},
                                       {"name": "version", "type": "string"}],
                      primary: [{"name": n, "type": t} for n, t in TYPES[primary]]},
            "primaryType": primary, "domain": DOMAIN, "message": shown}


def parent(left: bytes, right: bytes) -> bytes:
    """A parent node: the keccak of its children in ascending order, so proofs carry no sides."""
    return keccak(left + right if left <= right else right + left)


def tree_levels(leaves: list[bytes]) -> list[list[bytes]]:
    """Every level of the tree, the leaves first and the root alone last."""
    levels = [leaves]
    while len(levels[-1]) > 1:
        below = levels[-1]
        levels.append([parent(below[i], below[i + 1]) if i + 1 < len(below) else below[i]
                       for i in range(0, len(below), 2)])
    return levels


def root_of(levels: list[list[bytes]]) -> bytes:
    """The tree's root; all zeroes for an epoch without verdicts."""
    return levels[-1][0] if levels[0] else EMPTY_ROOT


def merkle_proof(levels: list[list[bytes]], index: int) -> list[bytes]:
    """The sibling hashes from leaf `index` up to the root (unpaired levels add none)."""
    path = []
    for level in levels[:-1]:
        sibling = index ^ 1
        if sibling < len(level):
            path.append(level[sibling])
        index //= 2
    return path


def verify(leaf: bytes, path: list[bytes], root: bytes) -> bool:
    """Whether `path` leads from `leaf` to `root`."""
    node = leaf
    for sibling in path:
        node = parent(node, sibling)
    return node == root


def verdict_tree(tokens: pl.DataFrame, epoch: int) -> tuple[pl.DataFrame, pl.DataFrame, dict[str, Any]]:
    """From token rows: the verdicts table (a leaf index per token, in chain id then address
    order), the tree table (every node by level and position) and the epoch's summary."""
    verdicts = (tokens.select("chain_id", "address", status="verdict")
                .sort("chain_id", "address").with_row_index("leaf_index"))
    leaves = [struct_hash("TokenVerdict", verdict_message(c, a, s, epoch))
              for c, a, s in verdicts.select("chain_id", "address", "status").iter_rows()]
    levels = tree_levels(leaves)
    nodes = pl.DataFrame(
        {"level": [n for n, level in enumerate(levels) for _ in level],
         "position": [i for level in levels for i in range(len(level))],
         "hash": [h for level in levels for h in level]},
        schema={"level": pl.Int32, "position": pl.Int64, "hash": pl.Binary})
    root = root_of(levels)
    return verdicts, nodes, {"epoch": epoch, "root": "0x" + root.hex(), "leaves": len(leaves)}

"""Verdict leaves are EIP-712 struct hashes and the tree's proofs lead to its root; expected
hashes come from eth_account's own EIP-712 encoder and trees are worked by hand."""

from datetime import UTC, datetime

import polars as pl
from eth_account._utils.encode_typed_data.encoding_and_hashing import hash_struct
from eth_utils import keccak

from publish.verdicts import (
    EMPTY_ROOT,
    TYPES,
    epoch_of,
    merkle_proof,
    root_of,
    struct_hash,
    tree_levels,
    verdict_message,
    verdict_tree,
    verify,
)

FIELDS = {name: [{"name": n, "type": t} for n, t in fields] for name, fields in TYPES.items()}


def h(text: str) -> bytes:
    return keccak(text.encode())


def sorted_pair(a: bytes, b: bytes) -> bytes:
    return keccak(min(a, b) + max(a, b))


def test_leaves_are_the_eip712_struct_hash_of_the_verdict() -> None:
    message = verdict_message(8453, "0xabc0000000000000000000000000000000000001", "blocked",
                              1_790_000_000)
    assert struct_hash("TokenVerdict", message) == hash_struct("TokenVerdict", FIELDS, message)
    root = {"epoch": 5, "root": b"\x11" * 32, "leaves": 3}
    assert struct_hash("VerdictRoot", root) == hash_struct("VerdictRoot", FIELDS, root)


def test_a_three_leaf_tree_worked_by_hand() -> None:
    a, b, c = h("a"), h("b"), h("c")
    levels = tree_levels([a, b, c])
    expected_root = sorted_pair(sorted_pair(a, b), c)
    assert root_of(levels) == expected_root
    assert merkle_proof(levels, 0) == [b, c]
    assert merkle_proof(levels, 2) == [sorted_pair(a, b)]
    for index, leaf in enumerate((a, b, c)):
        assert verify(leaf, merkle_proof(levels, index), expected_root)
    assert not verify(h("d"), merkle_proof(levels, 2), expected_root)
    assert not verify(a, merkle_proof(levels, 1), expected_root)


def test_one_leaf_is_its_own_root_and_no_leaves_give_the_zero_root() -> None:
    leaf = h("only")
    assert root_of(tree_levels([leaf])) == leaf and merkle_proof(tree_levels([leaf]), 0) == []
    assert root_of(tree_levels([])) == EMPTY_ROOT == bytes(32)


def test_the_tree_orders_leaves_by_chain_then_address_and_a_changed_status_breaks_it() -> None:
    as_of = datetime(2026, 11, 20, 12, tzinfo=UTC)
    tokens = pl.DataFrame({"chain_id": [56, 1, 1], "address": ["0x03", "0x02", "0x01"],
                           "verdict": ["ok", "blocked", "watch"]})
    verdicts, nodes, summary = verdict_tree(tokens, epoch_of(as_of))
    assert verdicts.select("leaf_index", "chain_id", "address", "status").rows() == [
        (0, 1, "0x01", "watch"), (1, 1, "0x02", "blocked"), (2, 56, "0x03", "ok")]
    epoch = (20_777 * 86_400) + 12 * 3_600  # 20,777 days from 1970-01-01 to 2026-11-20
    assert epoch_of(as_of) == epoch
    leaves = [hash_struct("TokenVerdict", FIELDS, verdict_message(c, a, s, epoch))
              for c, a, s in ((1, "0x01", "watch"), (1, "0x02", "blocked"), (56, "0x03", "ok"))]
    root = sorted_pair(sorted_pair(leaves[0], leaves[1]), leaves[2])
    assert summary == {"epoch": epoch, "root": "0x" + root.hex(), "leaves": 3}
    assert nodes.filter(level=0)["hash"].to_list() == leaves
    assert nodes.filter(level=2)["hash"].to_list() == [root]
    forged = hash_struct("TokenVerdict", FIELDS, verdict_message(1, "0x02", "ok", epoch))
    assert not verify(forged, [leaves[0], leaves[2]], root)
    assert verify(leaves[1], [leaves[0], leaves[2]], root)

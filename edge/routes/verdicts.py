"""A token's verdict signed with EIP-712, and its Merkle proof at the last published epoch."""

from dataclasses import dataclass
from typing import Any

import orjson

from core.caches import LruCache
from edge.addresses import ChainRef
from edge.memo import per_snapshot
from edge.snapshots import snapshot_json, table
from edge.web.http import Request, Response
from edge.web.problems import ApiError
from edge.web.registry import Params
from publish.reader import Snapshot
from publish.verdicts import merkle_proof, root_of, verdict_message

_signed: LruCache[dict[str, Any]] = LruCache(4096)


@dataclass(frozen=True)
class Epoch:
    """One snapshot's verdict tree: its number, root, every level and each token's leaf."""

    number: int
    root: bytes
    levels: list[list[bytes]]
    leaves: dict[tuple[int, str], tuple[int, str]]


@per_snapshot(kept=4)
def epoch(snapshot: Snapshot) -> Epoch:
    """The snapshot's verdict tree, read once; 503 when the snapshot carries none or its tree
    does not lead to the root it published."""
    published = snapshot.documents.get("verdicts")
    if published is None:
        raise ApiError("upstream_unavailable", "the published snapshot carries no verdicts; "
                       "retry after the next publish")
    summary = orjson.loads(published)
    nodes, verdicts = table(snapshot, "verdict_tree"), table(snapshot, "verdicts")
    levels = [part["hash"].to_list()
              for part in nodes.sort("level", "position").partition_by("level",
                                                                          maintain_order=True)] or [[]]
    root = root_of(levels)
    if "0x" + root.hex() != summary["root"]:
        raise ApiError("upstream_unavailable", "the published verdict tree does not match its "
                       "root; retry after the next publish")
    keys = zip(verdicts["chain_id"].to_list(), verdicts["address"].to_list(), strict=True)
    values = zip(verdicts["leaf_index"].to_list(), verdicts["status"].to_list(), strict=True)
    return Epoch(summary["epoch"], root, levels, dict(zip(keys, values, strict=True)))


def _head(snapshot: Snapshot, chain: ChainRef, address: str, found: Epoch, status: str) -> dict[str, Any]:
    return {"chain": chain.slug, "chain_id": chain.chain_id, "address": address,
            "verdict": {"status": status}, "epoch": found.number,
            "snapshot_id": snapshot.snapshot_id, "as_of": snapshot.manifest.as_of}


async def get_verdict(request: Request, params: Params) -> Response:
    """A token's verdict at the last published epoch, signed; a token the snapshot does not
    list is `unknown` (signed too: nothing is recorded about it)."""
    snapshot = request.state.snapshot
    chain: ChainRef = params["chain"]
    address = params["address"]
    found = epoch(snapshot)
    index, status = found.leaves.get((chain.chain_id, address), (None, "unknown"))
    key = (snapshot.snapshot_id, chain.chain_id, address)
    signed = _signed.get(key) or _signed.put(key, request.state.notary.sign(
        "TokenVerdict", verdict_message(chain.chain_id, address, status, found.number)))
    body = {**_head(snapshot, chain, address, found, status), "listed": index is not None,
            "leaf_index": index, **signed}
    return snapshot_json(snapshot, body)


async def get_proof(request: Request, params: Params) -> Response:
    """The Merkle proof that a token's verdict is a leaf of the last published epoch's tree,
    with the root signed; 404 for a token the snapshot does not list."""
    snapshot = request.state.snapshot
    chain: ChainRef = params["chain"]
    address = params["address"]
    found = epoch(snapshot)
    leaf = found.leaves.get((chain.chain_id, address))
    if leaf is None:
        raise ApiError("not_found", f"no verdict for {address} on {chain.slug} in epoch "
                       f"{found.number}", "address")
    index, status = leaf
    key = (snapshot.snapshot_id, "root")
    signed = _signed.get(key) or _signed.put(key, request.state.notary.sign(
        "VerdictRoot", {"epoch": found.number, "root": found.root,
                        "leaves": len(found.levels[0])}))
    body = {**_head(snapshot, chain, address, found, status),
            "leaf": "0x" + found.levels[0][index].hex(), "leaf_index": index,
            "proof": ["0x" + h.hex() for h in merkle_proof(found.levels, index)],
            "root": "0x" + found.root.hex(), "leaves": len(found.levels[0]), "root_signed": signed}
    return snapshot_json(snapshot, body)


HANDLERS = {("GET", "/chains/{chain}/tokens/{address}/verdict"): get_verdict,
            ("GET", "/chains/{chain}/tokens/{address}/proof"): get_proof}

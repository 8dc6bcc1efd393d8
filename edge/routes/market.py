"""Pair reads: one pair row by chain and address, and pair rows in batches across chains."""

from collections import defaultdict

import orjson

from edge.addresses import ChainRef, normalize, resolve_chain
from edge.http import Request, Response
from edge.memo import per_snapshot
from edge.problems import ApiError
from edge.snapshots import snapshot_headers, snapshot_json
from publish.snapshot import Snapshot

# Batch rows carry no LP lock figures (spec 2.3): these are taken out of them.
LOCK_FIGURES = {"security": ("locked_pct", "top_lock_provider", "earliest_unlock_at"),
                "safety": ("lp_locked_pct",)}


@per_snapshot(kept=4)
def pair_index(snapshot: Snapshot) -> dict[int, dict[str, str]]:
    """Pair rows by chain id, then by address (built once per snapshot)."""
    index: dict[int, dict[str, str]] = defaultdict(dict)
    table = snapshot.tables.get("pairs")
    if table is not None:
        for chain_id, pair, item in table.select("chain_id", "pair", "item").iter_rows():
            index[chain_id][pair] = item
    return dict(index)


async def get_pair(request: Request, params: dict) -> Response:
    """One pair row; 404 when the chain indexes no pair at that address."""
    snapshot = request.state.snapshot
    chain: ChainRef = params["chain"]
    item = pair_index(snapshot).get(chain.chain_id, {}).get(params["address"])
    if item is None:
        raise ApiError("not_found", f"no pair {params['address']} on {chain.slug}", "address")
    return Response(item.encode(), headers=snapshot_headers(snapshot))


def _without_lock_figures(item: str) -> dict:
    row = orjson.loads(item)
    for block, fields in LOCK_FIGURES.items():
        for name in fields:
            row[block].pop(name, None)
    return row


async def batch_pairs(request: Request, params: dict) -> Response:
    """Pair rows for up to 50 (chain, address) items, grouped into one read per chain; an item
    nobody indexes comes back with found false and never fails the batch."""
    snapshot = request.state.snapshot
    index = pair_index(snapshot)
    wanted = params["body"]["items"]
    by_chain: dict[int | None, list[int]] = defaultdict(list)
    refs: list[ChainRef | None] = []
    for position, asked in enumerate(wanted):
        try:
            ref = resolve_chain(snapshot, asked["chain"], "chain")
        except ApiError:
            ref = None
        refs.append(ref)
        by_chain[None if ref is None else ref.chain_id].append(position)
    answers: list[dict] = [{}] * len(wanted)
    for chain_id, positions in by_chain.items():
        rows = index.get(chain_id, {}) if chain_id is not None else {}
        for position in positions:
            answers[position] = _batch_item(wanted[position], refs[position], rows)
    return snapshot_json(snapshot, {"items": answers})


def _batch_item(asked: dict, ref: ChainRef | None, rows: dict[str, str]) -> dict:
    """One batch answer; what cannot be found (unknown chain, malformed address) is not found."""
    address, item = asked["address"], None
    if ref is not None:
        try:
            address = normalize(address, ref.address_format)
            item = rows.get(address)
        except ApiError:
            pass
    return {"chain": ref.slug if ref else asked["chain"], "address": address,
            "found": item is not None,
            "pair": None if item is None else _without_lock_figures(item)}


HANDLERS = {("GET", "/chains/{chain}/pairs/{address}"): get_pair,
            ("POST", "/pairs/batch"): batch_pairs}

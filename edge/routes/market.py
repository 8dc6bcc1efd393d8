"""Pair reads: one pair row by chain and address, and pair rows in batches across chains."""

from collections import defaultdict

import orjson

from edge.addresses import ChainRef, chain_index, normalize
from edge.http import Request, Response
from edge.problems import ApiError
from publish.snapshot import Snapshot

# A few snapshots are in play at once (the current one and those cursors pin), so keep a few.
INDEXES_KEPT = 4
_pairs: dict[str, dict[int, dict[str, str]]] = {}
# Batch rows carry no LP lock figures (spec 2.3): these are taken out of them.
LOCK_FIGURES = {"security": ("locked_pct", "top_lock_provider", "earliest_unlock_at"),
                "safety": ("lp_locked_pct",)}


def pair_index(snapshot: Snapshot) -> dict[int, dict[str, str]]:
    """Pair rows by chain id, then by address (built once per snapshot)."""
    index = _pairs.get(snapshot.snapshot_id)
    if index is None:
        index = defaultdict(dict)
        table = snapshot.tables.get("pairs")
        if table is not None:
            for chain_id, pair, item in table.select("chain_id", "pair", "item").iter_rows():
                index[chain_id][pair] = item
        index = dict(index)
        if len(_pairs) >= INDEXES_KEPT:
            del _pairs[next(iter(_pairs))]
        _pairs[snapshot.snapshot_id] = index
    return index


def _snapshot_header(snapshot: Snapshot) -> list[tuple[str, str]]:
    return [("x-snapshot-id", snapshot.snapshot_id)]


async def get_pair(request: Request, params: dict) -> Response:
    """One pair row; 404 when the chain indexes no pair at that address."""
    snapshot = request.state.snapshot
    chain: ChainRef = params["chain"]
    item = pair_index(snapshot).get(chain.chain_id, {}).get(params["address"])
    if item is None:
        raise ApiError("not_found", f"no pair {params['address']} on {chain.slug}", "address")
    return Response(item.encode(), headers=_snapshot_header(snapshot))


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
    chains = chain_index(snapshot)
    index = pair_index(snapshot)
    wanted = params["body"]["items"]
    by_chain: dict[int | None, list[int]] = defaultdict(list)
    refs: list[ChainRef | None] = []
    for position, asked in enumerate(wanted):
        ref = chains.get(asked["chain"].lower())
        refs.append(ref)
        by_chain[None if ref is None else ref.chain_id].append(position)
    answers: list[dict] = [{}] * len(wanted)
    for chain_id, positions in by_chain.items():
        rows = index.get(chain_id, {}) if chain_id is not None else {}
        for position in positions:
            asked, ref = wanted[position], refs[position]
            address = asked["address"]
            if ref is not None:
                try:
                    address = normalize(address, ref.address_format)
                except ApiError:
                    ref = None
            item = rows.get(address) if ref is not None else None
            answers[position] = {"chain": ref.slug if ref else asked["chain"], "address": address,
                                 "found": item is not None,
                                 "pair": None if item is None else _without_lock_figures(item)}
    return Response(orjson.dumps({"items": answers}), headers=_snapshot_header(snapshot))


HANDLERS = {("GET", "/chains/{chain}/pairs/{address}"): get_pair,
            ("POST", "/pairs/batch"): batch_pairs}

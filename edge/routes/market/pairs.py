"""Pairs: one pair row by chain and address, pair rows in batches across chains, and the pair
lists (/trending, /pairs, /pairs/new), ordered by the same functions that publish the default
pages."""

from typing import Any

import orjson
import polars as pl

from edge.addresses import ChainRef, normalize, resolve_chain
from edge.live.tail import LiveView, live_pair_item, pair_row
from edge.paging import ROW, Listing, gather_rows, numbered, page
from edge.routes.chains import asked_chains, chain_states, in_scope
from edge.snapshots import snapshot_headers, snapshot_json, table
from edge.web.http import Request, Response
from edge.web.problems import ApiError
from edge.web.registry import Params
from publish.cursor import list_scope
from publish.market import new_pairs, pair_list, pair_scope
from publish.reader import Snapshot

# Batch rows carry no LP lock figures (spec 2.3): these are taken out of them.
LOCK_FIGURES = {"security": ("locked_pct", "top_lock_provider", "earliest_unlock_at"),
                "safety": ("lp_locked_pct",)}


def pair_item(snapshot: Snapshot, view: LiveView | None, key: tuple[int, str],
              item: str) -> bytes:
    """A pair row as served: the snapshot's, with its live blocks as of the tail's watermark
    when the tail adds to the snapshot."""
    if view is None:
        return item.encode()
    return live_pair_item(snapshot, view, key, item)


async def get_pair(request: Request, params: Params) -> Response:
    """One pair row; 404 when the chain indexes no pair at that address."""
    snapshot, view = request.state.snapshot, request.state.live
    chain: ChainRef = params["chain"]
    item = pair_row(snapshot, (chain.chain_id, params["address"]))
    if item is None:
        raise ApiError("not_found", f"no pair {params['address']} on {chain.slug}", "address")
    body = pair_item(snapshot, view, (chain.chain_id, params["address"]), item)
    return Response(body, headers=snapshot_headers(snapshot, view and view.as_of_text))


def _without_lock_figures(item: bytes) -> dict[str, Any]:
    row: dict[str, Any] = orjson.loads(item)
    for block, fields in LOCK_FIGURES.items():
        for name in fields:
            row[block].pop(name, None)
    return row


async def batch_pairs(request: Request, params: Params) -> Response:
    """Pair rows for up to 50 (chain, address) items; an item nobody indexes comes back with
    found false and never fails the batch."""
    snapshot, view = request.state.snapshot, request.state.live
    answers = [_batch_item(snapshot, view, asked) for asked in params["body"]["items"]]
    return snapshot_json(snapshot, {"items": answers}, view and view.as_of_text)


def _batch_item(snapshot: Snapshot, view: LiveView | None,
                asked: dict[str, Any]) -> dict[str, Any]:
    """One batch answer; what cannot be found (unknown chain, malformed address) is not found."""
    address, item, ref = asked["address"], None, None
    try:
        ref = resolve_chain(snapshot, asked["chain"], "chain")
        address = normalize(address, ref.address_format)
        item = pair_row(snapshot, (ref.chain_id, address))
    except ApiError:
        pass
    return {"chain": ref.slug if ref else asked["chain"], "address": address,
            "found": item is not None,
            "pair": None if item is None or ref is None else _without_lock_figures(
                pair_item(snapshot, view, (ref.chain_id, address), item))}


def _pair_listing(name: str, sort: str, timeframe: str, descending: bool,
                  asked: tuple[int, ...] | None) -> Listing:
    def stale_in(snapshot: Snapshot) -> dict[int, str]:
        return chain_states(snapshot)[1] if sort == "trending" else {}

    def order(snapshot: Snapshot) -> pl.DataFrame:
        return pair_list(numbered(table(snapshot, "pairs")), sort, timeframe, descending,
                         in_scope(snapshot, asked), stale_in(snapshot)).select(ROW)

    def envelope(snapshot: Snapshot) -> dict[str, Any]:
        stale = stale_in(snapshot)
        return {"applied_sort": sort, "applied_timeframe": timeframe,
                "excluded_chains": [stale[c] for c in in_scope(snapshot, asked) if c in stale]}

    return Listing(name, order, pair_scope(sort, timeframe, descending, asked),
                   envelope=envelope, gather=gather_rows("pairs"))


async def trending(request: Request, params: Params) -> Response:
    """Trending pairs: the /pairs?sort=trending ordering over the default timeframe."""
    listing = _pair_listing("trending", "trending", "h24", True, asked_chains(params))
    return await page(request, listing, params["limit"], params["cursor"])


async def list_pairs(request: Request, params: Params) -> Response:
    """Pairs in any sort /config lists, over a timeframe, in either direction."""
    listing = _pair_listing("pairs", params["sort"], params["timeframe"],
                            params["order"] == "desc", asked_chains(params))
    return await page(request, listing, params["limit"], params["cursor"])


async def list_new_pairs(request: Request, params: Params) -> Response:
    """Pairs newest first."""
    asked = asked_chains(params)
    listing = Listing("pairs/new", lambda s: new_pairs(numbered(table(s, "pairs")),
                                                       in_scope(s, asked)).select(ROW),
                      list_scope(chains=asked), gather=gather_rows("pairs"))
    return await page(request, listing, params["limit"], params["cursor"])


HANDLERS = {("GET", "/chains/{chain}/pairs/{address}"): get_pair,
            ("POST", "/pairs/batch"): batch_pairs, ("GET", "/trending"): trending,
            ("GET", "/pairs"): list_pairs, ("GET", "/pairs/new"): list_new_pairs}

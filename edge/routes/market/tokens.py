"""Tokens: the token market list (/tokens), launchpad and deployer tokens, one token on a chain,
registry tokens by id and slug, batches, a token's pairs and holders, and the brief (one call
instead of six, with ETag)."""

import contextlib
import hashlib
import re
from collections.abc import Callable
from datetime import datetime
from typing import Any

import orjson
import polars as pl

from core.caches import LruCache
from core.vocabulary import RESOLUTION_SECONDS
from core.vocabulary import UNKNOWN_TOKEN_ID as ZERO_ID
from core.wire import iso_text
from edge.addresses import ChainRef, normalize, resolve_chain
from edge.live.tail import LiveView
from edge.live.tokens import instances_of, live_token_rows
from edge.memo import per_snapshot
from edge.paging import ROW, Listing, gather_rows, numbered, page
from edge.routes.chains import asked_chains, in_scope
from edge.routes.market.trades import (
    candles,
    pair_trades,
    trade_items,
)
from edge.snapshots import as_of_seconds, snapshot_headers, snapshot_json, table
from edge.web.http import Request, Response
from edge.web.problems import ApiError
from edge.web.registry import Params
from publish.cursor import list_scope
from publish.market import TOKEN_RANGES, TokenQuery, token_list, token_scope
from publish.reader import Snapshot

UUID = re.compile(r"[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}")
BRIEF_PAIRS, BRIEF_HOLDERS, BRIEF_TRADES, BRIEF_CANDLES = 5, 10, 10, 24
_briefs: LruCache[tuple[bytes, str, str]] = LruCache(1024)


# Two: lookups read the current snapshot (and the one before, while requests on it finish);
# only paged lists read the snapshots cursors pin.
@per_snapshot(kept=2, ahead=True)
def token_index(snapshot: Snapshot) -> dict[tuple[int, str], str]:
    """Every token row with both optional blocks, by (chain id, address), built once."""
    rows = table(snapshot, "tokens")
    items = with_blocks(rows, market=True, instances=True)
    return dict(zip(zip(rows["chain_id"].to_list(), rows["address"].to_list(), strict=True),
                    items, strict=True))


@per_snapshot(kept=4)
def registry_index(snapshot: Snapshot) -> tuple[dict[str, str], dict[str, str]]:
    """Registry tokens by id and by slug."""
    rows = table(snapshot, "registry")
    by_id = dict(zip(rows["token_id"].to_list(), rows["item"].to_list(), strict=True))
    by_slug = dict(zip(rows["slug"].to_list(), rows["item"].to_list(), strict=True))
    return by_id, by_slug


def token_row(snapshot: Snapshot, chain: ChainRef, address: str) -> str:
    """A token's full row; 404 when the chain lists no such token."""
    item = token_index(snapshot).get((chain.chain_id, address))
    if item is None:
        raise ApiError("not_found", f"no token {address} on {chain.slug}", "address")
    return item


def live_as_of(view: LiveView | None, live: dict[str, Any] | None) -> str | None:
    """What an answer holding a live row is as of: the tail's watermark (None without one)."""
    return None if view is None or live is None else view.as_of_text


def with_live(item: str, live: dict[str, Any] | None) -> str:
    """A token's snapshot row, or its live one."""
    return item if live is None else spliced(live["item"], live["market"], live["instances"])


async def get_token(request: Request, params: Params) -> Response:
    """A token on one chain: its market row with the market block and its deployments, its
    figures live."""
    snapshot, view = request.state.snapshot, request.state.live
    chain: ChainRef = params["chain"]
    key = (chain.chain_id, params["address"])
    item = token_row(snapshot, chain, key[1])
    live = live_token_rows(view, [key]).get(key)
    return Response(with_live(item, live).encode(),
                    headers=snapshot_headers(snapshot, live_as_of(view, live)))


def registry_now(snapshot: Snapshot, view: LiveView | None, item: str) -> Response:
    """A registry token's answer: its `market` and `instances` live (those of its instances'
    live rows) when a tail adds to the snapshot and the token trades, else the snapshot's."""
    token = orjson.loads(item)
    rows = live_token_rows(view, instances_of(snapshot, token["id"])[:1])
    live = next(iter(rows.values()), None)
    if live is None:
        return Response(item.encode(), headers=snapshot_headers(snapshot))
    token.update(market=orjson.Fragment(live["market"]),
                 instances=orjson.Fragment(live["instances"]))
    return Response(orjson.dumps(token), headers=snapshot_headers(snapshot, live_as_of(view, live)))


async def get_registry_token(request: Request, params: Params) -> Response:
    """A registry token by its uuid; the all-zero id names no token."""
    snapshot = request.state.snapshot
    token_id = params["id"].lower()
    if not UUID.fullmatch(token_id):
        raise ApiError("invalid_param", "id must be a uuid", "id")
    item = None if token_id == ZERO_ID else registry_index(snapshot)[0].get(token_id)
    if item is None:
        raise ApiError("not_found", f"the registry knows no token {token_id}", "id")
    return registry_now(snapshot, request.state.live, item)


async def get_token_by_slug(request: Request, params: Params) -> Response:
    """A registry token by its slug (any case)."""
    snapshot = request.state.snapshot
    item = registry_index(snapshot)[1].get(params["slug"].lower())
    if item is None:
        raise ApiError("not_found", f"the registry knows no token {params['slug']!r}", "slug")
    return registry_now(snapshot, request.state.live, item)


async def batch_tokens(request: Request, params: Params) -> Response:
    """Token rows for up to 50 (chain, address) items, one read per chain, their figures live;
    an item nobody indexes comes back with found false and never
    fails the batch."""
    snapshot, view = request.state.snapshot, request.state.live
    by_chain: dict[str, ChainRef | None] = {}
    asked: list[tuple[str, ChainRef | None, str]] = []
    for item in params["body"]["items"]:
        if item["chain"] not in by_chain:
            try:
                by_chain[item["chain"]] = resolve_chain(snapshot, item["chain"], "chain")
            except ApiError:
                by_chain[item["chain"]] = None
        ref, address = by_chain[item["chain"]], item["address"]
        if ref is not None:
            with contextlib.suppress(ApiError):
                address = normalize(address, ref.address_format)
        asked.append((item["chain"], ref, address))
    index = token_index(snapshot)
    listed = [(ref.chain_id, address) for _, ref, address in asked
              if ref is not None and (ref.chain_id, address) in index]
    live = live_token_rows(view, listed)
    answers: list[dict[str, Any]] = []
    for chain, ref, address in asked:
        key = None if ref is None else (ref.chain_id, address)
        found = None if key not in index else with_live(index[key], live.get(key))
        answers.append({"chain": ref.slug if ref else chain, "address": address,
                        "found": found is not None,
                        "token": None if found is None else orjson.Fragment(found)})
    return snapshot_json(snapshot, {"items": answers},
                         live_as_of(view, next(iter(live.values()), None)))


def _token_pairs(snapshot: Snapshot, chain_id: int, address: str) -> pl.DataFrame:
    pairs = table(snapshot, "pairs")
    return (pairs.filter(pl.col("chain_id") == chain_id,
                         (pl.col("base") == address) | (pl.col("quote") == address))
            .sort(["liquidity_usd", "pair"], descending=[True, False], nulls_last=True))


async def token_listing(request: Request, params: Params, name: str,
                        order: Callable[[Snapshot, int, str], pl.DataFrame]) -> Response:
    """A page of one of a token's lists; 404 when the chain lists no such token."""
    chain: ChainRef = params["chain"]
    address = params["address"]
    token_row(request.state.snapshot, chain, address)
    listing = Listing(name, lambda s: order(s, chain.chain_id, address),
                      list_scope(chain=chain.chain_id, token=address))
    return await page(request, listing, params["limit"], params["cursor"])


async def list_token_pairs(request: Request, params: Params) -> Response:
    """The markets a token trades in on one chain, deepest liquidity first, each with its
    verdict (blocked ones included: they are the token's markets too)."""
    return await token_listing(request, params, "tokens/pairs", _token_pairs)


def _holders(snapshot: Snapshot, chain_id: int, address: str) -> pl.DataFrame:
    holders = table(snapshot, "holders").filter(pl.col("chain_id") == chain_id,
                                                pl.col("token") == address)
    supply = (table(snapshot, "tokens")
              .filter(pl.col("chain_id") == chain_id, pl.col("address") == address)
              ["total_supply"])
    total = supply[0] if len(supply) and supply[0] else None
    share = (pl.col("balance") / total * 100.0) if total else pl.lit(None, pl.Float64)
    return holders.sort("rank").with_columns(item=pl.struct(
        address="holder", balance="balance", share_pct=share, rank="rank").struct.json_encode())


async def list_holders(request: Request, params: Params) -> Response:
    """A token's holders, largest first, with their share of the total supply."""
    return await token_listing(request, params, "tokens/holders", _holders)


def brief(snapshot: Snapshot, view: LiveView | None, chain: ChainRef, address: str,
          live: dict[str, Any] | None) -> bytes:
    """What a token page needs in one document: the token, its verdict, its deepest pairs, its
    largest holders, the main pair's latest trades and its last day of hourly candles. It is
    as of the live tail's watermark when a tail adds to the snapshot (the token's figures are
    live), else of the snapshot's: the same data gives the same bytes, so its ETag changes
    exactly when what it shows does (`live`: the token's live row for the tail)."""
    token = orjson.loads(with_live(token_row(snapshot, chain, address), live))
    pairs = _token_pairs(snapshot, chain.chain_id, address)
    holders = _holders(snapshot, chain.chain_id, address).head(BRIEF_HOLDERS)
    main = token["main_pair"]["address"]
    trades = pair_trades(snapshot, view, chain, main) if main else None
    at = snapshot.manifest.as_of if view is None else view.as_of_text
    end = int(datetime.fromisoformat(at).timestamp())
    hour = RESOLUTION_SECONDS["1h"]
    return orjson.dumps({
        "token": token, "verdict": token["verdict"],
        "pairs": [orjson.Fragment(i) for i in pairs["item"].head(BRIEF_PAIRS).to_list()],
        "holders": {**token["holder_stats"],
                    "top": [orjson.Fragment(i) for i in holders["item"].to_list()]},
        "trades": [] if trades is None else trade_items(
            trades.tail(BRIEF_TRADES).reverse(), iso_text),
        "candles": {"resolution": "1h", "items": [] if trades is None else candles(
            trades, hour, end - BRIEF_CANDLES * hour, end)},
        "as_of": at,
    })


def _etag(body: bytes) -> str:
    return '"' + hashlib.sha256(body).hexdigest()[:32] + '"'


def matches(if_none_match: str | None, etag: str) -> bool:
    """Whether an If-None-Match header names `etag` (weak or strong, in a list, or `*`)."""
    if not if_none_match:
        return False
    tags = [t.strip().removeprefix("W/") for t in if_none_match.split(",")]
    return "*" in tags or etag in tags


async def get_brief(request: Request, params: Params) -> Response:
    """A token's brief; 304 without a body when If-None-Match holds its current ETag."""
    snapshot, view = request.state.snapshot, request.state.live
    chain: ChainRef = params["chain"]
    key = (snapshot.snapshot_id, view and view.seq, chain.chain_id, params["address"])
    kept = _briefs.get(key)
    if kept is None:
        token = (chain.chain_id, params["address"])
        live = live_token_rows(view, [token]).get(token)
        body = brief(snapshot, view, chain, token[1], live)
        kept = _briefs.put(key, (body, _etag(body), orjson.loads(body)["as_of"]))
    body, etag, as_of = kept
    headers = [*snapshot_headers(snapshot, as_of), ("etag", etag),
               ("cache-control", "private, max-age=0, must-revalidate")]
    if matches(request.headers.get("if-none-match"), etag):
        return Response(b"", 304, headers=headers)
    return Response(body, headers=headers)


def with_blocks(rows: pl.DataFrame, market: bool, instances: bool) -> list[str]:
    """Token items with the optional registry blocks spliced in."""
    items = rows["item"].to_list()
    if not (market or instances):
        return items
    markets = rows["market"].to_list() if market else [None] * len(items)
    deployments = rows["instances"].to_list() if instances else [None] * len(items)
    return [spliced(item, m, d) for item, m, d in zip(items, markets, deployments, strict=True)]


def spliced(item: str, market: str | None, instances: str | None) -> str:
    """A token item with its market and instances blocks (JSON, when given) spliced in."""
    extra = (f',"market":{market}' if market is not None else "") + (
        f',"instances":{instances}' if instances is not None else "")
    return item[:-1] + extra + "}"


def token_query(params: Params) -> TokenQuery:
    """The token list query the parameters ask for; 400 when a minimum exceeds its maximum."""
    bounds = []
    for stem in TOKEN_RANGES:
        low, high = params[f"min_{stem}"], params[f"max_{stem}"]
        if low is not None and high is not None and low > high:
            raise ApiError("invalid_param", f"min_{stem} is above max_{stem}", f"max_{stem}")
        if low is not None or high is not None:
            bounds.append((stem, low, high))
    q = (params["q"] or "").strip()
    return TokenQuery(q=q or None, chain_ids=asked_chains(params),
                      categories=tuple(sorted({c.lower() for c in params["categories"] or ()})),
                      bounds=tuple(bounds), sort=params["sort"],
                      descending=params["order"] == "desc")


async def list_tokens(request: Request, params: Params) -> Response:
    """The token market list with every filter of spec 4.2; blocked tokens never appear."""
    query = token_query(params)
    market, instances = params["include_market"], params["include_deployments"]

    def order(snapshot: Snapshot) -> pl.DataFrame:
        scoped = TokenQuery(**{**query.__dict__,
                               "chain_ids": in_scope(snapshot, query.chain_ids)})
        return token_list(numbered(table(snapshot, "tokens")), scoped,
                          as_of_seconds(snapshot)).select(ROW)

    listing = Listing("tokens", order, token_scope(query),
                      lambda rows: with_blocks(rows, market, instances),
                      gather=gather_rows("tokens"),
                      variant=f"{market:d}{instances:d}",
                      envelope=lambda _: {"includes": {"instances": instances,
                                                       "market": market}})
    return await page(request, listing, params["limit"], params["cursor"])


def launchpad_tokens(snapshot: Snapshot, chain_ids: tuple[int, ...]) -> pl.DataFrame:
    """Tokens launched on a launchpad, newest launch first, with their launchpad block."""
    pads = (table(snapshot, "pairs")
            .filter(pl.col("launchpad").is_not_null(), pl.col("chain_id").is_in(chain_ids))
            .sort("created_at", descending=True)
            .group_by("chain_id", "base", maintain_order=True).first()
            .select("chain_id", address="base", launched_on_pad="created_at",
                    launchpad=pl.col("item").str.json_path_match("$.launchpad")))
    tokens = table(snapshot, "tokens").filter(pl.col("verdict") != "blocked")
    return (tokens.join(pads, on=["chain_id", "address"])
            .sort(["launched_on_pad", "chain_id", "address"], descending=[True, False, False])
            .with_columns(item=pl.col("item").str.head(-1) + ',"launchpad":'
                          + pl.col("launchpad") + "}"))


async def list_launchpad_tokens(request: Request, params: Params) -> Response:
    """Tokens launched on launchpads, newest first; blocked tokens never appear."""
    asked = asked_chains(params)
    listing = Listing("launchpads/tokens",
                      lambda s: launchpad_tokens(s, in_scope(s, asked)), list_scope(chains=asked))
    return await page(request, listing, params["limit"], params["cursor"])


async def list_deployer_tokens(request: Request, params: Params) -> Response:
    """Every token an address deployed, newest first, blocked ones included with their
    verdict: a deployer's record is what a due-diligence reader came for."""
    asked = asked_chains(params)
    deployer = params["address"]

    def order(snapshot: Snapshot) -> pl.DataFrame:
        rows = table(snapshot, "tokens").filter(
            pl.col("deployer").is_in([deployer, normalize(deployer, None)]))
        if asked is not None:
            rows = rows.filter(pl.col("chain_id").is_in(asked))
        return rows.sort(["first_listed_at", "chain_id", "address"],
                         descending=[True, False, False])

    listing = Listing("deployers/tokens", order, list_scope(chains=asked, deployer=deployer))
    return await page(request, listing, params["limit"], params["cursor"])


HANDLERS = {("GET", "/tokens"): list_tokens,
            ("GET", "/launchpads/tokens"): list_launchpad_tokens,
            ("GET", "/deployers/{address}/tokens"): list_deployer_tokens,
            ("GET", "/chains/{chain}/tokens/{address}"): get_token,
            ("GET", "/tokens/{id}"): get_registry_token,
            ("GET", "/tokens/by-slug/{slug}"): get_token_by_slug,
            ("POST", "/tokens/batch"): batch_tokens,
            ("GET", "/chains/{chain}/tokens/{address}/pairs"): list_token_pairs,
            ("GET", "/chains/{chain}/tokens/{address}/holders"): list_holders,
            ("GET", "/chains/{chain}/tokens/{address}/brief"): get_brief}

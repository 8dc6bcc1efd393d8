"""The market lists: /trending, /pairs, /pairs/new, /tokens, /launchpads/tokens and
/deployers/{address}/tokens, ordered by the same functions that publish the default pages."""

import orjson
import polars as pl

from edge.addresses import ChainRef, normalize
from edge.http import Request, Response
from edge.memo import per_snapshot
from edge.paging import Listing, page
from edge.problems import ApiError
from edge.snapshots import as_of_seconds, table
from publish.market import (
    TOKEN_RANGES,
    TokenQuery,
    list_scope,
    new_pairs,
    pair_list,
    pair_scope,
    token_list,
    token_scope,
)
from publish.snapshot import Snapshot


@per_snapshot(kept=8)
def chain_states(snapshot: Snapshot) -> tuple[tuple[int, ...], dict[int, str]]:
    """The live chains (still syncing) and the chains whose figures are stale, by id."""
    live, stale = [], {}
    for item in map(orjson.loads, table(snapshot, "chains")["item"].to_list()):
        if item["syncing"]:
            live.append(item["chain_id"])
        if item["metrics_stale"]:
            stale[item["chain_id"]] = item["slug"]
    return tuple(sorted(live)), stale


def asked_chains(params: dict) -> tuple[int, ...] | None:
    """The chain ids asked for, in a canonical order, or None when the list was not narrowed."""
    chains: list[ChainRef] | None = params.get("chains")
    return None if chains is None else tuple(sorted({c.chain_id for c in chains}))


def in_scope(snapshot: Snapshot, asked: tuple[int, ...] | None) -> tuple[int, ...]:
    """The chains a list covers: those asked for, else every live chain."""
    return asked if asked is not None else chain_states(snapshot)[0]


def _pair_listing(name: str, sort: str, timeframe: str, descending: bool,
                  asked: tuple[int, ...] | None) -> Listing:
    def stale_in(snapshot: Snapshot) -> dict[int, str]:
        return chain_states(snapshot)[1] if sort == "trending" else {}

    def order(snapshot: Snapshot) -> pl.DataFrame:
        return pair_list(table(snapshot, "pairs"), sort, timeframe, descending,
                         in_scope(snapshot, asked), stale_in(snapshot))

    def envelope(snapshot: Snapshot) -> dict:
        stale = stale_in(snapshot)
        return {"applied_sort": sort, "applied_timeframe": timeframe,
                "excluded_chains": [stale[c] for c in in_scope(snapshot, asked) if c in stale]}

    return Listing(name, order, pair_scope(sort, timeframe, descending, asked),
                   envelope=envelope)


async def trending(request: Request, params: dict) -> Response:
    """Trending pairs: the /pairs?sort=trending ordering over the default timeframe."""
    listing = _pair_listing("trending", "trending", "h24", True, asked_chains(params))
    return await page(request, listing, params["limit"], params["cursor"])


async def list_pairs(request: Request, params: dict) -> Response:
    """Pairs in any sort /config lists, over a timeframe, in either direction."""
    listing = _pair_listing("pairs", params["sort"], params["timeframe"],
                            params["order"] == "desc", asked_chains(params))
    return await page(request, listing, params["limit"], params["cursor"])


async def list_new_pairs(request: Request, params: dict) -> Response:
    """Pairs newest first."""
    asked = asked_chains(params)
    listing = Listing("pairs/new", lambda s: new_pairs(table(s, "pairs"), in_scope(s, asked)),
                      list_scope(chains=asked))
    return await page(request, listing, params["limit"], params["cursor"])


def with_blocks(rows: pl.DataFrame, market: bool, instances: bool) -> list[str]:
    """Token items with the optional registry blocks spliced in."""
    items = rows["item"].to_list()
    if not (market or instances):
        return items
    markets = rows["market"].to_list() if market else [None] * len(items)
    deployments = rows["instances"].to_list() if instances else [None] * len(items)
    out = []
    for item, m, d in zip(items, markets, deployments, strict=True):
        extra = (f',"market":{m}' if m is not None else "") + (
            f',"instances":{d}' if d is not None else "")
        out.append(item[:-1] + extra + "}")
    return out


def token_query(params: dict) -> TokenQuery:
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


async def list_tokens(request: Request, params: dict) -> Response:
    """The token market list with every filter of spec 4.2; blocked tokens never appear."""
    query = token_query(params)
    market, instances = params["include_market"], params["include_deployments"]

    def order(snapshot: Snapshot) -> pl.DataFrame:
        scoped = TokenQuery(**{**query.__dict__,
                               "chain_ids": in_scope(snapshot, query.chain_ids)})
        return token_list(table(snapshot, "tokens"), scoped, as_of_seconds(snapshot))

    listing = Listing("tokens", order, token_scope(query),
                      lambda rows: with_blocks(rows, market, instances),
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


async def list_launchpad_tokens(request: Request, params: dict) -> Response:
    """Tokens launched on launchpads, newest first; blocked tokens never appear."""
    asked = asked_chains(params)
    listing = Listing("launchpads/tokens",
                      lambda s: launchpad_tokens(s, in_scope(s, asked)), list_scope(chains=asked))
    return await page(request, listing, params["limit"], params["cursor"])


async def list_deployer_tokens(request: Request, params: dict) -> Response:
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


HANDLERS = {("GET", "/trending"): trending, ("GET", "/pairs"): list_pairs,
            ("GET", "/pairs/new"): list_new_pairs, ("GET", "/tokens"): list_tokens,
            ("GET", "/launchpads/tokens"): list_launchpad_tokens,
            ("GET", "/deployers/{address}/tokens"): list_deployer_tokens}

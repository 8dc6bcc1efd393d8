"""The market lists' filters and orderings, shared by the publisher (the default pages) and the
edge (every other query), so that a published page and the edge's answer always agree."""

from collections.abc import Collection
from dataclasses import asdict, dataclass
from datetime import datetime

import polars as pl

from core.vocabulary import PAIR_WINDOWS, address_spellings
from publish.cursor import list_scope
from publish.writer import PagedList

# Columns a pair list sorts on; `{tf}` is the requested timeframe.
PAIR_SORT_COLUMNS = {
    "trending": "trending_{tf}", "volume": "volume_{tf}_usd", "liquidity": "liquidity_usd",
    "price_change": "price_change_{tf}", "txns": "txns_{tf}", "created_at": "created_at",
    "fdv": "fdv_usd", "market_cap": "market_cap_usd",
}
TOKEN_SORT_COLUMNS = {
    "market_cap": "market_cap_usd", "volume": "volume_h24_usd", "liquidity": "liquidity_usd",
    "price_change": "price_change_h24", "created_at": "first_listed_at", "holders": "holders",
    "rating": "rating_score", "fdv": "fdv_usd", "txns": "txns_h24",
}
DEFAULT_PAIR_SORT = ("trending", "h24")
DEFAULT_TOKEN_SORT = "market_cap"
# Token filters with inclusive bounds: parameter stem -> column.
TOKEN_RANGES = {
    "liquidity_usd": "liquidity_usd", "volume_24h_usd": "volume_h24_usd",
    "market_cap_usd": "market_cap_usd", "fdv_usd": "fdv_usd", "age_seconds": "age_seconds",
    "trust_score": "rating_score", "holders": "holders",
}


def _ordered(frame: pl.DataFrame, column: str, descending: bool,
             tie: tuple[str, ...]) -> pl.DataFrame:
    """Sorted on `column` (missing figures last), ties broken by `tie` ascending."""
    return frame.sort([column, *tie], descending=[descending] + [False] * len(tie),
                      nulls_last=True)


def pair_list(pairs: pl.DataFrame, sort: str = "trending", timeframe: str = "h24",
              descending: bool = True, chain_ids: Collection[int] | None = None,
              stale_chain_ids: Collection[int] = ()) -> pl.DataFrame:
    """Pairs in list order. Blocked pairs never appear; a trending list leaves out chains whose
    figures are stale (their windows trail the chain)."""
    rows = pairs.filter(pl.col("verdict") != "blocked")
    if chain_ids is not None:
        rows = rows.filter(pl.col("chain_id").is_in(list(chain_ids)))
    if sort == "trending" and stale_chain_ids:
        rows = rows.filter(~pl.col("chain_id").is_in(list(stale_chain_ids)))
    column = PAIR_SORT_COLUMNS[sort].format(tf=timeframe)
    return _ordered(rows, column, descending, ("chain_id", "pair"))


def new_pairs(pairs: pl.DataFrame, chain_ids: Collection[int] | None = None) -> pl.DataFrame:
    """Pairs newest first; blocked pairs never appear."""
    return pair_list(pairs, "created_at", chain_ids=chain_ids)


@dataclass(frozen=True)
class TokenQuery:
    """What a token list asks for: text, chains, categories, bounds, sort and direction."""

    q: str | None = None
    chain_ids: tuple[int, ...] | None = None
    categories: tuple[str, ...] = ()
    bounds: tuple[tuple[str, float | None, float | None], ...] = ()
    sort: str = DEFAULT_TOKEN_SORT
    descending: bool = True


def token_list(tokens: pl.DataFrame, query: TokenQuery, as_of_s: int) -> pl.DataFrame:
    """Tokens in list order; a blocked token never appears. Ages count back from `as_of_s`,
    the snapshot's watermark."""
    rows = tokens.filter(pl.col("verdict") != "blocked").with_columns(
        age_seconds=pl.lit(as_of_s) - pl.col("first_listed_at").dt.epoch("s"))
    if query.chain_ids is not None:
        rows = rows.filter(pl.col("chain_id").is_in(list(query.chain_ids)))
    if query.q:
        text = query.q.lower()
        rows = rows.filter(
            pl.col("symbol").str.to_lowercase().str.contains(text, literal=True)
            | pl.col("name").str.to_lowercase().str.contains(text, literal=True)
            | pl.col("address").is_in(address_spellings(query.q)))
    if query.categories:
        rows = rows.filter(pl.col("categories").list.set_intersection(
            list(query.categories)).list.len() > 0)
    for stem, low, high in query.bounds:
        column = pl.col(TOKEN_RANGES[stem])
        if low is not None:
            rows = rows.filter(column >= low)
        if high is not None:
            rows = rows.filter(column <= high)
    return _ordered(rows, TOKEN_SORT_COLUMNS[query.sort], query.descending,
                    ("chain_id", "address"))


def token_scope(query: TokenQuery) -> str:
    """The fingerprint of a token list query."""
    return list_scope(**asdict(query))


def pair_scope(sort: str, timeframe: str, descending: bool,
               chain_ids: tuple[int, ...] | None) -> str:
    """The fingerprint of a pair list query (/pairs and /trending alike)."""
    return list_scope(sort=sort, timeframe=timeframe, descending=descending, chains=chain_ids)


# What the edge reads of a pair row to look it up, filter, sort and answer it.
# The columns a token's pairs give its live row (assets.market.token_rows.token_pairs) too.
PAIR_TABLE = ("chain_id", "slug", "pair", "ticker", "base", "quote", "base_symbol",
              "quote_symbol", "venue_id", "venue_name", "created_at", "liquidity_usd",
              "base_price_usd", "quote_price_usd", "is_scam", "rugged", "status", "score",
              "verdict",
              "launchpad", "item")
# The figures the pair sorts read, per timeframe.
PAIR_SORT_FIGURES = [f.format(w=w) for f in ("volume_{w}_usd", "txns_{w}", "price_change_{w}",
                                             "trending_{w}") for w in PAIR_WINDOWS]


def pair_table(pairs: pl.DataFrame, tokens: pl.DataFrame) -> pl.DataFrame:
    """The pairs serving table: what the edge looks up and lists, with the base token's FDV and
    market cap for the sorts that use them."""
    base = tokens.select("chain_id", base="address", fdv_usd="fdv_usd",
                         market_cap_usd="market_cap_usd")
    return pairs.select(*PAIR_TABLE, *PAIR_SORT_FIGURES).join(base, on=["chain_id", "base"], how="left")


def market_lists(pairs: pl.DataFrame, tokens: pl.DataFrame, records: pl.DataFrame,
                 as_of: datetime) -> list[PagedList]:
    """Trending and the default /pairs and /tokens lists, across live chains and per chain."""
    live = tuple(sorted(records.filter("syncing")["chain_id"].to_list()))
    stale = dict(records.filter("metrics_stale").select("chain_id", "slug").iter_rows())
    sort, timeframe = DEFAULT_PAIR_SORT
    as_of_s = int(as_of.timestamp())
    scopes = [(None, live, ""), *[((cid,), (cid,), f"/{slug}") for cid, slug in
                                  records.select("chain_id", "slug").sort("chain_id").iter_rows()]]
    out = []
    for asked, ids, suffix in scopes:
        ordered = pair_list(pairs, sort, timeframe, chain_ids=ids, stale_chain_ids=stale)
        envelope = {"applied_sort": sort, "applied_timeframe": timeframe,
                    "excluded_chains": [stale[c] for c in ids if c in stale]}
        rows = ordered.select("chain_id", "pair", "item")
        scope = pair_scope(sort, timeframe, True, asked)
        out += [PagedList(name, rows, ("chain_id", "pair"), scope, f"{name}{suffix}", False,
                          envelope) for name in ("trending", "pairs")]
        query = TokenQuery(chain_ids=asked)
        listed = token_list(tokens, TokenQuery(chain_ids=ids), as_of_s)
        out.append(PagedList("tokens", listed.select("chain_id", "address", "item"),
                             ("chain_id", "address"), token_scope(query), f"tokens{suffix}",
                             False, {"includes": {"instances": False, "market": False}}))
    return out

"""The market lists' filters and orderings, shared by the publisher (the default pages) and the
edge (every other query), so that a published page and the edge's answer always agree."""

import hashlib
from collections.abc import Collection
from dataclasses import asdict, dataclass

import orjson
import polars as pl

from core.vocabulary import address_spellings

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


def list_scope(**parts) -> str:
    """A short fingerprint of what a list answers, carried by its cursors so that a cursor only
    continues the query that issued it."""
    return hashlib.sha256(orjson.dumps(parts, option=orjson.OPT_SORT_KEYS)).hexdigest()[:16]


def token_scope(query: TokenQuery) -> str:
    """The fingerprint of a token list query."""
    return list_scope(**asdict(query))


def pair_scope(sort: str, timeframe: str, descending: bool,
               chain_ids: tuple[int, ...] | None) -> str:
    """The fingerprint of a pair list query (/pairs and /trending alike)."""
    return list_scope(sort=sort, timeframe=timeframe, descending=descending, chains=chain_ids)

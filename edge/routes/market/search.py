"""GET /search (spec 4.7): tokens by symbol, pairs by ticker, both by exact address."""

import polars as pl

from core.vocabulary import address_spellings
from edge.memo import kept_answers
from edge.routes.chains import asked_chains, in_scope
from edge.snapshots import snapshot_json, table
from edge.web.http import Request, Response
from edge.web.registry import Params

# Exact matches first, then prefixes, then any other place; deeper liquidity first within each.
EXACT, PREFIX, INSIDE = 0, 1, 2


def _rank(column: str, text: str) -> pl.Expr:
    lowered = pl.col(column).str.to_lowercase()
    return (pl.when(lowered == text).then(EXACT)
            .when(lowered.str.starts_with(text)).then(PREFIX).otherwise(INSIDE))


def find(rows: pl.DataFrame, address: str, text: str, q: str, limit: int) -> pl.DataFrame:
    """Rows whose `text` column holds `q` (blocked ones never), or whose `address` is `q`."""
    lowered = q.lower()
    by_address = rows.filter(pl.col(address).is_in(address_spellings(q)))
    by_text = rows.filter(pl.col("verdict") != "blocked",
                          pl.col(text).str.to_lowercase().str.contains(lowered, literal=True))
    return (pl.concat([by_address.with_columns(rank=pl.lit(EXACT - 1)),
                       by_text.with_columns(rank=_rank(text, lowered))])
            .unique(["chain_id", address], keep="first", maintain_order=True)
            .sort(["rank", "liquidity_usd", "chain_id", address],
                  descending=[False, True, False, False], nulls_last=True)
            .head(limit))


@kept_answers
async def search(request: Request, params: Params) -> Response:
    """Token and pair hits, at most `limit` of each."""
    snapshot = request.state.snapshot
    q, limit = params["q"].strip(), params["limit"]
    chains = in_scope(snapshot, asked_chains(params))
    tokens = table(snapshot, "tokens").filter(pl.col("chain_id").is_in(chains))
    pairs = table(snapshot, "pairs").filter(pl.col("chain_id").is_in(chains))
    token_hits = find(tokens, "address", "symbol", q, limit).select(
        "address", "symbol", "name", "logo_url", "price_usd", network="slug",
        price_change_24h="price_change_h24")
    pair_hits = find(pairs, "pair", "ticker", q, limit).select(
        pair_address="pair", network="slug", ticker="ticker", base_symbol="base_symbol",
        quote_symbol="quote_symbol", dex_name="venue_name", liquidity_usd="liquidity_usd",
        price_usd="base_price_usd", price_change_24h="price_change_h24")
    body = {"tokens": token_hits.to_dicts(), "pairs": pair_hits.to_dicts()}
    return snapshot_json(snapshot, body)


HANDLERS = {("GET", "/search"): search}

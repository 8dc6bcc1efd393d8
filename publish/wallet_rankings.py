"""The wallet rankings as lists (spec 4.5): a ranking query, its filters and order (shared by
the publisher's pages and the edge), the metrics record of a ranking row, and the head of every
default ranking per chain, window and sort, published as pages."""

import sys
from collections.abc import Callable
from dataclasses import asdict, dataclass
from datetime import datetime

import polars as pl

from core.fingerprints import recipe
from core.vocabulary import WALLET_WINDOWS
from publish.cursor import list_scope
from publish.spans import (
    fingerprint,
    fingerprint_of,
)
from publish.writer import (
    ListFamily,
    PagedList,
    instant_text,
)

WALLET_SORT_COLUMNS = {
    "total_pnl": "total_pnl_usd", "realized_pnl": "realized_pnl_usd", "volume": "volume_usd",
    "win_rate": "win_rate", "trades": "trades", "user_score": "user_score",
}
# Wallets a ranking keeps from the published pages: its head; the edge pages further.
PUBLISHED_DEPTH = 200
# A metrics record's figures and counts (spec 2.4), in the order the wire carries them.
METRIC_FIGURES = (
    "realized_pnl_usd", "unrealized_pnl_usd", "total_pnl_usd", "rated_pnl_usd",
    "gross_profit_usd", "gross_loss_usd", "invested_usd", "volume_usd", "roi", "win_rate",
    "trade_win_rate", "median_roi", "profit_factor", "avg_trade_usd")
METRIC_COUNTS = (
    "avg_hold_seconds", "trades", "winning_trades", "losing_trades", "tokens_traded",
    "closed_positions", "open_positions", "rated_positions", "excluded_transfer_only",
    "excluded_untracked", "excluded_no_outcome")


@dataclass(frozen=True)
class WalletQuery:
    """One GET /wallets query: chain, window, sort, order and every filter of spec 4.5."""

    chain_id: int
    window: str = "30d"
    sort: str = "total_pnl"
    descending: bool = True
    min_total_pnl_usd: float | None = None
    min_realized_pnl_usd: float | None = None
    min_volume_usd: float | None = None
    min_win_rate: float | None = None
    min_trades: int | None = None
    max_avg_hold_seconds: int | None = None
    min_user_score: int | None = None
    no_abuse_evidence: bool = False
    only_copy_eligible: bool = False
    exclude_bots: bool = False
    tiers: tuple[str, ...] | None = None


def wallet_scope(query: WalletQuery) -> str:
    """The fingerprint of a ranking query, carried by its cursors."""
    return list_scope(list="wallets", **asdict(query))


def wallet_order(rankings: pl.DataFrame, query: WalletQuery, min_rated: int) -> pl.Series:
    """The ranking as row numbers of `rankings` (`_row`), in its order. `exclude_bots` drops
    market makers too; sort=win_rate ranks only wallets with at least `min_rated` rated
    positions; ties go by address. Only the columns the query filters and sorts by are read,
    and the order holds 4 bytes a row, not a copy of the rows."""
    ranked = _ranked(rankings.lazy().with_row_index("_row"), query, min_rated)
    return _ordered(ranked, query, None).select("_row").collect().to_series()


def _ordered(rows: pl.LazyFrame, query: WalletQuery, head: int | None) -> pl.LazyFrame:
    """A ranking's rows in its order (its first `head` only, when given)."""
    ordered = rows.sort([WALLET_SORT_COLUMNS[query.sort], "wallet"],
                        descending=[query.descending, False], nulls_last=True)
    # A head is taken as the sort goes (a top-k), not after sorting every row.
    return ordered if head is None else ordered.head(head)


def _ranked(rankings: pl.LazyFrame, query: WalletQuery, min_rated: int) -> pl.LazyFrame:
    """The rows of a ranking's chain and window its filters keep, in no order."""
    f = pl.col
    rows = rankings.filter(f("chain_id") == query.chain_id, f("window") == query.window)
    floors = {"total_pnl_usd": query.min_total_pnl_usd,
              "realized_pnl_usd": query.min_realized_pnl_usd,
              "volume_usd": query.min_volume_usd, "win_rate": query.min_win_rate,
              "trades": query.min_trades, "user_score": query.min_user_score}
    for column, floor in floors.items():
        if floor is not None:
            rows = rows.filter(f(column) >= floor)
    if query.max_avg_hold_seconds is not None:
        rows = rows.filter(f("avg_hold_seconds") <= query.max_avg_hold_seconds)
    if query.no_abuse_evidence:
        rows = rows.filter(f("scammer_band") == "none")
    if query.only_copy_eligible:
        rows = rows.filter(f("copy_eligible"))
    if query.exclude_bots:
        rows = rows.filter(~f("type").is_in(["bot", "market_maker"]))
    if query.tiers is not None:
        rows = rows.filter(f("tier").is_in(list(query.tiers)))
    if query.sort == "win_rate":
        rows = rows.filter(f("rated_positions") >= min_rated)
    return rows


METRIC_FIELDS = ("window", *METRIC_FIGURES, *METRIC_COUNTS)


def metrics_record() -> pl.Expr:
    """A metrics record (spec 2.4) from a row of one wallet's figures in one window."""
    return pl.struct(*METRIC_FIELDS)


def ranking_items(rows: pl.DataFrame) -> pl.Series:
    """The list item (spec 2.5) of each ranking row: the wallet's JSON parts and the window's
    metrics record. Made for the rows a page shows, not stored for every wallet and window."""
    return rows.select(pl.concat_str(
        pl.lit('{"address":'), "item_address", pl.lit(',"chain":'), "item_chain",
        pl.lit(',"tier":"'), "tier", pl.lit('","type":"'), "type",
        pl.lit('","labels":'), "item_labels",
        pl.lit(',"copy_eligible":'), pl.col("copy_eligible").cast(pl.String).str.to_lowercase(),
        pl.lit(',"user_score":'), "item_user_score",
        pl.lit(',"scammer_score":'), "item_scammer_score",
        pl.lit(',"metrics":'), metrics_record().struct.json_encode(), pl.lit("}")
    ).alias("item")).to_series()


def ranked_at(rankings: pl.DataFrame) -> str | None:
    """The watermark rankings rank as of, as a snapshot names an instant (None for rankings
    stored without it, or none)."""
    at = rankings["as_of"].first() if "as_of" in rankings.columns else None
    return instant_text(at) if isinstance(at, datetime) else None


def ranking_lists(rankings: Callable[[], pl.DataFrame], records: pl.DataFrame, min_rated: int,
                  stored_as: str) -> ListFamily:
    """Every ranking page (`ranking_pages`) as one family of lists named by the stored
    rankings' files (`stored_as`), the chains listed and the code: between two rankings, a
    publish carries the pages the previous snapshot published and reads no ranking row."""
    chains = records.select("chain_id", "slug").sort("chain_id")
    return ListFamily("wallets", fingerprint_of(
        recipe(sys.modules[__name__]), stored_as, fingerprint(chains), str(min_rated)),
        lambda: ranking_pages(rankings(), chains, min_rated))


def ranking_pages(rankings: pl.DataFrame, records: pl.DataFrame,
                  min_rated: int) -> list[PagedList]:
    """The head of every default ranking (no filter, descending) per chain, window and sort,
    for CDN consumers; their last cursor continues on the edge. Each index says the watermark
    the ranking is as of (`ranked_as_of`): the rankings' own cadence's, not the snapshot's."""
    out = []
    at = ranked_at(rankings)
    envelope = {} if at is None else {"ranked_as_of": at}
    # Each ranking reads its chain's window only: split once, not filtered from every row for
    # each of its sorts.
    groups = rankings.partition_by("chain_id", "window", as_dict=True)
    for chain_id, slug in records.select("chain_id", "slug").sort("chain_id").iter_rows():
        for window in WALLET_WINDOWS:
            ranked = groups.get((chain_id, window), rankings.clear())
            for sort in WALLET_SORT_COLUMNS:
                query = WalletQuery(chain_id=chain_id, window=window, sort=sort)
                rows = _ranked(ranked.lazy(), query, min_rated).collect()
                head = _ordered(rows.lazy(), query, PUBLISHED_DEPTH).collect()
                out.append(PagedList("wallets", head.select("chain_id", "wallet").with_columns(
                    ranking_items(head)), ("chain_id", "wallet"), wallet_scope(query),
                    f"wallets/{slug}/{window}/{sort}", False, envelope, backward=False,
                    total=rows.height))
    return out

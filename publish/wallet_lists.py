"""The wallet ranking's filters, orderings and list items (spec 4.5, 2.5), shared by the
publisher (the default pages per chain, window and sort) and the edge (every filtered query),
so they always agree."""

from dataclasses import asdict, dataclass

import polars as pl

from publish.market_lists import list_scope

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


def wallet_list(rankings: pl.DataFrame, query: WalletQuery, min_rated: int) -> pl.DataFrame:
    """The ranking's rows in order. `exclude_bots` drops market makers too; sort=win_rate
    ranks only wallets with at least `min_rated` rated positions; ties go by address."""
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
    return rows.sort([WALLET_SORT_COLUMNS[query.sort], "wallet"],
                     descending=[query.descending, False], nulls_last=True)


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

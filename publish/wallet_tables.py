"""The wallet serving tables the edge reads (profiles, rankings, positions, rounds, trades,
chart buckets, funding) and the ranking pages published per chain, window and sort."""

import polars as pl

from core.vocabulary import WALLET_WINDOWS, wire_time
from publish.snapshot import PagedList, ServingTable
from publish.wallet_lists import (
    PUBLISHED_DEPTH,
    WALLET_SORT_COLUMNS,
    WalletQuery,
    ranking_items,
    wallet_list,
    wallet_scope,
)

HOUR, DAY, WEEK = 3_600, 86_400, 7 * 86_400
POSITION_FIELDS = (
    "buys", "sells", "transfers_in", "transfers_out", "bought_qty", "sold_qty", "held",
    "bought_usd", "sold_usd", "cost_in_usd", "avg_entry_price_usd", "avg_exit_price_usd",
    "open_cost_usd", "mark_usd", "value_usd", "realized_usd", "cost_closed_usd",
    "unrealized_usd", "total_pnl_usd", "realized_roi", "rounds", "is_open", "tracked",
    "basis_is_incomplete", "token_score", "token_status", "condemned")
ROUND_FIELDS = (
    "round", "is_open", "buys", "sells", "transfers_in", "transfers_out", "bought_qty",
    "sold_qty", "held", "bought_usd", "sold_usd", "cost_in_usd", "avg_entry_price_usd",
    "avg_exit_price_usd", "open_cost_usd", "realized_usd", "cost_closed_usd", "realized_roi",
    "hold_seconds", "closed_by_sell", "basis_is_incomplete")


def chart_buckets(ledger: pl.DataFrame, as_of_s: int) -> pl.DataFrame:
    """Realised profit, the cost basis it closed, wins and losses per wallet per UTC day, and
    per hour over the last week (the chart's hourly windows reach no further)."""
    sells = ledger.filter(pl.col("side") == "sell").select(
        "chain_id", "wallet", "ts", "realized_usd", "cost_closed_usd")
    parts = []
    for resolution, seconds, since in (("1h", HOUR, as_of_s - WEEK), ("1d", DAY, None)):
        rows = sells if since is None else sells.filter(pl.col("ts") > since - HOUR)
        parts.append(rows.group_by("chain_id", "wallet", bucket=pl.col("ts") // seconds * seconds)
                     .agg(realized_usd=pl.col("realized_usd").sum(),
                          cost_usd=pl.col("cost_closed_usd").sum(),
                          wins=(pl.col("realized_usd") > 0).sum().cast(pl.Int64),
                          losses=(pl.col("realized_usd") < 0).sum().cast(pl.Int64))
                     .with_columns(resolution=pl.lit(resolution)))
    return pl.concat(parts)


def wallet_serving(frames: dict[str, pl.DataFrame], labels: pl.DataFrame,
                   as_of_s: int) -> list[ServingTable]:
    """Every wallet serving table, each sorted by its lookup key (`labels`: the lake's known
    entities, for addresses that never traded)."""
    symbols = frames["token_rows"].select("chain_id", token="address", token_symbol="symbol")
    ledger = frames["wallet_ledger"]
    positions = frames["wallet_positions"].with_columns(item=pl.struct(
        pl.col("token").alias("token_address"), "token_symbol", *POSITION_FIELDS,
        first_trade_at=wire_time(pl.col("first_trade_at")), last_trade_at=wire_time(pl.col("last_trade_at")))
        .struct.json_encode())
    rounds = (frames["wallet_rounds"].join(symbols, on=["chain_id", "token"], how="left")
              .with_columns(item=pl.struct(
                  pl.col("token").alias("token_address"), "token_symbol", *ROUND_FIELDS,
                  opened_at=wire_time(pl.col("opened_at")),
                  closed_at=wire_time(pl.col("closed_at"))).struct.json_encode()))
    trades = ledger.join(symbols, on=["chain_id", "token"], how="left").select(
        "chain_id", "wallet", "block_number", "log_index", "seq", "ts", "tx_hash", "token",
        "token_symbol", "pair", "side", "qty", "price_usd", "notional_usd", "fee_usd",
        "fee_is_estimated")
    profiles = frames["wallet_profiles"].select(
        "chain_id", "wallet", "tier", "type", "copy_eligible", "user_score", "rebuild_skipped",
        "deployed_usd", "cluster_id", "head")
    return [
        ServingTable("wallet_profiles", profiles, ("chain_id", "wallet")),
        # By wallet: a profile's metrics records are its five rows, one slice.
        ServingTable("wallet_rankings", frames["wallet_rankings"], ("chain_id", "wallet", "window")),
        ServingTable("wallet_positions", positions, ("chain_id", "wallet", "token")),
        ServingTable("wallet_rounds", rounds, ("chain_id", "wallet", "token", "round")),
        ServingTable("wallet_trades", trades, ("chain_id", "wallet", "block_number", "log_index",
                                               "seq")),
        ServingTable("wallet_buckets", chart_buckets(ledger, as_of_s),
                     ("chain_id", "wallet", "resolution", "bucket")),
        ServingTable("wallet_funding", frames["wallet_funding"], ("chain_id", "wallet", "ts")),
        ServingTable("address_labels", labels.select(
            "chain_id", "address", "kind", "name", "confidence", "token_address"),
            ("chain_id", "address", "kind")),
    ]


def ranking_pages(rankings: pl.DataFrame, records: pl.DataFrame,
                  min_rated: int) -> list[PagedList]:
    """The head of every default ranking (no filter, descending) per chain, window and sort,
    for CDN consumers; their last cursor continues on the edge."""
    out = []
    for chain_id, slug in records.select("chain_id", "slug").sort("chain_id").iter_rows():
        for window in WALLET_WINDOWS:
            for sort in WALLET_SORT_COLUMNS:
                query = WalletQuery(chain_id=chain_id, window=window, sort=sort)
                rows = wallet_list(rankings, query, min_rated)
                head = rows.head(PUBLISHED_DEPTH)
                out.append(PagedList("wallets", head.select("chain_id", "wallet").with_columns(
                    ranking_items(head)), ("chain_id", "wallet"), wallet_scope(query),
                    f"wallets/{slug}/{window}/{sort}", False, backward=False, total=rows.height))
    return out

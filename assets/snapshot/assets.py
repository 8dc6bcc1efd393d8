"""The snapshot: every checked product published to the object store, atomically."""

from datetime import UTC, datetime, timedelta

import dagster as dg
import polars as pl

from assets.boards.assets import SEASONS
from assets.chains.items import chain_items, config_document
from assets.domains import keys, product_key
from assets.market.pair_trades import trade_rows
from assets.wallets.ledger import with_swap_hashes
from assets.warehouse import Warehouse
from checks.products import PRODUCT_SCHEMAS, validate_products
from core.vocabulary import MIN_RATED_POSITIONS, PAIR_WINDOWS, WIRE_TIME
from publish.boards import board_documents
from publish.cursor import default_signer
from publish.farm_lists import FARM_SORT_COLUMNS, FarmQuery, farm_list, farm_scope
from publish.market_lists import (
    DEFAULT_PAIR_SORT,
    TokenQuery,
    pair_list,
    pair_scope,
    token_list,
    token_scope,
)
from publish.snapshot import PagedList, Publisher, ServingTable
from publish.store import open_store
from publish.verdicts import epoch_of, verdict_tree
from publish.wallet_tables import ranking_pages, wallet_serving

# What the edge reads of a pair row to look it up, filter, sort and answer it.
PAIR_TABLE = ("chain_id", "slug", "pair", "ticker", "base", "quote", "base_symbol",
              "quote_symbol", "venue_name", "created_at", "liquidity_usd", "base_price_usd",
              "verdict", "launchpad", "item")
# The figures the pair sorts read, per timeframe.
PAIR_SORT_FIGURES = [f.format(w=w) for f in ("volume_{w}_usd", "txns_{w}", "price_change_{w}",
                                             "trending_{w}") for w in PAIR_WINDOWS]


class Store(dg.ConfigurableResource):
    """The object store snapshots go to: a directory path or s3://bucket/prefix."""

    url: str
    retention_hours: float = 24.0


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


def serving_tables(frames: dict[str, pl.DataFrame], pairs: pl.DataFrame,
                   verdicts: tuple[pl.DataFrame, pl.DataFrame],
                   swaps: pl.LazyFrame, as_of: datetime) -> list[ServingTable]:
    """The tables the edge answers lookups and filtered lists from (`pairs`: the pair table;
    `verdicts`: the epoch's verdict leaves and tree; `swaps`: the lake's raw swaps, for the
    trades' hashes and addresses)."""
    tokens = frames["token_rows"]
    holders = frames["holder_balances"].with_columns(
        rank=pl.col("balance").rank("ordinal", descending=True).over("chain_id", "token"))
    return [
        ServingTable("pairs", pairs, ("chain_id", "pair")),
        ServingTable("tokens", tokens.drop("instance"), ("chain_id", "address")),
        ServingTable("registry", frames["registry_tokens"], ("token_id",)),
        ServingTable("holders", holders, ("chain_id", "token", "rank")),
        ServingTable("trades", trade_rows(frames["swap_legs"], swaps, frames["liquidity_trades"],
                                          as_of),
                     ("chain_id", "pair", "block_number", "log_index")),
        ServingTable("verdicts", verdicts[0], ("chain_id", "address")),
        ServingTable("verdict_tree", verdicts[1], ("level", "position")),
    ]


def farm_pages(farms: pl.DataFrame, records: pl.DataFrame) -> list[PagedList]:
    """Each chain's farms in every sort, highest first (the edge pages further and filters)."""
    out = []
    for chain_id, slug in records.select("chain_id", "slug").sort("chain_id").iter_rows():
        for sort in FARM_SORT_COLUMNS:
            query = FarmQuery((chain_id,), sort=sort)
            out.append(PagedList("farms", farm_list(farms, query).select(
                "chain_id", "address", "pid", "item"), ("chain_id", "address", "pid"),
                farm_scope(query), f"farms/{slug}/{sort}", served=False))
    return out


def derivative_tables(frames: dict[str, pl.DataFrame]) -> list[ServingTable]:
    """Farms, perp markets, their history, liquidation days and the oracle's feeds and history,
    for the edge's lookups."""
    return [
        ServingTable("farms", frames["farm_rows"].drop("data_quality_flags"),
                     ("chain_id", "address", "pid")),
        ServingTable("perp_markets", frames["perp_list"], ("chain_id", "market")),
        ServingTable("perp_history", frames["perp_history"],
                     ("chain_id", "market", "interval", "observed_at")),
        ServingTable("liquidation_days", frames["liquidation_days"],
                     ("chain_id", "market", "day")),
        ServingTable("oracle_feeds", frames["oracle_feeds"], ("feed_id",)),
        ServingTable("oracle_history", frames["oracle_history"], ("feed_id", "publish_time")),
    ]


@dg.asset(key_prefix="publish", group_name="publish",
          deps=[product_key(name) for name in PRODUCT_SCHEMAS]
          + keys("as_of", "address_labels", "swaps"))
def snapshot(context: dg.AssetExecutionContext, warehouse: Warehouse,
             store: Store) -> dg.MaterializeResult:
    """Publishes the checked products as one snapshot and flips LATEST to it."""
    frames = {name: warehouse.scan(name).collect() for name in PRODUCT_SCHEMAS}
    outcomes = validate_products(frames)
    broken = [o.summary() for o in outcomes if not o.passed]
    if broken:
        raise dg.Failure("refusing to publish: " + "; ".join(broken))
    as_of = warehouse.clock()["as_of"]
    # The lake's swaps, where the trades the edge serves take their hashes and addresses.
    swaps = warehouse.scan("swaps")
    publisher = Publisher(open_store(store.url), default_signer(),
                          retention=timedelta(hours=store.retention_hours),
                          progress=context.log.info)
    records = frames["chain_records"]
    pairs = pair_table(frames["pair_rows"], frames["token_rows"])
    leaves, nodes, epoch = verdict_tree(frames["token_rows"], epoch_of(as_of))
    context.log.info(f"verdicts: {epoch['leaves']} leaves, root {epoch['root']}")
    now = datetime.now(UTC)
    boards, frozen = board_documents(frames["board_rows"], frames["season_boards"],
                                     now.strftime(WIRE_TIME), SEASONS.length_days)
    manifest = publisher.publish(
        as_of,
        lists=[PagedList("chains", chain_items(records), ("chain_id", "slug")),
               *market_lists(pairs, frames["token_rows"], records, as_of),
               *ranking_pages(frames["wallet_rankings"], records, MIN_RATED_POSITIONS),
               *farm_pages(frames["farm_rows"], records),
               PagedList("perps", frames["perp_list"].select("chain_id", "market", "item"),
                         ("chain_id", "market"))],
        documents={"config": config_document(records, frames["config"]), "verdicts": epoch,
                   **boards},
        tables=[*serving_tables(frames, pairs, (leaves, nodes), swaps, as_of),
                *wallet_serving({**frames, "wallet_ledger": with_swap_hashes(
                    frames["wallet_ledger"], swaps)},
                    warehouse.scan("address_labels").collect(), int(as_of.timestamp())),
                *derivative_tables(frames)],
        now=now, frozen=frozen,
    )
    return dg.MaterializeResult(metadata={
        "snapshot_id": manifest.snapshot_id, "as_of": manifest.as_of,
        "objects": len(manifest.objects), "store": store.url,
    })

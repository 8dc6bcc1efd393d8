"""The snapshot: every checked product published to the object store, atomically."""

import itertools
import json
from collections.abc import Iterator, Mapping
from datetime import UTC, datetime, timedelta

import dagster as dg
import polars as pl

from assets.boards.assets import SEASONS
from assets.chains.items import chain_items, config_document
from assets.domains import keys, product_key
from assets.market.holders import ranked_holders
from assets.snapshot.trades import DaySwaps, trade_days
from assets.snapshot.wallet_tables import StoredLedger, wallet_serving
from assets.tables import BY_DAY
from assets.warehouse import Warehouse
from checks.outcome import Outcome, combined
from checks.products import PRODUCT_SCHEMAS, piece_outcome, rules_of
from core.store import open_store
from core.vocabulary import MIN_RATED_POSITIONS, WIRE_TIME
from publish.boards import board_documents
from publish.cursor import default_signer
from publish.farms import farm_pages
from publish.market import market_lists, pair_table
from publish.spans import (
    day_start,
    files_named,
    span_cut,
    span_day,
    span_names,
    span_of,
)
from publish.verdicts import epoch_of, verdict_tree
from publish.wallet_rankings import ranking_lists
from publish.writer import PagedList, Publisher, ServingTable, SpannedTable, spanned


class Store(dg.ConfigurableResource):
    """The object store snapshots go to: a directory path or s3://bucket/prefix."""

    url: str
    retention_hours: float = 24.0


class Products(Mapping[str, pl.DataFrame]):
    """The materialised products, each read from the warehouse when asked and never kept, so
    that a publish holds what the table it builds needs rather than every product at once."""

    def __init__(self, warehouse: Warehouse) -> None:
        self.warehouse = warehouse
        # Pinned when the publish starts: the versions the snapshot records and reads.
        self.versions = {name: warehouse.version(name) for name in PRODUCT_SCHEMAS}

    def __getitem__(self, name: str) -> pl.DataFrame:
        if name not in PRODUCT_SCHEMAS:
            raise KeyError(name)
        return self.warehouse.scan(name, self.versions[name]).collect()

    def __iter__(self) -> Iterator[str]:
        return iter(PRODUCT_SCHEMAS)

    def __len__(self) -> int:
        return len(PRODUCT_SCHEMAS)


class UncheckedProducts(Mapping[str, pl.DataFrame]):
    """The rows of each product that no schema check passed (a product made or changed by a
    run without its checks, or checked under rules that changed since): what a publish checks
    itself, each read when asked."""

    def __init__(self, products: Products) -> None:
        warehouse = self.warehouse = products.warehouse
        self.files = {name: files for name in PRODUCT_SCHEMAS if (files := warehouse.unchecked(
            name, rules_of(name), products.versions[name]))}
        self.versions = products.versions

    def __getitem__(self, name: str) -> pl.DataFrame:
        return self.warehouse.read(self.files[name]).collect()

    def outcomes(self) -> list[Outcome]:
        """Each product's outcome, a product made a day at a time checked a file at a time
        (its key is unique within a segment of a day's hours, as its own step checks it)."""
        found = []
        for name, files in self.files.items():
            pieces = [[path] for path in files] if name in BY_DAY else [files]
            found.append(combined(name, [piece_outcome(name, self.warehouse.read(piece).collect())
                                         for piece in pieces]))
        return found

    def __iter__(self) -> Iterator[str]:
        return iter(self.files)

    def __len__(self) -> int:
        return len(self.files)


def swap_names(swaps: DaySwaps, cut_s: int) -> dict[int, str]:
    """A name for the lake's swaps of each span (`span_of` at `cut_s`): what the wallet trades
    take their hashes from. A closed day's is its files' (a write never reuses a file's name);
    the watermark's day's spans are named by their rows, since a live day's files grow as its
    swaps arrive and the rows before the hour stay as they were."""
    today = span_day(cut_s)
    names = {}
    for day, files in swaps.files.items():
        if day < today:
            names[day] = files_named(*files)
            continue
        names.update(span_names(swaps.rows(day), span_of(cut_s)))
    return names


def serving_tables(warehouse: Warehouse, frames: Mapping[str, pl.DataFrame],
                   pairs: pl.DataFrame, verdicts: tuple[pl.DataFrame, pl.DataFrame],
                   as_of: datetime, cut_s: int, legs_version: int,
                   day_swaps: DaySwaps) -> Iterator[ServingTable | SpannedTable]:
    """The tables the edge answers lookups and filtered lists from (`pairs`: the pair table;
    `verdicts`: the epoch's verdict leaves and tree; `day_swaps`: the lake's swaps a day at a
    time, for the trades' hashes and addresses; the swap legs at `legs_version`), each built
    when the one before has been taken."""
    yield ServingTable("pairs", pairs, ("chain_id", "pair"))
    yield ServingTable("tokens", frames["token_rows"].drop("instance"), ("chain_id", "address"))
    yield ServingTable("token_basis", frames["token_basis"], ("chain_id", "address"))
    yield ServingTable("registry", frames["registry_tokens"], ("token_id",))
    yield ServingTable("holders", ranked_holders(frames["holder_balances"]),
                       ("chain_id", "token", "rank"))
    yield trade_days(warehouse, as_of, cut_s, legs_version, day_swaps)
    yield ServingTable("verdicts", verdicts[0], ("chain_id", "address"))
    yield ServingTable("verdict_tree", verdicts[1], ("level", "position"))


def derivative_tables(frames: Mapping[str, pl.DataFrame],
                      cut_s: int) -> Iterator[ServingTable | SpannedTable]:
    """Farms, perp markets, their history, liquidation days and the oracle's feeds and history
    (in spans, cut at `cut_s`), for the edge's lookups."""
    yield ServingTable("farms", frames["farm_rows"].drop("data_quality_flags"),
                       ("chain_id", "address", "pid"))
    yield ServingTable("perp_markets", frames["perp_list"], ("chain_id", "market"))
    yield ServingTable("perp_history", frames["perp_history"],
                       ("chain_id", "market", "interval", "observed_at"))
    yield ServingTable("liquidation_days", frames["liquidation_days"],
                       ("chain_id", "market", "day"))
    yield ServingTable("feed_catalog", frames["feed_catalog"], ("feed_id",))
    yield spanned("oracle_history", frames["oracle_history"], ("feed_id", "publish_time"),
                  span_of(cut_s, "publish_time"))


@dg.asset(key_prefix="publish", group_name="publish",
          deps=[product_key(name) for name in PRODUCT_SCHEMAS]
          + keys("as_of", "address_labels", "swaps"))
def snapshot(context: dg.AssetExecutionContext, warehouse: Warehouse,
             store: Store) -> dg.MaterializeResult:
    """Publishes the checked products as one snapshot and flips LATEST to it."""
    frames = Products(warehouse)
    # The products' own blocking checks ran before, in the run that made them; what none of
    # them passed is checked here.
    unchecked = UncheckedProducts(frames)
    context.log.info(f"checking {len(unchecked)} product(s) no check passed: "
                     f"{', '.join(unchecked) or 'none'}")
    outcomes = unchecked.outcomes()
    broken = [o.summary() for o in outcomes if not o.passed]
    if broken:
        raise dg.Failure("refusing to publish: " + "; ".join(broken))
    clock = warehouse.clock()
    as_of = clock["as_of"]
    publisher = Publisher(open_store(store.url), default_signer(),
                          retention=timedelta(hours=store.retention_hours),
                          progress=context.log.info)
    records, tokens = frames["chain_records"], frames["token_rows"]
    pairs = pair_table(frames["pair_rows"], tokens)
    leaves, nodes, epoch = verdict_tree(tokens, epoch_of(as_of))
    context.log.info(f"verdicts: {epoch['leaves']} leaves, root {epoch['root']}")
    now = datetime.now(UTC)
    # Spans are cut where a live chain's rows may still arrive: behind the lagging one.
    as_of_s = int(as_of.timestamp())
    lag = records.filter("syncing").select(pl.col("block_lag_seconds").max()).item()
    cut_s = span_cut(as_of_s, int(lag or 0))
    day_swaps = DaySwaps(warehouse.lake())
    swapped = swap_names(day_swaps, cut_s)
    boards, frozen = board_documents(frames["board_rows"], frames["season_boards"],
                                     now.strftime(WIRE_TIME), SEASONS.length_days)
    # The ranked products, published as stored: named by their files, so that a publish
    # between two rankings carries them without reading them.
    stored_as = {name: files_named(*sorted(warehouse.files(name, frames.versions[name])[None]))
                 for name in ("wallet_profiles", "wallet_rankings", "cohort_members",
                              "token_cohorts")}
    # The wallet ledger a lake day at a time: a publish reads the days still changing and the
    # spans it makes again, not the history.
    ledger = StoredLedger({day_start(day): files for day, files in warehouse.day_files(
        "wallet_ledger", frames.versions["wallet_ledger"]).items()}, warehouse.read, cut_s)
    manifest = publisher.publish(
        as_of,
        lists=[PagedList("chains", chain_items(records), ("chain_id", "slug")),
               *market_lists(pairs, tokens, records, as_of),
               ranking_lists(lambda: frames["wallet_rankings"], records, MIN_RATED_POSITIONS,
                             stored_as["wallet_rankings"]),
               *farm_pages(frames["farm_rows"], records),
               PagedList("perps", frames["perp_list"].select("chain_id", "market", "item"),
                         ("chain_id", "market"))],
        documents={"config": config_document(records, frames["config"]), "verdicts": epoch,
                   **boards},
        tables=itertools.chain(
            serving_tables(warehouse, frames, pairs, (leaves, nodes), as_of, cut_s,
                           frames.versions["swap_legs"], day_swaps),
            wallet_serving(frames, ledger, day_swaps, warehouse.scan("address_labels").collect(),
                           as_of_s, hashed_from=swapped, stored_as=stored_as),
            derivative_tables(frames, cut_s)),
        now=now, frozen=frozen, lake_versions=json.loads(clock["lake_versions"]),
        warehouse_versions=frames.versions,
    )
    return dg.MaterializeResult(metadata={
        "snapshot_id": manifest.snapshot_id, "as_of": manifest.as_of,
        "objects": len(manifest.objects), "store": store.url,
    })

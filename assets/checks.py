"""Blocking Dagster asset checks: every product's schema of record, plus the lake cross-check."""

import inspect
from collections.abc import Callable, Iterator, Set
from dataclasses import dataclass, field
from typing import Any

import dagster as dg
import pandera.polars as pa
import polars as pl

from assets.days import DAYS
from assets.domains import PRODUCTS, keys, product_key
from assets.warehouse import BY_DAY, Warehouse, materialized
from checks.chains import counts_agree_with_lake
from checks.outcome import Outcome, failed
from checks.products import PRODUCT_SCHEMAS, piece_outcome, rules_of
from checks.schemas.boards import closed_seasons_changed, shares_leave_the_unnamed
from checks.schemas.farms import stale_shown_fresh
from checks.schemas.oracle import history_off_feed, history_outside_market_hours
from checks.schemas.wallets import POSITIONS_ADD_UP_READS, positions_add_up
from sources.contract import traded_before_deployed
from sources.lake import TABLES

SCHEMA_CHECK = "schema_and_meaning_rules"


def as_result(outcome: Outcome, key: dg.AssetKey | None = None,
              check: str | None = None) -> dg.AssetCheckResult:
    """The check result, with the failing cases as metadata the UI shows (`key` and `check`
    name it when an asset's own step gives it)."""
    metadata: dict = {"failure_count": outcome.failure_count}
    if not outcome.passed:
        metadata["failures"] = dg.MetadataValue.md(
            "\n".join(f"- `{r}`" for r in outcome.failures.head(20).iter_rows()))
    return dg.AssetCheckResult(asset_key=key, check_name=check, passed=outcome.passed,
                               metadata=metadata, severity=dg.AssetCheckSeverity.ERROR)


def schema_check_spec(name: str, key: dg.AssetKey) -> dg.AssetCheckSpec:
    """The blocking schema check of a product whose own step checks it as it is made."""
    return dg.AssetCheckSpec(SCHEMA_CHECK, asset=key, blocking=True,
                             description=_described(PRODUCT_SCHEMAS[name]))


def schema_checked(name: str) -> list[dg.AssetCheckSpec]:
    """The schema check of a product its own step checks as it is made (`checked`)."""
    return [schema_check_spec(name, product_key(name))]


def product_asset(*, deps: list[dg.AssetKey], name: str | None = None, **spec: Any
                  ) -> Callable[[Callable[[Warehouse], dg.MaterializeResult]], dg.AssetsDefinition]:
    """The asset of the product its function makes (`name`, else the function's), checked
    against its schema of record in the same step (`checked`); its check selected alone, from
    the UI or a job, checks the stored product instead of making it again."""
    def decorate(make: Callable[[Warehouse], dg.MaterializeResult]) -> dg.AssetsDefinition:
        product = name or make.__name__
        key = product_key(product)
        spec.setdefault("description", inspect.cleandoc(make.__doc__ or ""))

        @dg.multi_asset(name=f"{key.path[0]}__{product}", can_subset=True,
                        specs=[dg.AssetSpec(key, deps=deps, group_name=key.path[0], **spec)],
                        check_specs=schema_checked(product))
        def _product(context: dg.AssetExecutionContext, warehouse: Warehouse
                     ) -> Iterator[dg.MaterializeResult | dg.AssetCheckResult]:
            if key in context.selected_asset_keys:
                made = make(warehouse)
                if dg.AssetCheckKey(key, SCHEMA_CHECK) not in context.selected_asset_check_keys:
                    # Made without its check (deselected in the UI): the product alone.
                    made = dg.MaterializeResult(metadata=made.metadata)
                yield made
            else:
                yield as_result(stored_outcome(warehouse, product), key, SCHEMA_CHECK)

        return _product

    return decorate


def checked(warehouse: Warehouse, name: str,
            frame: pl.DataFrame | pl.LazyFrame) -> dg.MaterializeResult:
    """Store a product, then check what was stored against its schema of record in the same
    step: a check of its own would cost the product a second step, which on workers is a
    trip through the broker."""
    stored = materialized(warehouse, name, frame)
    return dg.MaterializeResult(metadata=stored.metadata, check_results=[
        as_result(stored_outcome(warehouse, name), product_key(name), SCHEMA_CHECK)])


def stored_outcome(warehouse: Warehouse, name: str) -> Outcome:
    """A stored product checked against its schema of record; a pass is recorded with the
    files it read (`Warehouse.passed`)."""
    version = warehouse.version(name)
    outcome = piece_outcome(name, warehouse.scan(name, version).select(
        _read_by(PRODUCT_SCHEMAS[name])).collect())
    if outcome.passed:
        warehouse.passed(name, [path for paths in warehouse.files(name, version).values()
                                for path in paths], rules_of(name))
    return outcome


def product_checks(checked_in_step: Set[str] = frozenset()) -> list[dg.AssetChecksDefinition]:
    """One blocking schema check per product (but those `checked_in_step`, whose own step
    checks them: `schema_check_spec`), the chain records' lake cross-check, and every rule
    across products."""
    checks = [_schema_check(name, product_key(name)) for name in PRODUCT_SCHEMAS
              if name not in checked_in_step]

    @dg.asset_check(asset=product_key("chain_records"), name="counts_agree_with_lake",
                    blocking=True, additional_deps=keys("pairs", "swaps", "heads", "as_of"))
    def chain_counts(warehouse: Warehouse) -> dg.AssetCheckResult:
        """Pairs, 24h swaps and blocks recomputed from raw tables equal the chain records."""
        as_of = warehouse.clock()["as_of"]
        outcome = counts_agree_with_lake(
            warehouse.scan("chain_records").collect(), warehouse.scan("pairs"),
            warehouse.scan("swaps"), warehouse.scan("heads"), as_of)
        return as_result(outcome)

    return [*checks, chain_counts, *(_cross_check(rule) for rule in CROSS_RULES)]


@dataclass(frozen=True)
class CrossRule:
    """A meaning rule across products: the rows `rule` returns from the tables `reads` (in
    order; `as_of` is the watermark) break it, and are reported under `reported`. A table in
    `columns` is read for those columns only."""

    product: str
    name: str
    reads: tuple[str, ...]
    rule: Callable[..., pl.DataFrame]
    description: str
    reported: str = ""
    columns: dict[str, tuple[str, ...]] = field(default_factory=dict)


CROSS_RULES = (
    CrossRule("wallet_profiles", "positions_add_up",
              ("wallet_windows", "wallet_positions", "wallet_profiles"), positions_add_up,
              "The `all` window of every wallet equals the sums over its positions.",
              "wallet_windows", POSITIONS_ADD_UP_READS),
    CrossRule("board_rows", "shares_leave_the_unnamed", ("board_rows", "board_pairs"),
              shares_leave_the_unnamed,
              "Each chain's named shares sum to one less exactly the share of unnamed pools."),
    CrossRule("season_boards", "closed_seasons_unchanged",
              ("season_boards_before", "season_boards"), closed_seasons_changed,
              "Every season closed before this run is carried over exactly as it was."),
    CrossRule("pair_rows", "nothing_traded_before_deployed", ("tokens", "pairs", "swaps"),
              traded_before_deployed,
              "No pair was created or traded before its tokens were deployed (the lake's "
              "events are in the order a chain could have made them).",
              columns={"tokens": ("chain_id", "address", "deployed_at"),
                       "pairs": ("chain_id", "address", "created_at", "token0", "token1"),
                       "swaps": ("chain_id", "pair", "block_time")}),
    CrossRule("farm_rows", "no_stale_farm_shown_fresh", ("farm_rows", "as_of"),
              stale_shown_fresh,
              "No farm observed longer ago than the staleness bound is shown as fresh."),
    CrossRule("oracle_history", "updates_while_markets_open", ("feed_catalog", "oracle_history"),
              history_outside_market_hours,
              "No update was published while its feed's market was closed."),
    CrossRule("oracle_history", "updates_of_catalog_feeds", ("feed_catalog", "oracle_history"),
              history_off_feed,
              "Every update belongs to a feed of the catalog and carries that feed's exponent."),
)


def _cross_check(rule: CrossRule) -> dg.AssetChecksDefinition:
    # Inputs the product's own run writes (its previous state) are not assets to depend on.
    deps = keys(*(name for name in rule.reads if name != rule.product
                  and (name in TABLES or name in PRODUCTS)))

    @dg.asset_check(asset=product_key(rule.product), name=rule.name, blocking=True,
                    additional_deps=deps, description=rule.description)
    def _check(warehouse: Warehouse) -> dg.AssetCheckResult:
        frames = [warehouse.clock()["as_of"] if name == "as_of"
                  else warehouse.scan(name).select(rule.columns.get(name) or pl.all()).collect()
                  for name in rule.reads]
        rows = rule.rule(*frames)
        return as_result(failed(rule.reported or rule.product, rule.name, rows))

    return _check


def _described(model: type[pa.DataFrameModel]) -> str:
    return f"{model.__name__}: types, bounds and the spec's meaning rules"


def _schema_check(name: str, key: dg.AssetKey) -> dg.AssetChecksDefinition:
    if name in BY_DAY:
        return _day_check(name, key)

    @dg.asset_check(asset=key, name=SCHEMA_CHECK, blocking=True,
                    description=_described(PRODUCT_SCHEMAS[name]))
    def _check(warehouse: Warehouse) -> dg.AssetCheckResult:
        return as_result(stored_outcome(warehouse, name))

    return _check


def _day_check(name: str, key: dg.AssetKey) -> dg.AssetChecksDefinition:
    """The schema check of a product made a day at a time: of the days the run made, each
    day's result shown on its partition."""
    @dg.asset_check(asset=key, name=SCHEMA_CHECK, blocking=True, partitions_def=DAYS,
                    description=_described(PRODUCT_SCHEMAS[name]))
    def _check(context: dg.AssetCheckExecutionContext,
               warehouse: Warehouse) -> dg.AssetCheckResult:
        files = warehouse.files(name)
        read = [path for day in sorted(context.partition_keys) for path in files[day]]
        outcome = piece_outcome(name, warehouse.read(read).select(
            _read_by(PRODUCT_SCHEMAS[name])).collect())
        if outcome.passed:
            warehouse.passed(name, read, rules_of(name))
        return as_result(outcome)

    return _check


def _read_by(model: type[pa.DataFrameModel]) -> list[str] | pl.Expr:
    """The columns a check of `model` reads: only its fields when nothing else can break it
    (a strict model also fails on a column it does not name, a frame-wide rule may read any)."""
    schema = model.to_schema()
    return pl.all() if schema.strict or schema.checks else list(schema.columns)

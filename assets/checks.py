"""Blocking Dagster asset checks: every product's schema of record and the rules across products,
run in the product's own step (`product_asset`, `checked_by_day`), plus the lake's checks."""

import functools
import inspect
from collections.abc import Callable, Iterator, Mapping, Set
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any

import dagster as dg
import pandera.polars as pa
import polars as pl

from assets.days import DAYS, Segment, made_by_day
from assets.domains import HEAVY_TAG, PRODUCTS, keys, product_key
from assets.tables import storable
from assets.warehouse import Warehouse
from checks.chains import counts_agree_with_lake
from checks.outcome import Outcome, combined, failed
from checks.products import PRODUCT_SCHEMAS, piece_outcome, rules_of
from checks.schemas.boards import closed_seasons_changed, shares_leave_the_unnamed
from checks.schemas.farms import stale_shown_fresh
from checks.schemas.market import traded_before_deployed_by_day
from checks.schemas.oracle import history_off_feed, history_outside_market_hours
from checks.schemas.wallets import (
    COHORT_SUMS,
    POSITIONS_ADD_UP_READS,
    cohorts_add_up,
    positions_add_up,
)
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


def day_check_spec(name: str) -> dg.AssetCheckSpec:
    """The blocking schema check of a product made a day at a time, on the days'
    partitions: each run's result is shown on the days it made."""
    return dg.AssetCheckSpec(SCHEMA_CHECK, asset=product_key(name), blocking=True,
                             partitions_def=DAYS, description=_described(PRODUCT_SCHEMAS[name]))


def checked_by_day(context: dg.AssetExecutionContext, warehouse: Warehouse,
                   run: list[tuple[Segment, bool]],
                   made: Callable[[Segment], Mapping[str, pl.DataFrame | pl.LazyFrame]]
                   ) -> Iterator[dg.MaterializeResult | dg.AssetCheckResult]:
    """`made_by_day` of the asked products, with each product's schema check run in the same
    step: each segment's frame checked as it is written (on a thread of its own, while the
    next is made), a file at a time (a product's key is unique within its file), and the
    days' outcomes reported with the product. A check asked for without its product checks
    the stored days instead."""
    asked = {check.asset_key for check in context.selected_asset_check_keys}
    stored = [key for key in asked if key not in context.selected_asset_keys]
    for key in stored:
        yield as_result(stored_outcome(warehouse, key.path[-1], context.partition_keys), key,
                        SCHEMA_CHECK)
    outcomes: dict[str, list[Future[Outcome]]] = {}
    names = [key.path[-1] for key in context.selected_asset_keys]
    # The files kept from before: a check passes only those it read.
    before = {name: set(_paths(warehouse, name)) for name in names}

    with ThreadPoolExecutor(1) as checking:
        def checked(segment: Segment) -> dict[str, pl.DataFrame | pl.LazyFrame]:
            frames = dict(made(segment))
            for name, frame in frames.items():
                if product_key(name) in asked:
                    frames[name] = whole = frame.collect() if isinstance(
                        frame, pl.LazyFrame) else frame
                    outcomes.setdefault(name, []).append(checking.submit(
                        piece_outcome, name,
                        storable(whole).select(_read_by(PRODUCT_SCHEMAS[name]))))
            return frames

        products = made_by_day(context, warehouse, run, checked)
        done = {name: combined(name, [o.result() for o in found])
                for name, found in outcomes.items()}
    for name, outcome in done.items():
        if outcome.passed:
            warehouse.passed(name, [path for path in _paths(warehouse, name)
                                    if path not in before[name]], rules_of(name))
    for product in products:
        name = product.asset_key.path[-1] if product.asset_key else ""
        yield dg.MaterializeResult(
            asset_key=product.asset_key, metadata=product.metadata,
            check_results=[as_result(done[name], product.asset_key, SCHEMA_CHECK)]
            if name in done else None)


def _paths(warehouse: Warehouse, name: str) -> list[str]:
    return ([path for paths in warehouse.files(name).values() for path in paths]
            if warehouse.exists(name) else [])


def product_asset(*, deps: list[dg.AssetKey], name: str | None = None, heavy: bool = False,
                  **spec: Any
                  ) -> Callable[[Callable[[Warehouse], dg.MaterializeResult]], dg.AssetsDefinition]:
    """The asset of the product its function stores (`name`, else the function's), with its
    blocking checks (its schema of record and the rules across products reported under it) run
    in the same step, after the product is stored: a check of its own would cost a second step,
    which on workers is a trip through the broker. Its checks selected alone, from the UI or a
    job, check the stored product instead of making it again. `heavy`: its step is tagged
    `HEAVY_TAG`."""
    def decorate(make: Callable[[Warehouse], dg.MaterializeResult]) -> dg.AssetsDefinition:
        product = name or make.__name__
        key = product_key(product)
        rules = [rule for rule in CROSS_RULES if rule.product == product]
        outcomes: dict[str, Callable[[Warehouse], Outcome]] = {
            SCHEMA_CHECK: lambda warehouse: stored_outcome(warehouse, product),
            **{rule.name: functools.partial(cross_outcome, rule=rule) for rule in rules}}
        described = {"description": inspect.cleandoc(make.__doc__ or ""), **spec}
        read = [*deps, *(d for rule in rules for d in _rule_deps(rule) if d not in deps)]

        @dg.multi_asset(name=f"{key.path[0]}__{product}", can_subset=True,
                        op_tags={HEAVY_TAG: "true"} if heavy else None,
                        specs=[dg.AssetSpec(key, deps=read, group_name=key.path[0],
                                            **described)],
                        check_specs=[schema_check_spec(product, key),
                                     *(_rule_spec(rule) for rule in rules)])
        def _product(context: dg.AssetExecutionContext, warehouse: Warehouse
                     ) -> Iterator[dg.MaterializeResult | dg.AssetCheckResult]:
            asked = {check.name for check in context.selected_asset_check_keys}
            made = make(warehouse) if key in context.selected_asset_keys else None
            results = [as_result(outcome(warehouse), key, check)
                       for check, outcome in outcomes.items() if check in asked]
            if made is None:
                yield from results
            else:
                yield dg.MaterializeResult(metadata=made.metadata, check_results=results)

        return _product

    return decorate


def stored_outcome(warehouse: Warehouse, name: str, days: list[str] | None = None) -> Outcome:
    """A stored product checked against its schema of record: whole, or for a product made a
    day at a time, `days` of it a file at a time (a product's key is unique within its file);
    a pass is recorded with the files it read (`Warehouse.passed`)."""
    files = warehouse.files(name, warehouse.version(name))
    pieces = ([[path] for day in sorted(days) for path in files[day]] if days is not None
              else [[path for paths in files.values() for path in paths]])
    outcome = combined(name, [piece_outcome(name, warehouse.read(piece).select(
        _read_by(PRODUCT_SCHEMAS[name])).collect()) for piece in pieces])
    if outcome.passed:
        warehouse.passed(name, [path for piece in pieces for path in piece], rules_of(name))
    return outcome


def product_checks(carried: Set[dg.AssetCheckKey]) -> list[dg.AssetChecksDefinition]:
    """The check no product's own step runs: the chain records' counts against the lake. Every
    other check is `carried` by its product's asset (`product_asset`, `checked_by_day`, the
    wallet books): one missing is an error, not a product left unchecked."""
    every = {*(dg.AssetCheckKey(product_key(name), SCHEMA_CHECK) for name in PRODUCT_SCHEMAS),
             *(_rule_spec(rule).key for rule in CROSS_RULES)}
    if every - carried:
        raise ValueError("checks no step runs: " + ", ".join(
            sorted(key.to_user_string() for key in every - carried)))

    @dg.asset_check(asset=product_key("chain_records"), name="counts_agree_with_lake",
                    blocking=True, additional_deps=keys("pairs", "swaps", "heads", "as_of"))
    def chain_counts(warehouse: Warehouse) -> dg.AssetCheckResult:
        """Pairs, 24h swaps and blocks recomputed from raw tables equal the chain records."""
        as_of = warehouse.clock()["as_of"]
        outcome = counts_agree_with_lake(
            warehouse.scan("chain_records").collect(), warehouse.scan("pairs"),
            warehouse.scan("swaps"), warehouse.scan("heads"), as_of)
        return as_result(outcome)

    return [chain_counts]


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
    CrossRule("token_cohorts", "cohorts_add_up", ("cohort_members", "token_cohorts"),
              cohorts_add_up,
              "Each cohort's count and sums equal those over its members, and every member's "
              "cohort is a row.",
              columns={"cohort_members": ("chain_id", "token", "cohort", *COHORT_SUMS)}),
    CrossRule("board_rows", "shares_leave_the_unnamed", ("board_rows", "board_pairs"),
              shares_leave_the_unnamed,
              "Each chain's named shares sum to one less exactly the share of unnamed pools."),
    CrossRule("season_boards", "closed_seasons_unchanged",
              ("season_boards_before", "season_boards"), closed_seasons_changed,
              "Every season closed before this run is carried over exactly as it was."),
    CrossRule("pair_rows", "nothing_traded_before_deployed", ("tokens", "pairs", "pair_days"),
              traded_before_deployed_by_day,
              "No pair was created or traded before its tokens were deployed (the lake's "
              "events are in the order a chain could have made them).",
              columns={"tokens": ("chain_id", "address", "deployed_at"),
                       "pairs": ("chain_id", "address", "created_at", "token0", "token1"),
                       "pair_days": ("chain_id", "pair", "first_swap_at")}),
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


def _rule_deps(rule: CrossRule) -> list[dg.AssetKey]:
    # Inputs the product's own run writes (its previous state) are not assets to depend on.
    return keys(*(name for name in rule.reads if name != rule.product
                  and (name in TABLES or name in PRODUCTS)))


def _rule_spec(rule: CrossRule) -> dg.AssetCheckSpec:
    return dg.AssetCheckSpec(rule.name, asset=product_key(rule.product), blocking=True,
                             description=rule.description)


def cross_outcome(warehouse: Warehouse, rule: CrossRule) -> Outcome:
    """A rule across products checked on the stored tables it reads."""
    frames = [warehouse.clock()["as_of"] if name == "as_of"
              else warehouse.scan(name).select(rule.columns.get(name) or pl.all()).collect()
              for name in rule.reads]
    return failed(rule.reported or rule.product, rule.name, rule.rule(*frames))


def _described(model: type[pa.DataFrameModel]) -> str:
    return f"{model.__name__}: types, bounds and the spec's meaning rules"


def _read_by(model: type[pa.DataFrameModel]) -> list[str] | pl.Expr:
    """The columns a check of `model` reads: only its fields when nothing else can break it
    (a strict model also fails on a column it does not name, a frame-wide rule may read any)."""
    schema = model.to_schema()
    return pl.all() if schema.strict or schema.checks else list(schema.columns)

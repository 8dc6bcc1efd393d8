"""Blocking Dagster asset checks: every product's schema of record, plus the lake cross-check."""

import dagster as dg
import pandera.polars as pa

from assets.warehouse import Warehouse
from checks.chains import counts_agree_with_lake
from checks.outcome import Outcome, failed, validate
from checks.products import PRODUCT_SCHEMAS
from checks.schemas.boards import closed_seasons_changed, shares_leave_the_unnamed
from checks.schemas.farms import stale_shown_fresh
from checks.schemas.oracle import history_off_feed, history_outside_market_hours
from checks.schemas.wallets import positions_add_up


def as_result(outcome: Outcome) -> dg.AssetCheckResult:
    """The check result, with the failing cases as metadata the UI shows."""
    metadata: dict = {"failure_count": outcome.failure_count}
    if not outcome.passed:
        metadata["failures"] = dg.MetadataValue.md(
            "\n".join(f"- `{r}`" for r in outcome.failures.head(20).iter_rows()))
    return dg.AssetCheckResult(passed=outcome.passed, metadata=metadata,
                               severity=dg.AssetCheckSeverity.ERROR)


def product_checks(keys: dict[str, dg.AssetKey]) -> list[dg.AssetChecksDefinition]:
    """One blocking schema check per product, and the chain records' lake cross-check."""
    checks = [_schema_check(name, model, keys[name]) for name, model in PRODUCT_SCHEMAS.items()]

    @dg.asset_check(asset=keys["chain_records"], name="counts_agree_with_lake", blocking=True,
                    additional_deps=[dg.AssetKey(["lake", t]) for t in ("pairs", "swaps", "heads")]
                    + [keys["as_of"]])
    def chain_counts(warehouse: Warehouse) -> dg.AssetCheckResult:
        """Pairs, 24h swaps and blocks recomputed from raw tables equal the chain records."""
        as_of = warehouse.clock()["as_of"]
        outcome = counts_agree_with_lake(
            warehouse.scan("chain_records").collect(), warehouse.scan("pairs"),
            warehouse.scan("swaps"), warehouse.scan("heads"), as_of)
        return as_result(outcome)

    @dg.asset_check(asset=keys["wallet_profiles"], name="positions_add_up", blocking=True,
                    additional_deps=[keys["wallet_positions"], keys["wallet_windows"]])
    def wallet_identities(warehouse: Warehouse) -> dg.AssetCheckResult:
        """The `all` window of every wallet equals the sums over its positions."""
        rows = positions_add_up(*(warehouse.scan(n).collect() for n in (
            "wallet_windows", "wallet_positions", "wallet_profiles")))
        return as_result(failed("wallet_windows", "positions_add_up", rows))

    @dg.asset_check(asset=keys["board_rows"], name="shares_leave_the_unnamed", blocking=True,
                    additional_deps=[keys["board_pairs"]])
    def share_identity(warehouse: Warehouse) -> dg.AssetCheckResult:
        """Each chain's named shares sum to one less exactly the share of unnamed pools."""
        rows = shares_leave_the_unnamed(warehouse.scan("board_rows").collect(),
                                        warehouse.scan("board_pairs").collect())
        return as_result(failed("board_rows", "shares_leave_the_unnamed", rows))

    @dg.asset_check(asset=keys["season_boards"], name="closed_seasons_unchanged", blocking=True)
    def frozen_seasons(warehouse: Warehouse) -> dg.AssetCheckResult:
        """Every season closed before this run is carried over exactly as it was."""
        rows = closed_seasons_changed(warehouse.scan("season_boards_before").collect(),
                                      warehouse.scan("season_boards").collect())
        return as_result(failed("season_boards", "closed_seasons_unchanged", rows))

    @dg.asset_check(asset=keys["farm_rows"], name="no_stale_farm_shown_fresh", blocking=True,
                    additional_deps=[keys["as_of"]])
    def farm_freshness(warehouse: Warehouse) -> dg.AssetCheckResult:
        """No farm observed longer ago than the staleness bound is shown as fresh."""
        rows = stale_shown_fresh(warehouse.scan("farm_rows").collect(),
                                 warehouse.clock()["as_of"])
        return as_result(failed("farm_rows", "no_stale_farm_shown_fresh", rows))

    @dg.asset_check(asset=keys["oracle_history"], name="updates_while_markets_open", blocking=True,
                    additional_deps=[keys["oracle_feeds"]])
    def oracle_hours(warehouse: Warehouse) -> dg.AssetCheckResult:
        """No update was published while its feed's market was closed."""
        rows = history_outside_market_hours(warehouse.scan("oracle_feeds").collect(),
                                            warehouse.scan("oracle_history").collect())
        return as_result(failed("oracle_history", "updates_while_markets_open", rows))

    @dg.asset_check(asset=keys["oracle_history"], name="updates_of_catalog_feeds", blocking=True,
                    additional_deps=[keys["oracle_feeds"]])
    def oracle_catalog(warehouse: Warehouse) -> dg.AssetCheckResult:
        """Every update belongs to a feed of the catalog and carries that feed's exponent."""
        rows = history_off_feed(warehouse.scan("oracle_feeds").collect(),
                                warehouse.scan("oracle_history").collect())
        return as_result(failed("oracle_history", "updates_of_catalog_feeds", rows))

    return [*checks, chain_counts, wallet_identities, share_identity, frozen_seasons,
            farm_freshness, oracle_hours, oracle_catalog]


def _schema_check(name: str, model: type[pa.DataFrameModel],
                  key: dg.AssetKey) -> dg.AssetChecksDefinition:
    @dg.asset_check(asset=key, name="schema_and_meaning_rules", blocking=True,
                    description=f"{model.__name__}: types, bounds and the spec's meaning rules")
    def _check(warehouse: Warehouse) -> dg.AssetCheckResult:
        return as_result(validate(name, model, warehouse.scan(name).collect()))

    return _check

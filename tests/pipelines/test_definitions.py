"""Every asset, check, job, schedule and sensor is the one expected: a rename or a lost asset fails here.

The expected set is `definitions.txt` beside this file (one `kind name` a line); a change that
means to add, remove or rename one edits that list in the same commit."""

from pathlib import Path

import dagster as dg
import pytest

from assets.checks import product_checks
from assets.domains import PRODUCTS, product_key
from pipelines.definitions import carried, defs

EXPECTED = Path(__file__).with_name("definitions.txt")


def defined() -> set[str]:
    """`kind name` of everything the Definitions object holds."""
    repo = defs.get_repository_def()
    graph = repo.asset_graph
    return ({f"asset {'/'.join(k.path)}" for k in graph.get_all_asset_keys()}
            | {f"check {'/'.join(k.asset_key.path)}:{k.name}" for k in graph.asset_check_keys}
            | {f"job {j.name}" for j in repo.get_all_jobs() if not j.name.startswith("__")}
            | {f"schedule {s.name}" for s in repo.schedule_defs}
            | {f"sensor {s.name}" for s in repo.sensor_defs})


def test_the_definitions_are_the_expected_ones() -> None:
    expected = set(EXPECTED.read_text().split("\n")) - {""}
    now = defined()
    assert (sorted(now - expected), sorted(expected - now)) == ([], [])


def test_every_product_is_keyed_by_the_one_domain_mapping() -> None:
    # Each asset's key is `<domain>/<product>` with the domain of assets/domains.py, so a
    # product has one name and one domain in every layer that names it.
    products = {line.split(" ", 1)[1] for line in defined() if line.startswith("asset ")
                and not line.startswith("asset lake/")}
    assert products == {f"{domain}/{name}" for name, domain in PRODUCTS.items()}


def test_a_check_no_step_runs_is_refused_by_name() -> None:
    # The farm rows' rule, as though its asset no longer carried it.
    rule = dg.AssetCheckKey(dg.AssetKey(["farms", "farm_rows"]), "no_stale_farm_shown_fresh")
    assert rule in carried
    with pytest.raises(ValueError, match="farms/farm_rows:no_stale_farm_shown_fresh"):
        product_checks(carried - {rule})


def test_every_asset_reading_the_lake_runs_after_its_runs_pin() -> None:
    # A step that read a lake table before `as_of` pinned it read the lake where the previous
    # run left it: a pool added meanwhile was in one product and not in another.
    graph = defs.get_repository_def().asset_graph
    pin = product_key("as_of")
    unpinned = sorted(key.to_user_string() for key in graph.get_all_asset_keys()
                      if key != pin and key.path[0] != "lake"
                      and any(parent.path[0] == "lake" for parent in graph.get(key).parent_keys)
                      and pin not in graph.get(key).parent_keys)
    assert unpinned == []

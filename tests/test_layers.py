"""The house rule: imports between top-level packages flow one way, the way data flows."""

import ast
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PACKAGES = ("core", "sources", "figures", "assets", "checks", "publish", "tail", "edge",
            "pipelines")
# What each package may import of ours; everything may import the bottom package `core`.
ALLOWED = {
    "core": set(),
    "sources": {"core"},
    "checks": {"core", "sources"},
    # The figures both the batch and the live tail make: plain functions, no Dagster.
    "figures": {"core", "checks"},
    "assets": {"core", "sources", "checks", "figures", "publish"},
    "publish": {"core"},
    # The live tail's writer: the batch's figure functions over what the lake holds past the
    # snapshot, published for the edges.
    "tail": {"core", "sources", "figures", "assets", "checks", "publish"},
    "edge": {"core", "publish"},
    "pipelines": {"core", "sources", "figures", "assets", "checks", "publish", "tail", "edge"},
}


def edges(root: Path = ROOT) -> dict[tuple[str, str], list[str]]:
    """Every import of one top-level package by another, with where it is."""
    found: dict[tuple[str, str], list[str]] = {}
    for package in PACKAGES:
        for path in sorted((root / package).rglob("*.py")):
            for node in ast.walk(ast.parse(path.read_text(), str(path))):
                names = ([a.name for a in node.names] if isinstance(node, ast.Import) else
                         [node.module] if isinstance(node, ast.ImportFrom) and node.module
                         and node.level == 0 else [])
                for name in names:
                    target = name.split(".")[0]
                    if target in PACKAGES and target != package:
                        found.setdefault((package, target), []).append(
                            f"{path.relative_to(root)}:{node.lineno}")
    return found


def test_every_import_between_packages_flows_one_way() -> None:
    forbidden = {edge: where for edge, where in edges().items()
                 if edge[1] not in ALLOWED[edge[0]]}
    assert forbidden == {}


def test_the_allowed_imports_have_no_cycle() -> None:
    # Ordered so that each package imports only packages before it: no cycle is possible.
    order = ("core", "sources", "checks", "figures", "publish", "assets", "tail", "edge",
             "pipelines")
    for package, allowed in ALLOWED.items():
        assert all(order.index(target) < order.index(package) for target in allowed), package


def test_the_rule_catches_a_forbidden_import(tmp_path) -> None:
    for package in PACKAGES:
        (tmp_path / package).mkdir()
    (tmp_path / "edge" / "bad.py").write_text("from sources.lake import LakeWriter\n")
    (tmp_path / "publish" / "fine.py").write_text("import core.vocabulary\n")
    assert edges(tmp_path) == {("edge", "sources"): ["edge/bad.py:1"],
                               ("publish", "core"): ["publish/fine.py:1"]}


def loaded(modules: str, packages: tuple[str, ...]) -> list[str]:
    """The modules named from `packages` on that importing `modules` loads, in a process of its own (this
    one has loaded much through other tests' imports)."""
    said = subprocess.run(
        [sys.executable, "-c", f"import sys, {modules}; print(sorted(m for m in sys.modules "
                               f"if m.startswith({packages!r})))"],
        cwd=ROOT, capture_output=True, text=True, check=True).stdout
    return ast.literal_eval(said)


def test_the_tail_writer_and_the_figures_load_no_dagster() -> None:
    assert loaded("tail.writer, figures.ledger, figures.valuation", ("dagster",)) == []


def test_the_tail_writers_preparing_process_loads_neither_the_lake_nor_the_warehouse() -> None:
    # It imports what `basis_of` reads (the snapshot's parts), not the writer's readers.
    assert loaded("tail.basis", ("sources", "assets", "deltalake")) == []

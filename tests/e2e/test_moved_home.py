"""A home moved to another path (a restore, another mount) publishes as it did before: what
names the spans is the data files' own names, not where they are, so its next publish makes
no span again."""

import shutil

from core.store import LocalStore
from publish.reader import latest_id, stored_manifest
from tests.conftest import run_cli


def span_inputs(store: LocalStore) -> dict[str, list]:
    """Each spanned table's parts' spans and what names them, in the latest snapshot."""
    sid = latest_id(store)
    assert sid is not None
    manifest = stored_manifest(store, sid)
    assert manifest is not None
    return {name: sorted((str(part["span"]), part["inputs"]) for part in table["parts"]
                         if part.get("inputs") is not None)
            for name, table in manifest["tables"].items()}


def test_a_moved_home_publishes_its_spans_under_the_same_names(home, tmp_path):
    moved = tmp_path / "elsewhere"
    shutil.copytree(home, moved, ignore=shutil.ignore_patterns("logs"))
    before = span_inputs(LocalStore(moved / "store"))
    assert sum(len(spans) for spans in before.values()) > 10
    done = run_cli(["materialize", "--select", "publish/snapshot"], moved)
    assert done.returncode == 0, done.stderr
    assert span_inputs(LocalStore(moved / "store")) == before

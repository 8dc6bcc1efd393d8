"""The service keeps to its own /openapi.yml on real published products."""

import re
import subprocess

import pytest

from tests.conftest import BIN
from tests.edge.conftest import issue_key
from tests.edge.test_discovery import MOUNTED

STREAM = "/v2/updates/price/stream"
ROOT = r"^/v[12]/"


def _schemathesis(edge: str, key: str, base: str, selection: list[str], cwd) -> int:
    """Operations tested in one run against `base`; fails the test on any broken check."""
    run = subprocess.run(
        [str(BIN / "schemathesis"), "run", edge + "/api/v1/openapi.yml", "--url", base,
         "--checks", "not_a_server_error,response_schema_conformance,"
         "status_code_conformance,content_type_conformance", "--max-examples", "40", "--seed", "7",
         "--header", f"X-API-Key: {key}", "--generation-database", "none", *selection],
        capture_output=True, text=True, timeout=300, cwd=cwd)
    assert run.returncode == 0, run.stdout[run.stdout.find("FAILURES"):][:3000]
    return int(re.search(r"Tested: (\d+)", run.stdout).group(1))


@pytest.mark.stack(seconds=53)
def test_schemathesis_finds_no_server_error_and_no_schema_break(home, edge, tmp_path) -> None:
    key = issue_key(home, "pro")
    api = _schemathesis(edge, key, edge + "/api/v1", ["--exclude-path-regex", ROOT], tmp_path)
    # The oracle's own routes live at the root of the base URL. A stream never ends:
    # tests/e2e/test_oracle.py reads it with a client of its own.
    root = _schemathesis(edge, key, edge, ["--include-path-regex", ROOT, "--exclude-path",
                                           STREAM], tmp_path)
    assert api + root == len(MOUNTED) - 1

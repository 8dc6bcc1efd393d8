"""The service keeps to its own /openapi.yml on real published products."""

import subprocess

from tests.conftest import BIN
from tests.edge.conftest import issue_key
from tests.edge.test_discovery import MOUNTED

STREAM = "/v2/updates/price/stream"


def test_schemathesis_finds_no_server_error_and_no_schema_break(home, edge, tmp_path) -> None:
    key = issue_key(home, "pro")
    run = subprocess.run(
        [str(BIN / "schemathesis"), "run", edge + "/api/v1/openapi.yml", "--url",
         edge + "/api/v1", "--checks", "not_a_server_error,response_schema_conformance,"
         "status_code_conformance,content_type_conformance", "--max-examples", "40", "--seed", "7",
         "--header", f"X-API-Key: {key}", "--generation-database", "none",
         # A stream never ends: tests/e2e/test_oracle.py reads it with a client of its own.
         "--exclude-path", STREAM],
        capture_output=True, text=True, timeout=300, cwd=tmp_path)
    assert run.returncode == 0, run.stdout[-3000:]
    assert f"{len(MOUNTED) - 1} passed" in run.stdout

"""/openapi.yml and /llms.txt come from the registry, and the service keeps to its own schema."""

import subprocess

import httpx
import yaml

from edge.catalog import OPERATIONS
from tests.conftest import BIN
from tests.edge.conftest import issue_key

MOUNTED = {("GET", "/chains"), ("GET", "/config"), ("GET", "/key"), ("GET", "/status"),
           ("GET", "/.well-known/x402"), ("GET", "/chains/{chain}/pairs/{address}"),
           ("POST", "/pairs/batch")}


def test_openapi_documents_mounted_operations_with_their_cost(edge) -> None:
    answer = httpx.get(edge + "/api/v1/openapi.yml")
    assert answer.headers["content-type"] == "application/yaml"
    doc = yaml.safe_load(answer.text)
    assert doc["openapi"].startswith("3.1")
    documented = {(m.upper(), p): op for p, ops in doc["paths"].items() for m, op in ops.items()}
    assert set(documented) == MOUNTED
    assert {k: v["x-chaintape-cost-cu"] for k, v in documented.items()} == {
        ("GET", "/chains"): 10, ("GET", "/config"): 10, ("GET", "/key"): 0, ("GET", "/status"): 0,
        ("GET", "/.well-known/x402"): 20, ("GET", "/chains/{chain}/pairs/{address}"): 20,
        ("POST", "/pairs/batch"): 40}
    limit = next(p for p in documented[("GET", "/chains")]["parameters"] if p["name"] == "limit")
    assert limit["schema"] == {"type": "integer", "format": "int32", "minimum": 1,
                               "maximum": 100, "default": 10}


def test_llms_txt_lists_what_is_served_and_nothing_else(edge) -> None:
    text = httpx.get(edge + "/api/v1/llms.txt").text
    assert "### GET /api/v1/chains (10 CU)" in text and "`limit` (query)" in text
    unmounted = [op for op in OPERATIONS if (op.method, op.path) not in MOUNTED]
    assert unmounted and all(f"{op.method} /api/v1{op.path} (" not in text for op in unmounted)


def test_schemathesis_finds_no_server_error_and_no_schema_break(home, edge, tmp_path) -> None:
    key = issue_key(home, "pro")
    run = subprocess.run(
        [str(BIN / "schemathesis"), "run", edge + "/api/v1/openapi.yml", "--url",
         edge + "/api/v1", "--checks", "not_a_server_error,response_schema_conformance,"
         "status_code_conformance,content_type_conformance", "--max-examples", "40", "--seed", "7",
         "--header", f"X-API-Key: {key}", "--generation-database", "none"],
        capture_output=True, text=True, timeout=300, cwd=tmp_path)
    assert run.returncode == 0, run.stdout[-3000:]
    assert "7 passed" in run.stdout

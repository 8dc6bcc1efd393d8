"""/openapi.yml and /llms.txt come from the registry, and the service keeps to its own schema."""

import httpx
import yaml

from edge.catalog import OPERATIONS

# Every mounted operation with its cost, as the spec's Limits table prices it.
COSTS = {
    ("GET", "/key"): 0, ("GET", "/status"): 0, ("GET", "/chains"): 10, ("GET", "/config"): 10,
    ("GET", "/.well-known/x402"): 20, ("GET", "/chains/{chain}/pairs/{address}"): 20,
    ("GET", "/chains/{chain}/tokens/{address}"): 20,
    ("GET", "/chains/{chain}/tokens/{address}/brief"): 20,
    ("GET", "/chains/{chain}/tokens/{address}/proof"): 20, ("GET", "/launchpads/tokens"): 20,
    ("GET", "/pairs/new"): 20, ("GET", "/pairs/new/stream"): 20,
    ("GET", "/chains/{chain}/pairs/{address}/stream"): 20, ("GET", "/tokens/{id}"): 20,
    ("GET", "/tokens/by-slug/{slug}"): 20,
    ("GET", "/trending"): 20, ("GET", "/chains/{chain}/tokens/{address}/pairs"): 30,
    ("GET", "/pairs"): 30, ("GET", "/search"): 30, ("GET", "/tokens"): 30,
    ("GET", "/chains/{chain}/pairs/{address}/trades"): 40,
    ("GET", "/chains/{chain}/tokens/{address}/holders"): 40,
    ("GET", "/chains/{chain}/tokens/{address}/verdict"): 40,
    ("GET", "/deployers/{address}/tokens"): 40, ("POST", "/pairs/batch"): 40,
    ("GET", "/chains/{chain}/pairs/{address}/candles"): 60, ("POST", "/tokens/batch"): 100,
    ("GET", "/chains/{chain}/wallets/{address}"): 30,
    ("GET", "/chains/{chain}/wallets/{address}/positions"): 40,
    ("GET", "/chains/{chain}/wallets/{address}/rounds"): 40,
    ("GET", "/chains/{chain}/wallets/{address}/trades"): 40,
    ("GET", "/chains/{chain}/wallets/{address}/chart"): 30,
    ("GET", "/chains/{chain}/wallets/{address}/funding"): 20,
    ("GET", "/chains/{chain}/wallets/{address}/best-trades"): 30,
    ("GET", "/chains/{chain}/tokens/{address}/traders"): 40,
    ("GET", "/chains/{chain}/tokens/{address}/cohorts"): 40,
    ("GET", "/wallets"): 50, ("GET", "/wallets/stats"): 20,
    ("GET", "/wallets/{address}/overview"): 60, ("POST", "/wallets/labels/batch"): 60,
    ("GET", "/leaderboard"): 20, ("GET", "/farms"): 30,
    ("GET", "/chains/{chain}/farms/{address}"): 20, ("GET", "/perps"): 20,
    ("GET", "/perps/{market}/history"): 30, ("GET", "/perps/liquidations"): 30,
    ("GET", "/prices"): 10, ("GET", "/prices/at"): 20,
    # The oracle's Hermes-compatible routes are free (spec 5, item 10); its native /v1 routes
    # are priced like their closest API operations: /status, /prices and pair candles' reads.
    ("GET", "/v2/updates/price/latest"): 0, ("GET", "/v2/updates/price/stream"): 0,
    ("GET", "/v2/updates/price/{publish_time}"): 0, ("GET", "/v2/price_feeds"): 0,
    ("GET", "/v2/price_feeds/{id}"): 0, ("GET", "/v1/status"): 0, ("GET", "/v1/feeds"): 10,
    ("GET", "/v1/candles"): 30,
}
MOUNTED = set(COSTS)


def test_openapi_documents_mounted_operations_with_their_cost(shared_edge) -> None:
    answer = httpx.get(shared_edge + "/api/v1/openapi.yml")
    assert answer.headers["content-type"] == "application/yaml"
    doc = yaml.safe_load(answer.text)
    assert doc["openapi"].startswith("3.1")
    documented = {(m.upper(), p): op for p, ops in doc["paths"].items() for m, op in ops.items()}
    assert set(documented) == MOUNTED
    assert {k: v["x-chaintape-cost-cu"] for k, v in documented.items()} == COSTS
    limit = next(p for p in documented[("GET", "/chains")]["parameters"] if p["name"] == "limit")
    assert limit["schema"] == {"type": "integer", "format": "int32", "minimum": 1,
                               "maximum": 100, "default": 10}
    # The Server-Sent Events operations answer text/event-stream, every other JSON.
    streams = {key for key, op in documented.items()
               if "text/event-stream" in op["responses"]["200"]["content"]}
    assert streams == {("GET", "/v2/updates/price/stream"), ("GET", "/pairs/new/stream"),
                       ("GET", "/chains/{chain}/pairs/{address}/stream")}


def test_llms_txt_lists_what_is_served_and_nothing_else(shared_edge) -> None:
    text = httpx.get(shared_edge + "/api/v1/llms.txt").text
    assert "### GET /api/v1/chains (10 CU)" in text and "`limit` (query)" in text
    assert {(op.method, op.path) for op in OPERATIONS} == MOUNTED
    for op in OPERATIONS:
        where = op.path if op.path.startswith(("/v1/", "/v2/")) else "/api/v1" + op.path
        assert f"### {op.method} {where} ({op.cost_cu} CU)" in text

"""Parameter kinds, chain resolution and address forms, on hand-picked inputs."""

import pytest

from edge.addresses import normalize
from edge.catalog import OPERATIONS
from edge.web.params import INT64, choice, flag, integer, listing, number, text
from edge.web.problems import ApiError


def rejects(param, raw) -> str:
    with pytest.raises(ApiError) as caught:
        param.parse(raw)
    assert caught.value.code == "invalid_param" and caught.value.param == param.name
    return caught.value.detail


def test_integer_bounds_default_and_repeats() -> None:
    limit = integer("limit", (1, 100), 10)
    assert limit.parse(None) == 10 and limit.parse(["1"]) == 1 and limit.parse(["100"]) == 100
    for bad in (["0"], ["101"], ["ten"], ["1.5"], [""], ["5", "6"]):
        rejects(limit, bad)
    big = integer("from", (0, INT64[1]))
    assert big.parse([str(2**63 - 1)]) == 2**63 - 1
    # The bounds are told in full, as a client would write them.
    assert rejects(big, [str(2**63)]) == "from must be 0..9223372036854775807"
    assert rejects(integer("min_trades", (0, 2**32 - 1)), ["-1"]) == \
        "min_trades must be 0..4294967295"
    assert rejects(number("min_win_rate", 0, 1), ["2"]) == "min_win_rate must be 0..1"
    assert rejects(number("ratio", 0.5, 2.5), ["3"]) == "ratio must be 0.5..2.5"


def test_number_flag_choice_text_and_list() -> None:
    rate = number("min_win_rate", 0, 1)
    assert rate.parse(["0.25"]) == 0.25
    for bad in (["1.01"], ["-0.1"], ["nan"], ["inf"]):
        rejects(rate, bad)
    bots = flag("exclude_bots")
    assert bots.parse(None) is False and bots.parse(["TRUE"]) is True and bots.parse(["0"]) is False
    rejects(bots, ["yes"])
    order = choice("order", ("asc", "desc"), "desc")
    assert order.parse(None) == "desc"
    rejects(order, ["DESC"])
    cursor = text("cursor", 512)
    assert cursor.parse(["x" * 512]) == "x" * 512
    rejects(cursor, ["x" * 513])
    tx = listing("tx_type", 8, ("buy", "sell"))
    assert tx.parse(["buy, sell"]) == ["buy", "sell"]
    rejects(tx, ["buy,,sell"])
    rejects(tx, ["buy,mint"])
    rejects(listing("chains"), [",".join(["a"] * 33)])


SPEC_COSTS = """
0 GET /key|GET /status
10 GET /chains|GET /config|GET /prices
20 GET /.well-known/x402|GET /chains/{chain}/farms/{address}|GET /chains/{chain}/pairs/{address}
20 GET /chains/{chain}/tokens/{address}|GET /chains/{chain}/tokens/{address}/brief
20 GET /chains/{chain}/tokens/{address}/proof|GET /chains/{chain}/wallets/{address}/funding
20 GET /launchpads/tokens|GET /leaderboard|GET /pairs/new|GET /perps|GET /prices/at
20 GET /tokens/{id}|GET /tokens/by-slug/{slug}|GET /trending|GET /wallets/stats
30 GET /chains/{chain}/tokens/{address}/pairs|GET /chains/{chain}/wallets/{address}
30 GET /chains/{chain}/wallets/{address}/best-trades|GET /chains/{chain}/wallets/{address}/chart
30 GET /farms|GET /pairs|GET /perps/{market}/history|GET /perps/liquidations|GET /search
30 GET /tokens
40 GET /chains/{chain}/pairs/{address}/trades|GET /chains/{chain}/tokens/{address}/holders
40 GET /chains/{chain}/tokens/{address}/traders|GET /chains/{chain}/tokens/{address}/verdict
40 GET /chains/{chain}/wallets/{address}/positions|GET /chains/{chain}/wallets/{address}/rounds
40 GET /chains/{chain}/wallets/{address}/trades|GET /deployers/{address}/tokens|POST /pairs/batch
50 GET /wallets
60 GET /chains/{chain}/pairs/{address}/candles|GET /wallets/{address}/overview
60 POST /wallets/labels/batch
100 POST /tokens/batch
"""


def test_every_operation_of_the_cost_table_is_declared_once_at_its_cost() -> None:
    expected = {}
    for line in SPEC_COSTS.strip().splitlines():
        cost, _, ops = line.partition(" ")
        for op in ops.split("|"):
            method, route = op.split(" ")
            expected[(method, route)] = int(cost)
    # The oracle's native routes are not in the spec's table: their costs are ours (docs/oracle.md).
    expected.update({("GET", "/v1/status"): 0, ("GET", "/v1/feeds"): 10,
                     ("GET", "/v1/candles"): 30})
    # Nor are the market streams, which are ours too (docs/live.md).
    expected.update({("GET", "/chains/{chain}/pairs/{address}/stream"): 20,
                     ("GET", "/pairs/new/stream"): 20})
    # Nor the token's cohorts, an addition the spec lists as not yet available: priced as its
    # traders (docs/wallets.md).
    expected[("GET", "/chains/{chain}/tokens/{address}/cohorts")] = 40
    declared = {(op.method, op.path): op.cost_cu for op in OPERATIONS if op.metered}
    assert len(declared) == len([op for op in OPERATIONS if op.metered])
    assert declared == expected
    hermes = {op.path for op in OPERATIONS if not op.metered}
    assert hermes == {"/v2/updates/price/latest", "/v2/updates/price/stream",
                      "/v2/updates/price/{publish_time}", "/v2/price_feeds",
                      "/v2/price_feeds/{id}"}


def test_evm_addresses_any_case_with_or_without_0x() -> None:
    lower = "0x" + "ab" * 20
    for given in ("AB" * 20, "0X" + "Ab" * 20, lower):
        assert normalize(given, "evm") == lower
    with pytest.raises(ApiError) as caught:
        normalize("0x1234", "evm")
    assert caught.value.code == "invalid_param"
    assert normalize("So11111111111111111111111111111111111111112", "base58") == \
        "So11111111111111111111111111111111111111112"

"""Pair reads over a real socket: chains by slug or id, EVM addresses in any form, batches."""

import httpx
import orjson
import polars as pl
import pytest

from publish.writer import ServingTable
from tests.conftest import edge_process
from tests.edge.conftest import chain_record, issue_key, publish_chains

EVM_PAIR = "0x" + "ab" * 20
B58_PAIR = "So1anaPa1r111111111111111111111111111111111"


def pair_item(chain: dict, address: str, verdict: str) -> dict:
    """A pair row with the blocks the edge touches (the pipeline's tests cover the rest)."""
    return {"network": {"slug": chain["slug"], "chain_id": chain["chain_id"]},
            "pair_address": address, "ticker": "AAA/BBB", "verdict": {"status": verdict},
            "security": {"burned_pct": 10.0, "locked_pct": 60.0, "top_lock_provider": "unicrypt",
                         "earliest_unlock_at": "2027-01-01T00:00:00.000Z",
                         "checked_at": "2026-11-20T00:00:00.000Z"},
            "safety": {"is_honeypot": False, "lp_locked_pct": 60.0, "lp_burned_pct": 10.0}}


@pytest.fixture(scope="module")
def market(tmp_path_factory):
    """An edge over two chains (one EVM, one base58) with one pair each; the second is blocked
    (one for the module: every test only reads)."""
    tmp_path = tmp_path_factory.mktemp("market")
    with pytest.MonkeyPatch.context() as monkeypatch:
        monkeypatch.setenv("CHAINTAPE_HOME", str(tmp_path))
        yield from _market(tmp_path)


def _market(tmp_path):
    rows = [pair_item(chain_record(0), EVM_PAIR, "ok"),
            pair_item(chain_record(1), B58_PAIR, "blocked")]
    frame = pl.DataFrame({"chain_id": [1000, 1001], "pair": [EVM_PAIR, B58_PAIR],
                          "item": [orjson.dumps(r).decode() for r in rows]})
    publish_chains(tmp_path, count=2, config=False,
                   tables=[ServingTable("pairs", frame, ("chain_id", "pair"))])
    key = issue_key(tmp_path, "internal")
    with edge_process(tmp_path) as base, httpx.Client(
            base_url=base + "/api/v1", headers={"X-API-Key": key}) as client:
        yield client


def test_a_pair_by_slug_or_id_and_any_form_of_evm_address(market) -> None:
    forms = [EVM_PAIR, EVM_PAIR.upper().replace("0X", "0x"), "AB" * 20, "0X" + "aB" * 20]
    for chain in ("chain-00", "1000", "CHAIN-00"):
        for address in forms:
            answer = market.get(f"/chains/{chain}/pairs/{address}")
            assert answer.status_code == 200, (chain, address, answer.text)
            assert answer.json()["pair_address"] == EVM_PAIR


def test_non_evm_addresses_are_exact(market) -> None:
    assert market.get(f"/chains/chain-01/pairs/{B58_PAIR}").json()["verdict"] == {
        "status": "blocked"}
    lowered = market.get(f"/chains/chain-01/pairs/{B58_PAIR.lower()}")
    assert lowered.status_code == 404 and lowered.json()["code"] == "not_found"


@pytest.mark.parametrize(("path", "status", "code", "param"), [
    ("/chains/nochain/pairs/abc", 404, "chain_not_found", "chain"),
    ("/chains/999999/pairs/abc", 404, "chain_not_found", "chain"),
    ("/chains/chain-00/pairs/0x1234", 400, "invalid_param", "address"),
    ("/chains/chain-00/pairs/" + "cd" * 20, 404, "not_found", "address"),
    # 32 bytes is a pool id (a Uniswap V4 pool's); 33 is nothing.
    ("/chains/chain-00/pairs/0x" + "cd" * 32, 404, "not_found", "address"),
    ("/chains/chain-00/pairs/0x" + "cd" * 33, 400, "invalid_param", "address"),
    ("/chains/" + "c" * 33 + "/pairs/abc", 400, "invalid_param", "chain"),
])
def test_pair_problems(market, path, status, code, param) -> None:
    answer = market.get(path)
    assert answer.status_code == status
    assert (answer.json()["code"], answer.json()["param"]) == (code, param)


def test_a_batch_across_chains_never_fails_for_unknown_pairs(market) -> None:
    asked = [{"chain": "1001", "address": B58_PAIR},
             {"chain": "chain-00", "address": EVM_PAIR.upper().replace("0X", "0x")},
             {"chain": "chain-00", "address": "0x" + "cd" * 20},
             {"chain": "nochain", "address": "x"}]
    answer = market.post("/pairs/batch", json={"items": asked})
    assert answer.status_code == 200
    items = answer.json()["items"]
    assert [(i["chain"], i["address"], i["found"]) for i in items] == [
        ("chain-01", B58_PAIR, True), ("chain-00", EVM_PAIR, True),
        ("chain-00", "0x" + "cd" * 20, False), ("nochain", "x", False)]
    assert items[0]["pair"]["verdict"]["status"] == "blocked"
    assert items[2]["pair"] is None
    # Batch rows carry no LP lock figures; burned figures stay.
    assert items[1]["pair"]["security"] == {"burned_pct": 10.0,
                                            "checked_at": "2026-11-20T00:00:00.000Z"}
    assert items[1]["pair"]["safety"] == {"is_honeypot": False, "lp_burned_pct": 10.0}


@pytest.mark.parametrize(("body", "param"), [
    (b"not json", "body"),
    (b"[]", "body"),
    (b"{}", "body.items"),
    (b'{"items": []}', "body.items"),
    (orjson.dumps({"items": [{"chain": "1", "address": "a"}] * 51}), "body.items"),
    (b'{"items": [{"chain": "1"}]}', "body.items[0].address"),
    (b'{"items": [{"chain": 1, "address": "a"}]}', "body.items[0].chain"),
    (b'{"items": [{"chain": "1", "address": "a", "extra": 1}]}', "body.items[0].extra"),
    (orjson.dumps({"items": [{"chain": "1", "address": "a" * 129}]}), "body.items[0].address"),
])
def test_batch_bodies_are_validated(market, body, param) -> None:
    answer = market.post("/pairs/batch", content=body,
                        headers={"content-type": "application/json"})
    assert answer.status_code == 400
    assert (answer.json()["code"], answer.json()["param"]) == ("invalid_param", param)

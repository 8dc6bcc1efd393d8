"""API keys over a real socket: headers, refusals, plans, revocation, hashed storage."""

import asyncio
import hashlib
import json
import os
import subprocess

import httpx
import pytest
import redis

from edge.billing.keys import FileKeys, RedisKeys
from tests.conftest import BIN, edge_process, run_cli, until
from tests.edge.conftest import issue_key

pytestmark = pytest.mark.cost(seconds=19)


def test_keys_raise_limits_and_are_refused_when_unknown_or_revoked(home, edge) -> None:
    key = issue_key(home, "pro")
    stored = (home / "keys.json").read_text()
    assert key not in stored and hashlib.sha256(key.encode()).hexdigest() in stored

    by_header = httpx.get(edge + "/api/v1/chains?limit=100", headers={"X-API-Key": key})
    assert by_header.status_code == 200 and len(by_header.json()["items"]) == 60
    assert by_header.headers["ratelimit-policy"] == '"pro";q=3000;w=60;burst=200'
    bearer = httpx.get(edge + "/api/v1/key", headers={"Authorization": f"Bearer {key}"})
    assert bearer.json()["plan"] == "pro" and bearer.json()["max_page_size"] == 100
    assert bearer.json()["key"]["name"] == "test pro"
    assert httpx.get(edge + "/api/v1/key").json()["plan"] == "keyless"

    unknown = httpx.get(edge + "/api/v1/chains", headers={"X-API-Key": key + "x"})
    assert (unknown.status_code, unknown.json()["code"]) == (401, "invalid_api_key")
    in_query = httpx.get(edge + f"/api/v1/chains?api_key={key}")
    assert (in_query.status_code, in_query.json()["code"], in_query.json()["param"]) == (
        400, "key_in_query", "api_key")

    key_id = bearer.json()["key"]["id"]
    listed = run_cli(["keys", "list"], home).stdout
    assert key_id in listed and "active" in listed and key not in listed
    assert run_cli(["keys", "revoke", key_id], home).returncode == 0
    # The edge re-reads the key file at most once a second.
    revoked = until(lambda: (answer := httpx.get(edge + "/api/v1/chains", headers={
        "X-API-Key": key})).status_code == 401 and answer, 10, "the revoked key refused")
    assert revoked.json()["code"] == "invalid_api_key"
    assert run_cli(["keys", "revoke", "nosuchid"], home).returncode != 0


def test_a_plan_that_does_not_cover_the_operation_is_403(home, edge) -> None:
    key = issue_key(home, "oracle")
    refused = httpx.get(edge + "/api/v1/chains", headers={"X-API-Key": key})
    assert (refused.status_code, refused.json()["code"]) == (403, "plan_required")
    assert httpx.get(edge + "/api/v1/key", headers={"X-API-Key": key}).json()["plan"] == "oracle"
    assert httpx.get(edge + "/api/v1/chains").status_code == 200


def test_keys_in_redis_serve_every_edge(home) -> None:
    url = "redis://127.0.0.1:6379/14"
    redis.Redis.from_url(url).flushdb()
    key = issue_key(home, "pro", CHAINTAPE_REDIS_URL=url)
    assert not (home / "keys.json").exists()
    with edge_process(home, CHAINTAPE_REDIS_URL=url) as one, \
            edge_process(home, CHAINTAPE_REDIS_URL=url) as two:
        for base in (one, two):
            answer = httpx.get(base + "/api/v1/key", headers={"X-API-Key": key})
            assert answer.json()["plan"] == "pro"


def test_a_key_whose_plan_is_no_longer_offered_is_refused(home, edge) -> None:
    key = issue_key(home, "starter")
    keys = json.loads((home / "keys.json").read_text())
    (record,) = keys.values()
    record["plan"] = "discontinued"
    (home / "keys.json").write_text(json.dumps(keys))
    refused = until(lambda: (answer := httpx.get(edge + "/api/v1/chains", headers={
        "X-API-Key": key})).status_code == 401 and answer, 10, "the key refused")
    assert refused.json()["code"] == "invalid_api_key"


def test_a_key_issued_between_two_reads_is_known_at_once(tmp_path) -> None:
    edge, admin = FileKeys(tmp_path / "keys.json"), FileKeys(tmp_path / "keys.json")
    assert asyncio.run(edge.lookup("ct_unknown")) is None
    key, _ = admin.create("fresh", "internal")
    assert asyncio.run(edge.lookup(key)) is not None


def keys_commands_at_once(home, commands: list[list[str]], **env) -> list[str]:
    """Run `chaintape keys …` commands all at once; their outputs, in order."""
    full = {**os.environ, "CHAINTAPE_HOME": str(home), **env}
    running = [subprocess.Popen([str(BIN / "chaintape"), "keys", *args], env=full,
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
               for args in commands]
    outputs = []
    for proc in running:
        out, err = proc.communicate(timeout=120)
        assert proc.returncode == 0, err
        outputs.append(out.strip())
    return outputs


@pytest.mark.parametrize("backend", ["file", "redis"])
def test_keys_issued_and_revoked_at_once_all_stick(home, backend) -> None:
    env = {"CHAINTAPE_REDIS_URL": "redis://127.0.0.1:6379/13"} if backend == "redis" else {}
    if env:
        redis.Redis.from_url(env["CHAINTAPE_REDIS_URL"]).flushdb()
    keys = FileKeys(home / "keys.json") if not env else RedisKeys(env["CHAINTAPE_REDIS_URL"])
    doomed = [keys.create(f"doomed {n}", "pro")[1].key_id for n in range(6)]
    issued = keys_commands_at_once(
        home, [["revoke", key_id] for key_id in doomed] +
        [["create", "--name", f"new {n}", "--plan", "pro"] for n in range(6)], **env)[6:]
    records = {r.key_id: r for r in keys.all()}
    assert len(records) == 12
    assert [records[key_id].active for key_id in doomed] == [False] * 6
    async def looked_up() -> list:
        found = [await keys.lookup(key) for key in issued]
        if isinstance(keys, RedisKeys):
            await keys.aio.aclose()
        return found

    found = asyncio.run(looked_up())
    assert all(r is not None and r.active and r.name.startswith("new ") for r in found)


def test_a_key_is_kept_in_the_one_home_whichever_folder_it_is_made_from(tmp_path,
                                                                       monkeypatch) -> None:
    from pathlib import Path

    from pipelines.cli import default_home

    # Made from another folder, a key goes where every command keeps its files: the
    # checkout's var/, not the folder's.
    monkeypatch.chdir(tmp_path)
    assert default_home() == Path(__file__).resolve().parents[2] / "var"
    # And the command says where it kept it.
    home = tmp_path / "home"
    done = run_cli(["keys", "create", "--name", "where", "--plan", "pro"], home,
                   CHAINTAPE_REDIS_URL="")
    assert done.returncode == 0, done.stderr
    assert f"kept in {(home / 'keys.json').absolute()}" in done.stderr
    assert FileKeys(home / "keys.json").all()[0].name == "where"

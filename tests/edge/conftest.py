"""Edge fixtures: a hand-made snapshot of many chains, and edge processes over it."""

import os
from datetime import UTC, datetime
from pathlib import Path

import httpx
import orjson
import polars as pl
import pytest

from core.store import LocalStore
from publish.cursor import default_signer
from publish.writer import PagedList, Publisher, ServingTable
from tests.conftest import edge_process, run_cli

CHAINS = 60
AS_OF = datetime(2026, 11, 20, tzinfo=UTC)


def chain_record(i: int) -> dict:
    """A chain record with every field of spec 2.9; chain 0 is EVM, the rest base58."""
    return {
        "slug": f"chain-{i:02d}", "display_name": f"Chain {i}",
        "native_address_format": "evm" if i == 0 else "base58",
        "explorer_url": f"https://explorer-{i}.example", "chain_id": 1000 + i,
        "latest_block": 500 + i, "head_block": 502 + i, "block_lag_seconds": i, "pairs": 3,
        "txns_24h": 10, "new_pairs_24h": 1, "new_pairs_24h_total": 1, "scams_total": 0,
        "scams_on_pool": 0, "scams_inherited": 0, "scams_24h": 0, "deployers_total": 2,
        "new_deployers_24h": 0, "deployer_abusers": 0, "syncing": False, "metrics_stale": False,
        "protocols": ["Dex"], "dex_names": ["Dex"], "liquidity_usd": 1.5, "volume_24h_usd": 2.5,
        "min_liquidity_usd": 5000.0, "quality_liquidity_usd": 1.0,
        "gainer": None, "loser": {"pair_address": "p", "ticker": "A/B", "value": -1.0},
    }


def publish_chains(home: Path, count: int = CHAINS, config: bool = True,
                   tables: list[ServingTable] = (), as_of: datetime = AS_OF) -> str:
    """Publish a snapshot of `count` chain records (and /config unless told not to) beside the
    serving `tables`."""
    os.environ["CHAINTAPE_HOME"] = str(home)
    records = [chain_record(i) for i in range(count)]
    frame = pl.DataFrame({"chain_id": [r["chain_id"] for r in records],
                          "slug": [r["slug"] for r in records],
                          "item": [orjson.dumps(r).decode() for r in records]})
    documents = {"config": {"chains": records, "resolutions": ["1h"], "tx_types": ["buy"],
                            "sort_options": ["trending"], "timeframes": ["h24"],
                            "min_liquidity_usd": 5000.0}} if config else {}
    manifest = Publisher(LocalStore(home / "store"), default_signer()).publish(
        as_of, [PagedList("chains", frame, ("chain_id", "slug"))], documents, tables=tables)
    return manifest.snapshot_id


@pytest.fixture
def home(tmp_path, monkeypatch) -> Path:
    """A home whose store holds one published snapshot of 60 chains."""
    monkeypatch.setenv("CHAINTAPE_HOME", str(tmp_path))
    publish_chains(tmp_path)
    return tmp_path


@pytest.fixture
def edge(home):
    """The edge over `home`, as a real server process. Its snapshot is dated 2026-11-20 on
    purpose (fixed answers), so the edge is told not to call it stale."""
    with dated_edge(home) as base:
        yield base


def dated_edge(home: Path):
    """An edge process over a home of the fixed-date snapshot, never calling it stale."""
    return edge_process(home, CHAINTAPE_POLL_SECONDS="0.2", CHAINTAPE_STALE_AFTER_SECONDS="1e12")


@pytest.fixture(scope="module")
def shared_edge(tmp_path_factory):
    """An edge over a home like `home`, one for a module's tests that only read it: keyless
    calls, a few each (the module's together stay inside the keyless burst's refill)."""
    path = tmp_path_factory.mktemp("shared-home")
    with pytest.MonkeyPatch.context() as monkeypatch:
        monkeypatch.setenv("CHAINTAPE_HOME", str(path))
        publish_chains(path)
        with dated_edge(path) as base:
            yield base


def first_refusal(base: str, path: str = "/api/v1/chains", headers: dict | None = None,
                  cap: int = 40) -> tuple[int, httpx.Response | None]:
    """Calls made until the first one refused (any answer but 200), and that answer: the
    refused call itself, for a call made after it may find a unit come back (5 a second). None
    when no call in `cap` was refused: a 20-unit keyless budget is spent by the 40th at the
    latest, so a test fails rather than waits for ever."""
    with httpx.Client(headers=headers) as client:
        for n in range(1, cap + 1):
            answer = client.get(base + path)
            if answer.status_code != 200:
                return n, answer
    return cap + 1, None


def issue_key(home: Path, plan: str, **env) -> str:
    """A key issued by the admin command."""
    done = run_cli(["keys", "create", "--name", f"test {plan}", "--plan", plan], home, **env)
    assert done.returncode == 0, done.stderr
    return done.stdout.strip()


"""Two chains into one lake: `chaintape ingest evm --chains FILE --follow` on two anvil nodes of
different chain ids. One chain's follower killed (SIGKILL) stops only that chain: the other goes
on, the killed one is started again and resumes; each chain's rows are what its own node did,
and the edge serves both; one chain's node gone, /status says so."""

import os
import signal
import subprocess
import time
from datetime import datetime

import httpx
import polars as pl
import pytest
import yaml

from sources.evm.config import parse
from sources.evm.devnet import Devnet, start_node, v2_market
from sources.evm.ingest import Follower
from sources.evm.rpc import Rpc
from sources.lake import LakeWriter
from tests.conftest import BIN, children, command_of, edge_process, run_cli, until
from tests.edge.conftest import issue_key

E18 = 10**18
TABLES = ("swaps", "reserves", "transfers", "liquidity_events")


def followers_of(parent: int) -> dict[str, int]:
    """The `ingest evm` children of `parent` by the node URL each follows."""
    return {args[args.index("--rpc") + 1]: pid for pid, args in children(parent, "--rpc").items()}


def cursor(lake: LakeWriter, chain_id: int) -> int:
    """The next block the lake's mark says a chain's follower reads."""
    mark = lake.progress()
    chains = {} if mark is None else mark.meta.get("chains", {})
    return int(chains.get(str(chain_id), {}).get("next_block", -1))


def rows(lake: LakeWriter, chain_id: int) -> dict[str, pl.DataFrame]:
    return {name: lake.read(name).filter(pl.col("chain_id") == chain_id)
            .sort("block_number", "log_index") for name in TABLES}


@pytest.mark.stack(seconds=67)
def test_two_chains_one_lake_one_killed(tmp_path):
    nodes = {31337: start_node(), 5: start_node(chain_id=5)}
    nets = {cid: Devnet(node.url) for cid, node in nodes.items()}
    parent = tail = None
    try:
        markets, pairs = {}, {}
        for cid, net in nets.items():
            markets[cid] = v2_market(net)
            pairs[cid], _ = markets[cid].pool("Pepe", "PEPE", 100 * E18, 10**6 * E18)
            markets[cid].swap(pairs[cid], markets[cid].quote, E18, 0)
        slugs = {31337: "devnet", 5: "devnet-five"}
        entries = []
        for cid, market in markets.items():
            venues = tmp_path / f"{slugs[cid]}.venues.yaml"
            venues.write_text(market.venues_file(slugs[cid]))
            entries.append({"rpc": nodes[cid].url, "venues": venues.name})
        chains = tmp_path / "chains.yaml"
        chains.write_text(yaml.safe_dump({"chains": entries}))
        env = {**os.environ, "CHAINTAPE_HOME": str(tmp_path)}
        parent = subprocess.Popen(
            [str(BIN / "chaintape"), "ingest", "evm", "--chains", str(chains), "--follow",
             "--poll", "0.2", "--confirmations", "0"], env=env, start_new_session=True,
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        lake = LakeWriter(tmp_path / "lake")
        for cid, net in nets.items():
            head = net.block_number()
            until(lambda cid=cid, head=head: cursor(lake, cid) > head, timeout=60,
                  what=f"chain {cid} followed to its head")

        # Chain 5's follower killed: chain 31337's goes on meanwhile.
        killed = followers_of(parent.pid)[nodes[5].url]
        os.kill(killed, signal.SIGKILL)
        markets[31337].swap(pairs[31337], markets[31337].quote, E18, 0)
        markets[5].swap(pairs[5], markets[5].quote, 2 * E18, 0)
        for cid, net in nets.items():
            head = net.block_number()
            until(lambda cid=cid, head=head: cursor(lake, cid) > head, timeout=60,
                  what=f"chain {cid} followed past the kill")
        assert followers_of(parent.pid)[nodes[5].url] != killed

        for cid, node in nodes.items():
            alone = LakeWriter(tmp_path / f"alone-{cid}")
            with Rpc(node.url) as rpc:
                Follower.open(rpc, parse(yaml.safe_load(markets[cid].venues_file(slugs[cid]))),
                              alone, confirmations=0).run()
            for name, frame in rows(alone, cid).items():
                assert rows(lake, cid)[name].equals(frame), (cid, name)
            assert rows(lake, cid)["swaps"].height == 2

        made = run_cli(["materialize"], tmp_path)
        assert made.returncode == 0, made.stderr
        tail = subprocess.Popen([str(BIN / "chaintape"), "tail", "--poll", "0.1"], env=env,
                                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        with edge_process(tmp_path, CHAINTAPE_LIVE_POLL_SECONDS="0.1") as base:
            listed = httpx.get(base + "/api/v1/chains", timeout=30).json()["items"]
            assert sorted(c["slug"] for c in listed) == ["devnet", "devnet-five"]
            for cid, slug in slugs.items():
                row = httpx.get(f"{base}/api/v1/chains/{slug}/pairs/{pairs[cid]}", timeout=30)
                assert row.status_code == 200, row.text
                assert row.json()["txn"]["h24"]["buys"] == 2

            key = {"X-API-Key": issue_key(tmp_path, "internal")}

            def status_nodes() -> dict[str, dict | None]:
                answer = httpx.get(base + "/api/v1/status", headers=key, timeout=30).json()
                return {c["slug"]: c["node"] for c in answer["chains"]}

            assert until(lambda: status_nodes() == {"devnet": {"state": "answering"},
                                                    "devnet-five": {"state": "answering"}},
                         timeout=30, what="both nodes answering on /status")
            # Chain 5's node gone: its record says so, with its last error and since when,
            # and the service is degraded; the other chain's node still answers.
            gone_at = time.time()
            nodes[5].stop()
            until(lambda: (status_nodes()["devnet-five"] or {}).get("state") == "unreachable",
                  timeout=120, what="chain 5's node unreachable on /status")
            status = httpx.get(base + "/api/v1/status", headers=key, timeout=30).json()
            five = next(c for c in status["chains"] if c["slug"] == "devnet-five")
            assert status["status"] == "degraded"
            assert five["syncing"] is False
            assert "eth_blockNumber" in five["node"]["last_error"]
            assert gone_at - 1 <= datetime.fromisoformat(five["node"]["since"]).timestamp() \
                <= time.time()
            assert status["upstreams"]["nodes"] == {"healthy": False,
                                                    "unreachable": ["devnet-five"]}
            assert status_nodes()["devnet"] == {"state": "answering"}
    finally:
        if tail is not None:
            tail.terminate()
            tail.wait(30)
        if parent is not None:
            # Stopped as Ctrl-C stops it: it stops its followers (each in a group of its own).
            if parent.poll() is None:
                os.killpg(parent.pid, signal.SIGTERM)
            parent.wait(60)
        for net in nets.values():
            net.close()
        for node in nodes.values():
            node.stop()


@pytest.mark.stack(seconds=8)
def test_a_follower_renewed_in_place_loses_and_repeats_nothing(tmp_path):
    """A follower whose memory is always over its allowance is renewed (exec, the same
    process) after every batch it writes: the chain's rows are still what the node did."""
    node = start_node(chain_id=7)
    net = Devnet(node.url)
    follower = None
    try:
        market = v2_market(net)
        pair, _ = market.pool("Pepe", "PEPE", 100 * E18, 10**6 * E18)
        venues = tmp_path / "devnet.venues.yaml"
        venues.write_text(market.venues_file("devnet-seven"))
        env = {**os.environ, "CHAINTAPE_HOME": str(tmp_path), "CHAINTAPE_RENEW_WARM_S": "0",
               "CHAINTAPE_RENEW_ABOVE_MB": "-4096"}
        env.pop("CHAINTAPE_RENEWALS", None)
        log = tmp_path / "follower.log"
        with open(log, "w") as out:
            follower = subprocess.Popen(
                [str(BIN / "chaintape"), "ingest", "evm", "--rpc", node.url, "--venues",
                 str(venues), "--follow", "--poll", "0.2", "--confirmations", "0",
                 "--from-block", "0"], env=env, stdout=out, stderr=out)
        lake = LakeWriter(tmp_path / "lake")
        # Each swap written, then the follower renewed before the next one comes.
        for amount in (1, 2, 3):
            market.swap(pair, market.quote, amount * E18, 0)
            head = net.block_number()
            until(lambda head=head: cursor(lake, 7) > head, timeout=60,
                  what=f"the follower past block {head}")
            until(lambda amount=amount: log.read_text().count("renewed in place") >= amount,
                  timeout=60, what=f"renewal {amount}")
        assert follower.poll() is None
        # Renewed, it goes on from the lake's mark: the block it was first told to read from
        # is no longer in its command.
        # (Read between two images, a process's command is empty.)
        args = until(lambda: command_of(follower.pid), what="the follower's command")
        assert "--follow" in args and "--from-block" not in args
        follower.terminate()
        follower.wait(30)
        alone = LakeWriter(tmp_path / "alone")
        with Rpc(node.url) as rpc:
            Follower.open(rpc, parse(yaml.safe_load(market.venues_file("devnet-seven"))),
                          alone, confirmations=0).run()
        for name, frame in rows(alone, 7).items():
            assert rows(lake, 7)[name].equals(frame), name
        swaps = rows(lake, 7)["swaps"]
        assert [a + b for a, b in zip(swaps["amount0_in"], swaps["amount1_in"], strict=True)] == [
            E18, 2 * E18, 3 * E18]
    finally:
        if follower is not None and follower.poll() is None:
            follower.kill()
        net.close()
        node.stop()


@pytest.mark.parametrize(("document", "message"), [
    ({"chains": [{"rpc": "ftp://x", "venues": "a.yaml"}]}, "chains[0].rpc"),
    ({"chains": [{"rpc": "http://x", "venues": "missing.yaml"}]}, "chains[0].venues"),
    ({"chains": [{"rpc": "http://x", "venues": "a.yaml", "speed": 1}]}, "chains[0].speed"),
    ({"chains": []}, "chains"),
])
def test_a_chains_file_mistake_is_named(tmp_path, document, message):
    from sources.evm.config import ConfigError, load_chains

    chains = tmp_path / "chains.yaml"
    chains.write_text(yaml.safe_dump(document))
    with pytest.raises(ConfigError) as refused:
        load_chains(chains)
    assert str(refused.value).startswith(message), str(refused.value)

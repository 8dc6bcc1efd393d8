"""From a Hermes update's publish time to the edge serving it, under `chaintape up --rpc`:
prints JSON.

The upstream is a second chaintape edge over a small simulated home (its oracle publishes every
400 ms). An anvil node carries a V2 market whose WETH is priced by the upstream's ETH/USD feed
(`hermes:` in the venues file); `chaintape up --rpc … --venues … --hermes …` follows it: the
follower streams the upstream's benchmarks into the lake, the tail carries them, the edge
serves them. The bench reads the same stream; for each benchmark it takes, the time from its
`publish_time` (a whole second, so each figure may read up to 0.4 s high) to:
- the edge's `/v2/updates/price/latest` answering that update;
- the edge serving WETH at that price in the pair's row.
A swap a second keeps blocks coming, as on a live chain."""

import argparse
import contextlib
import json
import os
import signal
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import httpx
import orjson
import yaml

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from bench.ingest import spread  # noqa: E402
from bench.load import CLI, internal_key  # noqa: E402
from sources.evm.devnet import Devnet, start_node  # noqa: E402
from tests.conftest import edge_process, free_port  # noqa: E402
from tests.e2e.conftest import pepe_market  # noqa: E402

E18 = 10**18


def say(line: str) -> None:
    print(line, file=sys.stderr, flush=True)


def upstream_home(home: Path) -> None:
    """A small simulated home, materialised: the upstream edge's catalog and history."""
    env = {**os.environ, "CHAINTAPE_HOME": str(home), "DAGSTER_HOME": str(home / "dagster")}
    for args in (["simulate", "--chains", "4", "--days", "1", "--swaps", "4000"],
                 ["materialize"]):
        subprocess.run([str(CLI), *args], env=env, cwd=REPO, check=True,
                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)


class Benchmarks:
    """The upstream's ETH/USD benchmarks as they arrive: the newest (publish_time, USD), and
    each second's USD price."""

    def __init__(self, upstream: str, feed: str) -> None:
        self.newest: tuple[int, float] | None = None
        self.usd: dict[int, float] = {}
        self.url = (f"{upstream}/v2/updates/price/stream?ids[]={feed}&benchmarks_only=true"
                    "&channel=real_time")
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        # The upstream stops with the bench: its stream ends then.
        with contextlib.suppress(httpx.HTTPError), \
                httpx.Client(timeout=httpx.Timeout(10, read=None)) as client, \
                client.stream("GET", self.url) as response:
            for line in response.iter_lines():
                if line.startswith("data:"):
                    price = orjson.loads(line[5:])["parsed"][0]["price"]
                    usd = int(price["price"]) * 10.0 ** price["expo"]
                    self.usd[price["publish_time"]] = usd
                    self.newest = (price["publish_time"], usd)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--updates", type=int, default=60, help="benchmarks followed")
    args = parser.parse_args()
    node = start_node()
    net = Devnet(node.url)
    with tempfile.TemporaryDirectory(ignore_cleanup_errors=True) as scratch:
        source, home = Path(scratch) / "upstream", Path(scratch) / "chain"
        say("  the upstream: a simulated home, materialised ...")
        upstream_home(source)
        with edge_process(source) as upstream:
            listed = httpx.get(upstream + "/v2/price_feeds", params={"query": "eth/usd"}).json()
            feed = next(f["id"] for f in listed if f["attributes"]["symbol"] == "Crypto.ETH/USD")
            market, pepe, pair = pepe_market(net, 1_000 * E18)
            document = yaml.safe_load(market.venues_file())
            document["quotes"] = [{"token": market.quote, "hermes": feed}]
            home.mkdir()
            venues = home / "venues.yaml"
            venues.write_text(yaml.safe_dump(document))
            port = free_port()
            env = {**os.environ, "CHAINTAPE_HOME": str(home),
                   "DAGSTER_HOME": str(home / "dagster"), "PORT": str(port)}
            say("  chaintape up --rpc … --venues … --hermes … (a first snapshot, then serving)")
            log = home / "up.log"
            up = subprocess.Popen(
                [str(CLI), "up", "--rpc", node.url, "--venues", str(venues), "--hermes",
                 upstream + "?channel=real_time"], env=env, cwd=REPO, start_new_session=True,
                stdout=subprocess.DEVNULL, stderr=log.open("w"))
            try:
                base = f"http://127.0.0.1:{port}"
                while not answers(base + "/api/v1/status"):
                    if up.poll() is not None:
                        raise SystemExit("chaintape up stopped:\n" + log.read_text()[-2_000:])
                    time.sleep(0.2)
                oracle, row = follow(base, internal_key(env), Benchmarks(upstream, feed), feed,
                                     net, market, pepe, pair, args.updates)
            finally:
                os.killpg(up.pid, signal.SIGTERM)
                up.wait(60)
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(up.pid, signal.SIGKILL)
    net.close()
    node.stop()
    print(json.dumps({
        "bench": "hermes_lag", "updates": len(oracle),
        "publish_to_oracle_latest_ms": spread([s for s in oracle if s is not None]),
        "publish_to_pair_row_ms": spread([s for s in row if s is not None]),
        "not_served_in_60s": sum(s is None for s in oracle + row),
        "target_s": {"median": 2, "p99": 5}}), flush=True)


def follow(base: str, key: str, stream: Benchmarks, feed: str, net: Devnet, market, pepe: str,
           pair: str, updates: int) -> tuple[list[float | None], list[float | None]]:
    """Each newest benchmark in turn, followed to the edge's latest route and to the pair row,
    while a swap a second keeps blocks coming."""
    trading = threading.Event()

    def trade() -> None:
        side = 0
        while not trading.is_set():
            market.swap(pair, (market.quote, pepe)[side], E18 // 100 if side == 0 else 5 * E18,
                        1)
            side ^= 1
            trading.wait(1.0)

    threading.Thread(target=trade, daemon=True).start()
    oracle: list[float | None] = []
    row: list[float | None] = []
    taken = 0
    say(f"  following {updates} benchmarks to the edge")
    with httpx.Client(base_url=base, timeout=10, headers={"X-API-Key": key}) as client:
        try:
            while len(oracle) < updates:
                newest = stream.newest
                if newest is None or newest[0] <= taken:
                    time.sleep(0.01)
                    continue
                published = taken = newest[0]

                def latest(published: int = published) -> bool:
                    answer = client.get("/v2/updates/price/latest", params={"ids[]": feed})
                    return answer.status_code == 200 and \
                        answer.json()["parsed"][0]["price"]["publish_time"] >= published

                def priced(published: int = published) -> bool:
                    # WETH at this benchmark's price or a later one's.
                    served = weth_usd(client, pair, market.quote)
                    return served is not None and any(
                        abs(served - usd) <= 1e-9 * usd
                        for at, usd in list(stream.usd.items()) if at >= published)

                oracle.append(waited(latest, published))
                row.append(waited(priced, published))
        finally:
            trading.set()
    return oracle, row


def weth_usd(client: httpx.Client, pair: str, weth: str) -> float | None:
    """WETH's USD price in `pair`'s row on the edge."""
    row = client.get(f"/api/v1/chains/devnet/pairs/{pair}")
    if row.status_code != 200:
        return None
    side = next((t for t in row.json()["tokens"] if t["address"] == weth), None)
    return None if side is None else side["price_usd"]


def answers(url: str) -> bool:
    """Whether `url` answers at all."""
    try:
        httpx.get(url, timeout=1.0)
        return True
    except httpx.TransportError:
        return False


def waited(served, published: int) -> float | None:
    """Seconds from `published` until `served()` says so (None past 60 s)."""
    while not served():
        if time.time() - published > 60:
            return None
        time.sleep(0.02)
    return time.time() - published


if __name__ == "__main__":
    main()

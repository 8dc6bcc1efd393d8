"""The EVM follower's throughput and lag against a local anvil node: prints JSON lines.

1. `range`: a chain of `--blocks` blocks with `--swaps-per-block` swaps each (over `--pairs`
   pairs, by the node's nine funded traders) is made, then ingested whole from block 0 into an
   empty lake: blocks/s and logs/s.
1b. `backfill`: its first `--backfill-blocks` blocks read again into empty lakes through a
   proxy that answers every request `--delay-ms` late (a remote provider's round trip), one
   request at a time and `--concurrency` at once, side by side: blocks/s, logs/s and the
   ratio.
2. `follow`: the follower runs with --follow while a block of swaps is mined every
   `--every` seconds; for each block, the time from its mining (the mining call's return) to
   the lake's mark covering it (the batch committed and visible to every reader).
3. `mix`: two chains of `--mix-blocks` blocks of `--swaps-per-block` swaps each, made and
   ingested one after the other: Uniswap V2 pairs alone, and the families a real chain's
   volume is in (V2, V3, V4 with native ETH, Solidly) over the same tokens; each read
   `--mix-runs` times into new lakes, the median run's blocks/s and logs/s, and the mixed
   chain's logs/s over V2's (target: no slower per log, ≥ 1).
4. `served`: `chaintape up --rpc … --venues …` over the same lake, as a user runs it (the
   follower with --follow at its default poll, a first snapshot, the Dagster daemon's
   refreshes as batches land, the live tail writer and the edge), while a block of swaps is
   mined every `--every` seconds; for each block, the time from its mining to the edge serving
   its last swap in its pair's newest trades with the pair row's last trade at the block's
   time (polled every 20 ms, the bench's only load on the edge). Every `--answer-every`th
   block also carries a new answer of the ETH/USD Chainlink aggregator that prices WETH: the
   time from its block's mining to the edge serving WETH at that price in a pair's row."""

import argparse
import contextlib
import json
import os
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path

import httpx
import yaml

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from bench import pool_mix  # noqa: E402
from bench.freshness import served  # noqa: E402
from bench.load import CLI, internal_key  # noqa: E402
from sources.evm.config import parse  # noqa: E402
from sources.evm.devnet import Devnet, V2Market, call_data, start_node, v2_market  # noqa: E402
from sources.evm.families.uniswap_v2 import SWAP  # noqa: E402
from sources.evm.ingest import Follower  # noqa: E402
from sources.evm.rpc import Rpc  # noqa: E402
from sources.lake import LakeWriter  # noqa: E402
from tests.conftest import free_port, wait_http  # noqa: E402
from tests.sources.evm.test_rpc import Proxy  # noqa: E402

E18 = 10**18
TRADERS = range(1, 10)
STAGES = ("range", "backfill", "follow", "mix", "served")


def say(line: str) -> None:
    print(line, file=sys.stderr, flush=True)


def setup(market: V2Market, pairs: int) -> list[tuple[str, str]]:
    """`pairs` base tokens paired with the quote, deep liquidity, and every trader funded and
    approved; returns (pair, base) for each."""
    made = []
    for i in range(pairs):
        made.append(market.pool(f"Token {i}", f"TK{i}", 10_000 * E18, 10**9 * E18,
                                supply=10**12 * E18))
    for trader in TRADERS:
        market.transfer(market.quote, trader, 50_000 * E18)
        for _, base in made:
            market.transfer(base, trader, 10**7 * E18)
        market.approve(trader, market.quote, *(b for _, b in made))
    return made


def mine_swaps(market: V2Market, made: list[tuple[str, str]], swaps: int, block: int) -> None:
    """Send `swaps` swaps in one request and mine them into one block."""
    calls = []
    for k in range(swaps):
        pair, base = made[(block + k) % len(made)]
        trader = market.net.accounts[TRADERS[(block * 7 + k) % len(TRADERS)]]
        selling = (block + k) % 3 == 0
        token, amount = (base, 1_000 * E18) if selling else (market.quote, E18 // 100)
        calls.append(("eth_sendTransaction", [{
            "from": trader, "to": market.router, "gas": hex(300_000),
            "data": call_data("swapExactIn(address,address,uint256,address)", pair, token,
                              amount, trader)}]))
    market.net.rpc.batch(calls)
    market.net.mine(1)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--blocks", type=int, default=10_000)
    parser.add_argument("--swaps-per-block", type=int, default=50)
    parser.add_argument("--pairs", type=int, default=20)
    parser.add_argument("--batch-blocks", type=int, default=1_000)
    parser.add_argument("--follow-blocks", type=int, default=30)
    parser.add_argument("--every", type=float, default=1.0)
    parser.add_argument("--answer-every", type=int, default=3)
    parser.add_argument("--backfill-blocks", type=int, default=2_000)
    parser.add_argument("--delay-ms", type=float, default=50.0)
    parser.add_argument("--concurrency", type=int, default=8)
    parser.add_argument("--mix-blocks", type=int, default=1_000)
    parser.add_argument("--mix-pools", type=int, default=5)
    parser.add_argument("--mix-runs", type=int, default=3)
    parser.add_argument("--stages", default=",".join(STAGES),
                        help=f"which stages to run, of {','.join(STAGES)}")
    args = parser.parse_args()
    stages = set(args.stages.split(","))
    if stages - set(STAGES):
        parser.error(f"--stages: {', '.join(sorted(stages - set(STAGES)))} is no stage")
    if "mix" in stages:
        print(json.dumps(mix(args)), flush=True)
    if not stages & {"range", "backfill", "follow", "served"}:
        return
    node = start_node()
    net = Devnet(node.url)
    try:
        market = v2_market(net, quote_supply=10**9 * E18)
        made = setup(market, args.pairs)
        net.automine(False)
        began = time.perf_counter()
        for block in range(args.blocks):
            mine_swaps(market, made, args.swaps_per_block, block)
            if block % 500 == 499:
                say(f"  made {block + 1:,} blocks of {args.swaps_per_block} swaps "
                    f"[{time.perf_counter() - began:.0f}s]")
        venues = parse(yaml.safe_load(market.venues_file()))
        with tempfile.TemporaryDirectory(ignore_cleanup_errors=True) as home:
            os.environ["CHAINTAPE_HOME"] = home
            lake = LakeWriter(Path(home) / "lake")
            head = net.block_number()
            with Rpc(node.url) as rpc:
                follower = Follower.open(rpc, venues, lake, confirmations=12,
                                    batch_blocks=args.batch_blocks,
                                    progress=lambda line: say(f"  {line}"))
                started = time.perf_counter()
                batches = follower.run(to_block=head)
                seconds = time.perf_counter() - started
                logs = sum(b.logs for b in batches)
                print(json.dumps({
                    "bench": "ingest", "stage": "range", "blocks": head + 1,
                    "swaps": lake.read("swaps").height, "logs": logs,
                    "seconds": round(seconds, 2),
                    "blocks_per_s": round((head + 1) / seconds, 1),
                    "logs_per_s": round(logs / seconds, 1), "rpc_requests": rpc.calls,
                    "batch_blocks": args.batch_blocks}), flush=True)
                print(json.dumps(backfill(node.url, venues, Path(home), args)), flush=True)
                lags = follow_lags(market, made, follower, lake, args)
                print(json.dumps({
                    "bench": "ingest", "stage": "follow", "blocks": len(lags),
                    "swaps_per_block": args.swaps_per_block, "every_s": args.every,
                    "mined_to_lake_ms": spread(lags)}), flush=True)
                said, answered = served_lags(market, made, Path(home), node.url, args)
            print(json.dumps({
                "bench": "ingest", "stage": "served", "blocks": len(said),
                "swaps_per_block": args.swaps_per_block, "every_s": args.every,
                "mined_to_served_ms": spread([s for s in said if s is not None]),
                "not_served_in_60s": sum(s is None for s in said),
                "answers": len(answered),
                "answer_to_served_ms": spread([s for s in answered if s is not None]),
                "answers_not_served_in_60s": sum(s is None for s in answered),
                "targets": {"mined_to_served_s": {"median": 3, "p99": 10},
                            "answer_to_served_s": {"median": 2, "p99": 5}}}), flush=True)
    finally:
        net.close()
        node.stop()


def mix(args: argparse.Namespace) -> dict:
    """The follower on V2 pairs alone and on the families mixed, the same swaps a block."""
    out: dict = {"bench": "ingest", "stage": "mix", "blocks": args.mix_blocks,
                 "swaps_per_block": args.swaps_per_block, "pools_per_family": args.mix_pools}
    for name, build in (("v2_only", pool_mix.v2_only), ("mixed", pool_mix.mixed)):
        node = start_node()
        net = Devnet(node.url)
        try:
            say(f"  mix: making the {name} chain ...")
            chain = build(net, args.mix_pools)
            made = net.block_number()
            net.automine(False)
            for block in range(args.mix_blocks):
                chain.mine(net, args.swaps_per_block, block)
                if block % 250 == 249:
                    say(f"  mix: {block + 1:,} blocks made")
            runs = [_mixed_run(node.url, chain.venues, made, args) for _ in range(args.mix_runs)]
            # The median run's figures (a 3 s run moves by a tenth between runs here).
            out[name] = sorted(runs, key=lambda r: r["seconds"])[len(runs) // 2]
            say(f"  mix: {name} {out[name]}")
        finally:
            net.close()
            node.stop()
    out["per_log_ratio"] = round(out["mixed"]["logs_per_s"] / out["v2_only"]["logs_per_s"], 2)
    out["target_per_log_ratio"] = 1.0
    return out


def _mixed_run(url: str, venues: str, made: int, args: argparse.Namespace) -> dict:
    """One follower into a new lake: the pools and their liquidity (to block `made`) read
    first, untimed, then the traded blocks, timed."""
    with tempfile.TemporaryDirectory(ignore_cleanup_errors=True) as home, Rpc(url) as rpc:
        lake = LakeWriter(Path(home) / "lake")
        follower = Follower.open(rpc, parse(yaml.safe_load(venues)), lake, confirmations=12,
                                 batch_blocks=args.batch_blocks)
        follower.run(to_block=made)
        started = time.perf_counter()
        batches = follower.run()
        seconds = time.perf_counter() - started
    logs = sum(b.logs for b in batches)
    return {"swaps": sum(b.rows["swaps"] for b in batches), "logs": logs,
            "seconds": round(seconds, 2), "blocks_per_s": round(args.mix_blocks / seconds, 1),
            "logs_per_s": round(logs / seconds, 1),
            "logs_per_block": round(logs / args.mix_blocks, 1)}


def backfill(url: str, venues, home: Path, args: argparse.Namespace) -> dict:
    """The chain's first blocks through a slow proxy, sequential and concurrent."""
    proxy = Proxy(url, delay_s=args.delay_ms / 1000)
    out: dict = {"bench": "ingest", "stage": "backfill", "blocks": args.backfill_blocks,
                 "delay_ms": args.delay_ms}
    try:
        for concurrency in (1, args.concurrency):
            say(f"  backfill through the proxy, {concurrency} in flight ...")
            lake = LakeWriter(home / f"backfill-{concurrency}")
            with Rpc(proxy.url, concurrency=concurrency) as rpc:
                follower = Follower.open(rpc, venues, lake, confirmations=12,
                                         batch_blocks=args.batch_blocks)
                started = time.perf_counter()
                batches = follower.run(to_block=args.backfill_blocks - 1)
                seconds = time.perf_counter() - started
                logs = sum(b.logs for b in batches)
                out[f"concurrency_{concurrency}"] = {
                    "seconds": round(seconds, 2),
                    "blocks_per_s": round(args.backfill_blocks / seconds, 1),
                    "logs_per_s": round(logs / seconds, 1), "requests": rpc.calls}
    finally:
        proxy.close()
    out["ratio"] = round(out[f"concurrency_{args.concurrency}"]["blocks_per_s"]
                         / out["concurrency_1"]["blocks_per_s"], 2)
    out["target_ratio"] = 4
    return out


def spread(lags: list[float]) -> dict[str, float]:
    """Median, p99 and largest, in milliseconds."""
    if not lags:
        return {}
    return {"median": round(1000 * statistics.median(lags), 1),
            "p99": round(1000 * statistics.quantiles(lags, n=100, method="inclusive")[98], 1)
            if len(lags) > 1 else round(1000 * lags[0], 1),
            "max": round(1000 * max(lags), 1)}


def last_swap(net: Devnet, block: int) -> dict:
    """A mined block's last swap as the edge names it: its chain, pair, place and time."""
    logs = net.rpc.call("eth_getLogs", {"fromBlock": hex(block), "toBlock": hex(block),
                                        "topics": [SWAP]})
    header = net.rpc.call("eth_getBlockByNumber", hex(block), False)
    return {"chain_id": int(net.rpc.call("eth_chainId"), 16), "pair": logs[-1]["address"].lower(),
            "block_number": block, "log_index": int(logs[-1]["logIndex"], 16),
            "block_time": datetime.fromtimestamp(int(header["timestamp"], 16), UTC)}


def served_lags(market: V2Market, made: list[tuple[str, str]], home: Path, rpc_url: str,
                args: argparse.Namespace) -> tuple[list[float | None], list[float | None]]:
    """`chaintape up` following the node into the lake in `home`, while a block is mined every
    `--every` seconds: each block's time from mined to served, and each aggregator answer's
    (None when not within 60 s)."""
    port = free_port()
    env = {**os.environ, "CHAINTAPE_HOME": str(home), "DAGSTER_HOME": str(home / "dagster"),
           "PORT": str(port)}
    venues = home / "venues.yaml"
    venues.write_text(market.venues_file())
    say("  chaintape up --rpc … --venues … (a first snapshot, then serving) ...")
    lags: list[float | None] = []
    answers: list[float | None] = []
    with serving(["up", "--rpc", rpc_url, "--venues", str(venues)], env) as base, \
            httpx.Client(base_url=base + "/api/v1", timeout=10,
                          headers={"X-API-Key": internal_key(env)}) as client:
            say(f"  mining a block of {args.swaps_per_block} swaps every {args.every}s, "
                "each followed to the edge")
            for k in range(args.follow_blocks):
                time.sleep(args.every)
                answer = None
                if k % args.answer_every == args.answer_every - 1:
                    # A price no earlier answer gave, in the block with the swaps.
                    answer = 3_000 * 10**8 + (k + 1) * 10**7
                    market.net.rpc.call("eth_sendTransaction", {
                        "from": market.net.accounts[0], "to": market.aggregator,
                        "gas": hex(200_000), "data": call_data("updateAnswer(int256)", answer)})
                mine_swaps(market, made, args.swaps_per_block,
                           args.blocks + args.follow_blocks + k)
                mined = time.perf_counter()
                swap = last_swap(market.net, market.net.block_number())
                while not served(client, swap) and time.perf_counter() - mined < 60:
                    time.sleep(0.02)
                lag = time.perf_counter() - mined
                lags.append(lag if lag < 60 else None)
                if answer is not None:
                    while not weth_at(client, made[0][0], market.quote, answer / 10**8) \
                            and time.perf_counter() - mined < 60:
                        time.sleep(0.02)
                    lag = time.perf_counter() - mined
                    answers.append(lag if lag < 60 else None)
    return lags, answers


@contextlib.contextmanager
def serving(command: list[str], env: dict) -> Iterator[str]:
    """`chaintape up …` as a user runs it, in a session of its own: the edge's base URL once
    it answers (on env's PORT); stopped after, with all it started."""
    up = subprocess.Popen([str(CLI), *command], env=env, cwd=REPO, start_new_session=True,
                          stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        base = f"http://127.0.0.1:{env['PORT']}"
        wait_http(base + "/api/v1/status", timeout=600)
        yield base
    finally:
        os.killpg(up.pid, signal.SIGTERM)
        up.wait(60)
        # What the daemon started and did not stop with it (a refresh's run), before the home
        # is removed under it.
        with contextlib.suppress(ProcessLookupError):
            os.killpg(up.pid, signal.SIGKILL)


def weth_at(client: httpx.Client, pair: str, weth: str, usd: float) -> bool:
    """Whether the edge serves WETH at `usd` in `pair`'s row."""
    row = client.get(f"/chains/devnet/pairs/{pair}")
    if row.status_code != 200:
        return False
    side = next((t for t in row.json()["tokens"] if t["address"] == weth), None)
    return side is not None and side["price_usd"] is not None and \
        abs(side["price_usd"] - usd) <= 1e-9 * usd


def follow_lags(market: V2Market, made: list[tuple[str, str]], follower: Follower, lake: LakeWriter,
                args: argparse.Namespace) -> list[float]:
    """Mine a block every `--every` seconds while the follower follows; each block's time from
    mined to covered by the lake's mark."""
    stop = threading.Event()
    mined: dict[int, float] = {}
    marked: dict[int, float] = {}

    def watch() -> None:
        while not stop.is_set():
            mark = lake.progress()
            if mark is not None:
                covered = int(mark.meta["next_block"]) - 1
                for n in mined:
                    if n <= covered and n not in marked:
                        marked[n] = time.perf_counter()
            time.sleep(0.01)

    runner = threading.Thread(target=follower.run, kwargs={
        "follow": True, "poll_s": 0.1, "stop": stop.is_set}, daemon=True)
    watcher = threading.Thread(target=watch, daemon=True)
    runner.start()
    watcher.start()
    for k in range(args.follow_blocks):
        time.sleep(args.every)
        mine_swaps(market, made, args.swaps_per_block, args.blocks + k)
        mined[market.net.block_number()] = time.perf_counter()
    deadline = time.monotonic() + 60
    while len(marked) < len(mined) and time.monotonic() < deadline:
        time.sleep(0.05)
    stop.set()
    runner.join(30)
    return sorted(marked[n] - mined[n] for n in marked)


if __name__ == "__main__":
    main()

"""Mined → served with two chains followed into one lake, under `chaintape up --chains`:
prints JSON.

Two anvil nodes (chain ids 31337 and 5), each with `--pairs` pairs against WETH; `chaintape up
--chains` follows both (a follower each, the refreshes, the live tail, the edge). A block of
`--swaps-per-block` swaps is mined on each chain in turn every `--every` seconds; each block is
followed from its mining until the edge shows its last swap in its pair's newest trades with
the pair row's last trade at the block's time (polled every 20 ms): per chain and both."""

import argparse
import json
import os
import sys
import tempfile
import time
from pathlib import Path

import httpx
import yaml

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from bench.freshness import served  # noqa: E402
from bench.ingest import last_swap, mine_swaps, serving, setup, spread  # noqa: E402
from bench.load import internal_key  # noqa: E402
from sources.evm.devnet import Devnet, start_node, v2_market  # noqa: E402
from tests.conftest import free_port  # noqa: E402

E18 = 10**18
SLUGS = {31337: "devnet", 5: "devnet-five"}


def say(line: str) -> None:
    print(line, file=sys.stderr, flush=True)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--pairs", type=int, default=5)
    parser.add_argument("--swaps-per-block", type=int, default=20)
    parser.add_argument("--blocks", type=int, default=30, help="blocks followed per chain")
    parser.add_argument("--every", type=float, default=1.0)
    args = parser.parse_args()
    nodes = {cid: start_node(chain_id=cid) for cid in SLUGS}
    nets = {cid: Devnet(node.url) for cid, node in nodes.items()}
    lags: dict[int, list[float | None]] = {cid: [] for cid in SLUGS}
    with tempfile.TemporaryDirectory(ignore_cleanup_errors=True) as scratch:
        home = Path(scratch)
        markets, made = {}, {}
        entries = []
        for cid, net in nets.items():
            markets[cid] = v2_market(net, quote_supply=10**9 * E18)
            made[cid] = setup(markets[cid], args.pairs)
            net.automine(False)
            venues = home / f"{SLUGS[cid]}.venues.yaml"
            venues.write_text(markets[cid].venues_file(SLUGS[cid]))
            entries.append({"rpc": nodes[cid].url, "venues": venues.name})
        chains = home / "chains.yaml"
        chains.write_text(yaml.safe_dump({"chains": entries}))
        port = free_port()
        env = {**os.environ, "CHAINTAPE_HOME": str(home), "DAGSTER_HOME": str(home / "dagster"),
               "PORT": str(port)}
        say("  chaintape up --chains … (a first snapshot, then serving) ...")
        with serving(["up", "--chains", str(chains)], env) as base, \
                httpx.Client(base_url=base + "/api/v1", timeout=10,
                             headers={"X-API-Key": internal_key(env)}) as client:
            say(f"  a block of {args.swaps_per_block} swaps every {args.every}s, chain by "
                "chain, each followed to the edge")
            for k in range(args.blocks * len(SLUGS)):
                cid = list(SLUGS)[k % len(SLUGS)]
                time.sleep(args.every)
                mine_swaps(markets[cid], made[cid], args.swaps_per_block, k)
                mined = time.perf_counter()
                swap = last_swap(nets[cid], nets[cid].block_number())
                swap["chain_id"] = SLUGS[cid]
                while not served(client, swap) and time.perf_counter() - mined < 60:
                    time.sleep(0.02)
                lag = time.perf_counter() - mined
                lags[cid].append(lag if lag < 60 else None)
    for net in nets.values():
        net.close()
    for node in nodes.values():
        node.stop()
    every = [s for found in lags.values() for s in found if s is not None]
    print(json.dumps({
        "bench": "chains_lag", "chains": len(SLUGS), "blocks_per_chain": args.blocks,
        "swaps_per_block": args.swaps_per_block,
        "mined_to_served_ms": spread(every),
        "per_chain": {SLUGS[cid]: spread([s for s in found if s is not None])
                      for cid, found in lags.items()},
        "not_served_in_60s": sum(s is None for found in lags.values() for s in found),
        "target_s": {"median": 2, "p99": 5}}), flush=True)


if __name__ == "__main__":
    main()

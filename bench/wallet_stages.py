"""Where the wallet books' time goes: each stage of `wallet_books` run alone, one after another,
chain by chain, over the lake and products `bench/materialize.py --domain wallets` left (run it
first). Prints one JSON line: per stage, its wall seconds, user and kernel CPU seconds and page
faults summed over the chains, and their totals. The pipeline overlaps these stages on two cores;
their sum is what there is to overlap."""

import argparse
import json
import os
import sys
import time
from collections import defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench.materialize import usage  # noqa: E402  (with the pipeline's process settings)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--home", type=Path,
                        default=ROOT / "var" / "bench-materialize" / "10000000",
                        help="a home `bench/materialize.py --domain wallets` materialised")
    args = parser.parse_args()
    os.environ["CHAINTAPE_HOME"] = str(args.home)
    if not (args.home / "warehouse" / "wallet_ledger" / "_delta_log").exists():
        sys.exit(f"no wallet products under {args.home}: run bench/materialize.py "
                 "--domain wallets first")

    import polars as pl

    from assets.wallets.behaviour import wallet_traits
    from assets.wallets.books import LEDGER_INPUTS
    from assets.wallets.ledger import account, chain_inputs, chains_of, stored, wallet_events
    from assets.wallets.positions import Accounts, Owners, assemble_positions, assemble_rounds
    from assets.wallets.windows import assemble_windows
    from assets.warehouse import Warehouse, default_root, parquet_options
    from checks.products import piece_outcome

    warehouse = Warehouse(root=default_root(), lake_root=str(args.home / "lake"))
    clock = warehouse.clock()
    tokens, pools = (warehouse.scan(t).collect() for t in ("token_rows", "pair_tokens"))
    frames = warehouse.frames(LEDGER_INPUTS)
    totals: dict[str, list[float]] = defaultdict(lambda: [0.0, 0.0, 0.0, 0])
    scratch = Path(default_root()) / ".stages.parquet"

    def timed(stage: str, work, *args):
        """`work(*args)`, its wall and CPU seconds and page faults added to `stage`'s."""
        before, started = usage(), time.perf_counter()
        out = work(*args)
        spent = (time.perf_counter() - started,
                 *(after - then for after, then in zip(usage(), before, strict=True)))
        for i, amount in enumerate(spent):
            totals[stage][i] += amount
        return out

    def written(name: str, frame: pl.DataFrame) -> None:
        frame.write_parquet(scratch, **parquet_options(name))

    as_of, as_of_s = clock["as_of"], clock["as_of_s"]
    chains = chains_of(frames)
    for chain, mine in zip(chains, chain_inputs(frames, chains), strict=True):
        print(f"chain {chain} ...", file=sys.stderr, flush=True)
        ledger = timed("accounting", account, timed("events", wallet_events, mine, as_of))
        slot, ledger = ledger["slot"].to_numpy(), ledger.drop("slot")
        accounts = timed("accounting", Accounts.of, ledger, slot)
        positions = timed("positions fold", assemble_positions, ledger, tokens, accounts)
        owners = timed("windows fold", Owners.of, ledger, accounts.slot)
        products = {
            "wallet_ledger": stored(ledger),
            "wallet_positions": positions,
            "wallet_rounds": timed("rounds fold", assemble_rounds, ledger, as_of_s, accounts),
            "wallet_windows": timed("windows fold", assemble_windows, ledger, as_of_s,
                                    positions, accounts, owners),
            "wallet_traits": timed("traits fold", wallet_traits, ledger, pools, accounts.slot,
                                   owners),
        }
        for name, frame in products.items():
            timed("ledger write" if name == "wallet_ledger" else "fold writes", written, name,
                  frame)
            timed("checks", piece_outcome, name, frame)
    scratch.unlink(missing_ok=True)
    stages = {stage: {"wall_s": round(w, 2), "user_s": round(u, 2), "kernel_s": round(k, 2),
                      "page_faults": int(f)} for stage, (w, u, k, f) in totals.items()}
    print(json.dumps({"bench": "wallet_stages", "stages": stages, "total": {
        key: round(sum(s[key] for s in stages.values()), 2)
        for key in ("wall_s", "user_s", "kernel_s", "page_faults")}}), flush=True)


if __name__ == "__main__":
    main()

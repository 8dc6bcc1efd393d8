"""Where the wallet products' time goes: each stage of `wallet_days` (day by day: events,
accounting, the ledger's write and checks) and of `wallet_books` (chain by chain: reading the
ledger, the folds, their writes and checks) run alone, one after another, over the lake and
products `bench/materialize.py --domain wallets` left (run it first). Prints one JSON line: per
stage, its wall seconds, user and kernel CPU seconds and page faults summed over the days or
chains, and their totals. The pipeline overlaps the folds on two cores; their sum is what
there is to overlap."""

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

    from assets.tables import default_root, parquet_options
    from assets.wallets.behaviour import wallet_traits
    from assets.wallets.days import LedgerDays
    from assets.wallets.positions import Accounts, Owners, assemble_positions, assemble_rounds
    from assets.wallets.windows import assemble_windows
    from assets.warehouse import Warehouse
    from checks.products import piece_outcome
    from figures.ledger import account_onto, books_after, slots, token_marks, wallet_events

    warehouse = Warehouse(root=default_root(), lake_root=str(args.home / "lake"))
    clock = warehouse.clock()
    tokens, pools = (warehouse.scan(t).collect() for t in ("token_rows", "pair_tokens"))
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

    as_of_s = clock["as_of_s"]
    days = LedgerDays(warehouse)
    books, marks = None, None
    for day in days.days:
        print(f"day {day} ...", file=sys.stderr, flush=True)
        events = timed("events", wallet_events, days.inputs(day), days.as_of, marks,
                       timed("events", lambda: days.mints))
        ledger, closing = timed("accounting", account_onto, events, books)
        books = timed("accounting", books_after, books, closing)
        marks = timed("events", token_marks, events, marks)
        for name, frame in (("wallet_ledger", ledger.drop("slot")),
                            ("wallet_book_states", closing), ("token_marks", marks)):
            timed("ledger write", written, name, frame)
            timed("checks", piece_outcome, name, frame)
    stored = warehouse.scan("wallet_ledger")
    for chain in stored.select(pl.col("chain_id").unique().sort()).collect().to_series():
        print(f"chain {chain} ...", file=sys.stderr, flush=True)
        ledger = timed("ledger read", stored.filter(pl.col("chain_id") == chain).collect)
        accounts = timed("ledger read", Accounts.of, ledger, timed("ledger read", slots,
                                                                    ledger)[0])
        positions = timed("positions fold", assemble_positions, ledger, tokens, accounts)
        owners = timed("windows fold", Owners.of, ledger, accounts.slot)
        products = {
            "wallet_positions": positions,
            "wallet_rounds": timed("rounds fold", assemble_rounds, ledger, as_of_s, accounts),
            "wallet_windows": timed("windows fold", assemble_windows, ledger, as_of_s,
                                    positions, accounts, owners),
            "wallet_traits": timed("traits fold", wallet_traits, ledger, pools, accounts.slot,
                                   owners),
        }
        for name, frame in products.items():
            timed("fold writes", written, name, frame)
            timed("checks", piece_outcome, name, frame)
    scratch.unlink(missing_ok=True)
    stages = {stage: {"wall_s": round(w, 2), "user_s": round(u, 2), "kernel_s": round(k, 2),
                      "page_faults": int(f)} for stage, (w, u, k, f) in totals.items()}
    print(json.dumps({"bench": "wallet_stages", "stages": stages, "total": {
        key: round(sum(s[key] for s in stages.values()), 2)
        for key in ("wall_s", "user_s", "kernel_s", "page_faults")}}), flush=True)


if __name__ == "__main__":
    main()

"""Products refreshed a few days at a time, as the lake sensor asks, after dozens of live
appends (across midnight, into a new day partition) equal a full rebuild of the same lake."""

from datetime import UTC, datetime

import dagster as dg
import orjson
import polars as pl
import pytest

from assets.days import run_tags
from assets.domains import PRODUCTS, product_key
from assets.snapshot.assets import Store
from assets.wallets.assets import RANKED
from assets.warehouse import Warehouse
from core.store import LocalStore
from edge.routes.wallets import newest_rows
from edge.routes.wallets import ranked_as_of as edge_ranked_as_of
from pipelines.definitions import defs
from publish.reader import latest_id, load_snapshot, snapshot_ids
from publish.wallets import POSITION_KEY, ROUND_KEY
from publish.writer import instant_text
from sources.lake import LakeWriter
from sources.simulator import SimulationConfig, live_market, simulate

# The history ends ten minutes before midnight; the live market then runs on past it.
CONFIG = SimulationConfig(chains=4, days=1, swaps=3_000, seed=11,
                          end=datetime(2026, 11, 19, 23, 50, tzinfo=UTC))
STEP_S, APPENDS, REFRESH_EVERY = 30, 36, 6
# The append a minute before midnight, whose refresh publishes too: the day turns after it.
BEFORE_TURN = 18
REL = 1e-9
# The first seconds of the history's two days and of the live market's new one: the spans of
# the days before the watermark's, and of the watermark day's first hour.
DAY_18, DAY_19, DAY_20 = (int(datetime(2026, 11, d, tzinfo=UTC).timestamp())
                          for d in (18, 19, 20))
# The day partitions alone, with the asset that pins the lake state they are made from and the
# products they read (the quotes' prices, the pairs' tokens).
LEGS = [product_key(name) for name in ("as_of", "quote_prices", "pair_tokens", "swap_legs",
                                        "pair_days", "holder_changes", "reserve_days",
                                        "wallet_ledger", "wallet_book_states", "token_marks")]
# A product of each of the two steps made a day at a time.
HOURLY = ("swap_legs", "wallet_ledger")
# Every product but the snapshot, which is where they are published, not what is computed.
PRODUCED = [product_key(name) for name, domain in PRODUCTS.items() if domain != "publish"]
PUBLISHED = [*PRODUCED, dg.AssetKey(["publish", "snapshot"])]
# The tables made a day at a time, whose unchanged days a publish keeps without making them.
SPANNED = ("trades", "wallet_trades")
# The spans of the closed days each holds: the pair trades keep a closed day's last hour
# apart, and the history's ten minutes of the 18th are in its last hour.
CLOSED = {"trades": {DAY_19 - 3600, DAY_19}, "wallet_trades": {DAY_18, DAY_19}}


def refresh(instance: dg.DagsterInstance, warehouse: Warehouse, days: list[str] | None,
            selection: list[dg.AssetKey] | None = None, job: str = "everything") -> None:
    """A run of `job` over `days` and the later ones (None: a job of no day partitions), of
    the assets `selection` names (all of the job's when None)."""
    ours = dg.Definitions(assets=defs.assets, asset_checks=defs.asset_checks, jobs=defs.jobs,
                          resources={"warehouse": warehouse,
                                     "store": Store(url=warehouse.root + "-store")})
    result = ours.resolve_job_def(job).execute_in_process(
        instance=instance, tags={} if days is None else run_tags(instance, days),
        asset_selection=selection)
    assert result.success


def ranked_as_of(warehouse: Warehouse) -> datetime:
    """The watermark the stored rankings rank as of."""
    found: datetime = warehouse.scan("wallet_rankings").select(pl.col("as_of").first()) \
        .collect().item()
    return found


def close(a: object, b: object) -> bool:
    """Equal, but for floats, which may differ by 1e-9 relative (sums in another order)."""
    if isinstance(a, float) and isinstance(b, float):
        return a == b or abs(a - b) <= REL * max(abs(a), abs(b)) or (a != a and b != b)
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(close(a[k], b[k]) for k in a)
    if isinstance(a, list | tuple) and isinstance(b, list | tuple):
        return len(a) == len(b) and all(close(x, y) for x, y in zip(a, b, strict=True))
    if isinstance(a, str) and isinstance(b, str) and a != b:
        # The wire's decimal strings ("17209.7904007745").
        try:
            return close(float(a), float(b))
        except ValueError:
            return False
    return a == b


def rows(frame: pl.DataFrame) -> list[tuple]:
    """A product's rows with its wire JSON decoded, in the order of its other columns that are
    not floats (a product's row order is its reader's to set: group-bys run in parallel)."""
    wire = [c for c, t in frame.schema.items()
            if t == pl.String and frame[c].drop_nulls().str.contains(r"^[\[{]").any()]
    exact = [c for c, t in frame.schema.items() if not t.is_float() and c not in wire
             and not t.is_nested()]
    ordered = frame.sort(exact, maintain_order=True) if exact else frame
    return ordered.with_columns(pl.col(c).map_elements(orjson.loads, return_dtype=pl.Object)
                                for c in wire).rows()


# A day's products are made in segments of hours, which a refresh and a rebuild cut
# differently: those holding a row per key and segment are compared as their readers take a
# day of them (the day's last marks; a key's books of the last segment touching it; a pair's
# first swap and last priced one; its first and last reserves; a holder's changes summed,
# those that net to nothing gone).
AS_READ = {
    "wallet_book_states": lambda day: day.group_by("chain_id", "position",
                                                   maintain_order=True).last(),
    "pair_days": lambda day: day.group_by("chain_id", "pair", maintain_order=True).agg(
        pl.col("first_swap_at").min(),
        *[pl.col(c).filter(pl.col("last_price_usd").is_not_null()).last()
          for c in ("last_side", "last_price_usd", "last_trade_at")]),
    "reserve_days": lambda day: day.group_by("chain_id", "pair", "earlier",
                                             maintain_order=True).agg(
        pl.col("^.*_first$").first(), pl.col("^.*_last$").last()),
    "holder_changes": lambda day: day.group_by("chain_id", "token", "holder").agg(
        pl.col("change").sum(), pl.col("minted").any()).filter(
        (pl.col("change") != 0) | pl.col("minted")),
}


def products(warehouse: Warehouse) -> dict[str, pl.DataFrame]:
    """Every product (a day-partitioned product's days each on its own, as read: `AS_READ`),
    by name and day; what a check keeps of the previous run (`season_boards_before`) is no
    product."""
    made = {}
    for name in sorted(PRODUCTS):
        if not warehouse.exists(name):
            continue
        for day, files in sorted(warehouse.files(name).items(), key=lambda kv: kv[0] or ""):
            if name == "token_marks":
                files = files[-1:]
            frame = warehouse.read(files).collect()
            if day is not None and name in AS_READ:
                frame = AS_READ[name](frame)
            made[name if day is None else f"{name}/{day}"] = frame
    return made


@pytest.mark.stack(seconds=113)
def test_products_refreshed_a_few_days_at_a_time_equal_a_full_rebuild(tmp_path):
    lake = LakeWriter(tmp_path / "lake")
    simulate(CONFIG, lake)
    incremental = Warehouse(lake_root=lake.root, root=str(tmp_path / "incremental"))
    with dg.instance_for_test() as instance:
        refresh(instance, incremental, lake.days("swaps"), PRODUCED)
        # The watermark's day (23:50) in two segments: to its hour, and from it.
        first_hours = {name: incremental.files(name)["2026-11-19"] for name in HOURLY}
        assert all(incremental.hours(name, "2026-11-19") == [0, 23] for name in HOURLY)
        market = live_market.start(lake)
        version = lake.version("swaps")
        refreshed: list[list[str]] = []
        for n in range(1, APPENDS + 1):
            live_market.commit(lake, market, CONFIG.end.timestamp() + n * STEP_S)
            if n % REFRESH_EVERY:
                continue
            days, version = lake.changed_days("swaps", version), lake.version("swaps")
            refreshed.append(days)
            # The day partitions alone between whole refreshes; in the last two (the last
            # changes the new day only), the lake sensor's refresh with its publish, then the
            # rankings' own run, as their cadence makes them.
            if n < APPENDS - REFRESH_EVERY and n != BEFORE_TURN:
                refresh(instance, incremental, days, LEGS)
                continue
            before = {name: incremental.version(name) for name in RANKED}
            ranked_at = ranked_as_of(incremental)
            refresh(instance, incremental, days, job="refresh")
            # The refresh leaves the ranked products as their last ranking stored them, and its
            # snapshot says so: its ranking lists and the edge's answers from them are as of
            # that ranking's watermark, not the snapshot's.
            assert {name: incremental.version(name) for name in RANKED} == before
            store = LocalStore(incremental.root + "-store")
            published = load_snapshot(store, latest_id(store) or "")
            assert published.manifest.as_of != instant_text(ranked_at)
            assert edge_ranked_as_of(published) == instant_text(ranked_at)
            lists = [meta["index"] for where, meta in published.manifest.lists.items()
                     if where.startswith("wallets/")]
            assert lists and {orjson.loads(store.get(
                f"snapshots/{published.snapshot_id}/{index}").body)["ranked_as_of"]
                for index in lists} == {instant_text(ranked_at)}
            # Their own run ranks every wallet as of the refresh's watermark.
            refresh(instance, incremental, None, job="wallet_rankings_refresh")
            assert {name: incremental.version(name) for name in RANKED} == {
                name: version + 1 for name, version in before.items()}
            assert incremental.scan("wallet_rankings").select("as_of").unique().collect()[
                "as_of"].to_list() == [incremental.clock()["as_of"]] != [ranked_at]
        assert instance.get_dynamic_partitions("days") == ["2026-11-18", "2026-11-19",
                                                           "2026-11-20"]
    # Only the days that changed were made again; the new day among them once it came.
    assert refreshed[0] == ["2026-11-19"] and refreshed[-1] == ["2026-11-20"]
    assert all(days in (["2026-11-19"], ["2026-11-19", "2026-11-20"], ["2026-11-20"])
               for days in refreshed)
    full = Warehouse(lake_root=lake.root, root=str(tmp_path / "full"))
    with dg.instance_for_test() as instance:
        refresh(instance, full, lake.days("swaps"), PUBLISHED)
    # Each refresh made the 19th again from 23:00 only: its first 23 hours are the files the
    # first run wrote. The rebuild cut each closed day at its last hour too.
    assert {name: incremental.files(name)["2026-11-19"][0] for name in HOURLY} == {
        name: files[0] for name, files in first_hours.items()}
    assert all(full.hours(name, day) == [0, 23] for name in HOURLY
               for day in ("2026-11-18", "2026-11-19"))
    made, rebuilt = products(incremental), products(full)
    assert made.keys() == rebuilt.keys()
    assert {f"{name}/{day}" for name in ("swap_legs", "holder_changes", "reserve_days",
                                         "wallet_ledger", "wallet_book_states", "token_marks")
            for day in ("2026-11-18", "2026-11-20")} <= made.keys()
    for name, frame in made.items():
        assert frame.height == rebuilt[name].height, name
        assert frame.schema == rebuilt[name].schema, name
        left, right = (rows(f) for f in (frame, rebuilt[name]))
        for a, b in zip(left, right, strict=True):
            assert close(a, b), (name, {c: (x, y) for c, x, y in zip(frame.columns, a, b,
                                                                      strict=True)
                                        if not close(x, y)})
    # The last publish kept the days the last refresh did not change, without making them, and
    # serves the same trades as a publish of the full rebuild.
    store = LocalStore(incremental.root + "-store")
    turning, before, last = snapshot_ids(store)
    # Across the day's turn (published at 23:59, then at 00:05 after the 19th's partitions were
    # made again whole), the 19th's first 23 hours of trades kept their name, so their part.
    day_19 = [[p for p in load_snapshot(store, sid).manifest.tables["trades"]["parts"]
               if p["span"] == DAY_19] for sid in (turning, before)]
    assert day_19[0] and day_19[0] == day_19[1]
    published, previous = (load_snapshot(store, sid) for sid in (last, before))
    rebuilt_store = LocalStore(full.root + "-store")
    rebuilt_snapshot = load_snapshot(rebuilt_store, latest_id(rebuilt_store) or "")
    for table in SPANNED:
        kept = [p for p in published.manifest.tables[table]["parts"]
                if p in previous.manifest.tables[table]["parts"]]
        assert {p["span"] for p in kept} >= CLOSED[table], table
        assert all(p["span"] != DAY_20 for p in kept), table
        whole, mine = rebuilt_snapshot.tables[table], published.tables[table]
        assert mine.height == whole.height and mine.schema == whole.schema, table
        for a, b in zip(rows(mine), rows(whole), strict=True):
            assert close(a, b), (table, a, b)
    # The positions and rounds in layers: each key's last part's row, after layers made at the
    # day's turn and kept since, is the full rebuild's.
    for table, key in (("wallet_positions", POSITION_KEY), ("wallet_rounds", ROUND_KEY)):
        mine, whole = (newest_rows(snapshot.tables[table], key).sort(key)
                       for snapshot in (published, rebuilt_snapshot))
        assert mine.height == whole.height and mine.schema == whole.schema, table
        for a, b in zip(rows(mine), rows(whole), strict=True):
            assert close(a, b), (table, a, b)

"""Wallet products end to end on the simulated lake, over HTTP: profiles, trades, positions,
the chart, rankings, labels, the overview and a token's traders, checked against the raw lake
or against each other's independent sums."""

import dataclasses
import shutil

import dagster as dg
import orjson
import polars as pl
import pytest

import assets.wallets.assets
import assets.wallets.books
from assets.checks import SCHEMA_CHECK
from assets.tables import fingerprints
from assets.wallets.assets import wallet_books
from assets.wallets.days import LEDGER_INPUTS
from assets.warehouse import Warehouse
from checks.products import rules_of
from checks.schemas.wallets import LEDGER_ORDER
from core.store import LocalStore
from core.vocabulary import COHORTS, EARLY_BUYERS, SNIPE_BLOCKS, TOP_HOLDERS
from figures.ledger import account_onto, latest_books, wallet_events
from pipelines.definitions import defs
from publish.cursor import Cursor, default_signer
from publish.reader import latest_id, load_snapshot
from publish.wallets import POSITION_KEY, ROUND_KEY
from tests.assets.test_wallets import account
from tests.e2e.test_market import walk

pytestmark = pytest.mark.cost(seconds=36)


@pytest.fixture(scope="module")
def busiest(lake) -> str:
    """The ethereum wallet with the most swaps that is neither a bot nor a round-tripper."""
    swaps = lake.scan("swaps").filter(pl.col("chain_id") == 1).collect()
    return swaps.group_by("maker").len().sort(["len", "maker"], descending=[True, False])[
        "maker"].to_list()


def _first_trader(api, wallets: list[str]) -> dict:
    for wallet in wallets:
        profile = api.get(f"/chains/ethereum/wallets/{wallet}").json()
        if not profile["rebuild_skipped"]:
            return profile
    raise AssertionError("no wallet with a rebuilt record")


def test_profile_trades_count_the_lake_swaps_and_transfers_carry_no_price(api, lake,
                                                                           busiest) -> None:
    profile = _first_trader(api, busiest)
    wallet = profile["address"]
    made = lake.scan("swaps").filter(pl.col("chain_id") == 1, pl.col("maker") == wallet) \
        .collect()
    swaps = made.height
    trades = walk(api, f"/chains/ethereum/wallets/{wallet}/trades")
    assert sum(t["side"] in ("buy", "sell") for t in trades) == swaps
    # Each swap's hash is the lake's swap at its block and log (the trade's id leads with it).
    assert sorted(t["trade_uid"].rsplit(":", 2)[0] for t in trades
                  if t["side"] in ("buy", "sell")) == sorted(made["tx_hash"])
    for moved in (t for t in trades if t["side"].startswith("transfer")):
        assert moved["price_usd"] is None and moved["notional_usd"] is None
    stamps = [t["timestamp"] for t in trades]
    assert stamps == sorted(stamps, reverse=True)
    lifetime = next(m for m in profile["metrics"] if m["window"] == "all")
    assert lifetime["trades"] == swaps
    assert [m["window"] for m in profile["metrics"]] == ["1d", "7d", "30d", "1y", "all"]


def test_positions_add_up_to_the_lifetime_record(api, busiest) -> None:
    profile = _first_trader(api, busiest)
    wallet = profile["address"]
    positions = api.get(f"/chains/ethereum/wallets/{wallet}/positions").json()["items"]
    lifetime = next(m for m in profile["metrics"] if m["window"] == "all")
    assert sum(p["realized_usd"] for p in positions) == pytest.approx(
        lifetime["realized_pnl_usd"], abs=0.01)
    assert sum(p["unrealized_usd"] for p in positions) == pytest.approx(
        lifetime["unrealized_pnl_usd"], abs=0.01)
    assert len(positions) == lifetime["tokens_traded"]
    for p in positions:
        assert p["total_pnl_usd"] == pytest.approx(p["realized_usd"] + p["unrealized_usd"])
        assert "token_score" in p and "token_status" in p and "basis_is_incomplete" in p


def test_rounds_served_from_every_day_they_closed_in_add_up_to_the_positions(api, home,
                                                                            busiest) -> None:
    store = home / "store" / "snapshots"
    sid = orjson.loads((store / "LATEST").read_bytes())["snapshot_id"]
    parts = orjson.loads((store / sid / "manifest.json").read_bytes())[
        "tables"]["wallet_rounds"]["parts"]
    assert len(parts) >= 2
    checked = 0
    for wallet in busiest[:200]:
        rounds = api.get(f"/chains/ethereum/wallets/{wallet}/rounds").json()["items"]
        closes = {r["closed_at"][:10] for r in rounds if r["closed_at"] is not None}
        if len(closes) < 2:
            continue
        checked += 1
        opened = [r["opened_at"] for r in rounds]
        assert opened == sorted(opened, reverse=True)
        positions = api.get(f"/chains/ethereum/wallets/{wallet}/positions").json()["items"]
        for p in positions:
            mine = [r for r in rounds if r["token_address"] == p["token_address"]]
            # Every unit in opens or adds to a round; a sell while none is held is in none
            # (and a round of transfers alone is no round shown).
            assert 0 < len(mine) <= p["rounds"]
            assert sum(r["buys"] for r in mine) == p["buys"]
            assert sum(r["sells"] for r in mine) <= p["sells"]
            assert sum(r["realized_usd"] for r in mine) == pytest.approx(p["realized_usd"],
                                                                         abs=1e-6)
            assert len({r["round"] for r in mine}) == len(mine)
    assert checked, "no wallet with rounds closed on two days"


def test_the_published_rounds_and_positions_are_the_books_folded_in_the_run(home) -> None:
    # The snapshot folds them from the ledger (closed rounds by the span they closed in, open
    # rounds and positions by layer); the run's books fold the whole ledger at once. The same
    # watermark: each round and position, as the edge reads it (its last part's row), equal.
    store = LocalStore(home / "store")
    snapshot = load_snapshot(store, latest_id(store) or "")
    warehouse = Warehouse(root=str(home / "warehouse"), lake_root=str(home / "lake"))
    for name, key in (("wallet_rounds", ROUND_KEY), ("wallet_positions", POSITION_KEY)):
        parts = [part.frame for part in snapshot.parts[name]]
        assert len(parts) >= 3, name
        served = pl.concat(parts).unique(subset=list(key), keep="last", maintain_order=True)
        made = warehouse.scan(name).collect()
        columns = [c for c in served.columns if c in made.columns]
        assert len(columns) > len(key) + 10, name
        assert served.select(columns).sort(key).equals(made.select(columns).sort(key)), name


def test_chart_buckets_and_cumulative_roi(api, busiest) -> None:
    wallet = _first_trader(api, busiest)["address"]
    week = api.get(f"/chains/ethereum/wallets/{wallet}/chart", params={"window": "7d"}).json()
    assert len(week["points"]) == 7 * 24
    month = api.get(f"/chains/ethereum/wallets/{wallet}/chart", params={"window": "30d"}).json()
    assert len(month["points"]) == 30
    realized = sum(p["realized_usd"] for p in month["points"])
    cost = sum(p["cost_usd"] for p in month["points"])
    last = month["points"][-1]
    assert last["cumulative_usd"] == pytest.approx(realized)
    assert last["cumulative_roi"] == pytest.approx(realized / cost if cost else 0.0)


def test_known_mev_bots_are_recognised_from_behaviour_and_skipped(api, lake) -> None:
    bots = lake.scan("address_labels").filter(pl.col("chain_id") == 1, pl.col("kind") == 3) \
        .collect()["address"].to_list()
    assert bots
    for bot in bots:
        profile = api.get(f"/chains/ethereum/wallets/{bot}").json()
        assert profile["type"] == "bot" and profile["rebuild_skipped"]
        assert profile["rebuild_skip_reason"].startswith("bot:")
        assert all(m["total_pnl_usd"] == 0 and m["trades"] == 0 for m in profile["metrics"])
        assert api.get(f"/chains/ethereum/wallets/{bot}/positions").json()["items"] == []


def test_rankings_filters_and_the_published_head_agree(api, home) -> None:
    first = api.get("/wallets", params={"chain": "ethereum", "limit": 50}).json()
    assert "prev_cursor" not in first
    totals = [w["metrics"]["total_pnl_usd"] for w in first["items"]]
    assert totals == sorted(totals, reverse=True)
    humans = walk(api, "/wallets", chain="ethereum", exclude_bots="true")
    assert humans and all(w["type"] not in ("bot", "market_maker") for w in humans)
    by_win = walk(api, "/wallets", chain="ethereum", sort="win_rate")
    assert all(w["metrics"]["rated_positions"] >= 5 for w in by_win)
    eligible = walk(api, "/wallets", chain="ethereum", only_copy_eligible="true",
                    min_trades="3")
    assert all(w["copy_eligible"] and w["metrics"]["trades"] >= 3 for w in eligible)
    big = walk(api, "/wallets", chain="ethereum", tiers="whale, shark")
    assert big and all(w["tier"] in ("whale", "shark") for w in big)
    unknown = api.get("/wallets", params={"chain": "ethereum", "tiers": "whale,orca"})
    assert unknown.status_code == 400
    assert unknown.json()["code"] == "invalid_param" and unknown.json()["param"] == "tiers"
    assert unknown.json()["detail"] == "tiers must be one of whale, shark, dolphin, fish, shrimp"
    store = home / "store" / "snapshots"
    sid = orjson.loads((store / "LATEST").read_bytes())["snapshot_id"]
    index = orjson.loads((store / sid / "lists/wallets/ethereum/30d/total_pnl/index.json")
                         .read_bytes())
    published = orjson.loads((home / "store" / index["pages"][0]["object"]).read_bytes())
    assert [w["address"] for w in published["items"]] == [w["address"] for w in first["items"]]


def test_labels_batch_leaves_out_addresses_without_labels(api, lake, busiest) -> None:
    known = lake.scan("address_labels").filter(pl.col("chain_id") == 1, pl.col("kind") == 1) \
        .collect()["address"][0]
    nobody = "0x" + "ab" * 20
    answer = api.post("/wallets/labels/batch", json={
        "chain": "ethereum", "addresses": [known.upper().replace("0X", "0x"), nobody]}).json()
    assert [i["address"] for i in answer["items"]] == [known]
    assert answer["items"][0]["labels"][0]["kind"] == 1


def test_overview_serves_a_stopped_chain_marked_stale_never_unavailable(api, lake) -> None:
    # Sui's indexer stopped: its data is still readable, so its wallets are served, marked
    # stale; unavailable means the data could not be read at all.
    chains = {c["slug"]: c for c in api.get("/chains", params={"limit": 100}).json()["items"]}
    assert chains["sui"]["syncing"] is False
    wallet = api.get("/wallets", params={"chain": "sui", "limit": 1}).json()["items"][0]["address"]
    body = api.get(f"/wallets/{wallet}/overview", params={"chains": "ethereum,sui"}).json()
    assert body["unavailable_chains"] == []
    assert [c["slug"] for c in body["stale_chains"]] == ["sui"]
    assert [p["chain"]["slug"] for p in body["profiles"]] == ["sui"]
    assert [(c["chain"]["slug"], c["stale"]) for c in body["per_chain"]] == [("sui", True)]


def test_token_traders_are_the_wallets_that_swapped_it(api, lake) -> None:
    tradable = lake.scan("tokens").filter(pl.col("chain_id") == 1, ~pl.col("is_quote")) \
        .collect()["address"]
    pairs = lake.scan("pairs").filter(pl.col("chain_id") == 1).collect()
    swaps = lake.scan("swaps").filter(pl.col("chain_id") == 1).collect().join(
        pairs.select(pair="address", base=pl.when(pl.col("token0").is_in(tradable))
                     .then("token0").otherwise("token1")), on="pair")
    address = swaps.group_by("base").len().sort(["len", "base"], descending=[True, False])[
        "base"][0]
    traders = walk(api, f"/chains/ethereum/tokens/{address}/traders")
    realized = [t["realized_pnl_usd"] for t in traders]
    assert realized == sorted(realized, reverse=True)
    makers = swaps.filter(pl.col("base") == address)["maker"].unique()
    assert {t["address"] for t in traders} == set(makers.to_list())


BOOKS = ("wallet_positions", "wallet_rounds", "wallet_traits", "wallet_windows")
# What the wallet days make: a lake day's ledger, and the books and marks at its end.
WALLET_DAYS = ("wallet_ledger", "wallet_book_states", "token_marks")


@pytest.mark.parametrize("name", BOOKS)
def test_each_book_made_alone_equals_the_one_made_with_the_others(home, tmp_path, name):
    # The run made the folds together from the stored ledger; each is made again alone, into
    # a copy of the warehouse without it.
    made = Warehouse(root=str(home / "warehouse"), lake_root=str(home / "lake"))
    shutil.copytree(made.root, tmp_path / "warehouse")
    warehouse = Warehouse(root=str(tmp_path / "warehouse"), lake_root=str(home / "lake"))
    # Positions do not depend on the watermark: made alone, they must not need it.
    for product in (name, *(["as_of"] if name == "wallet_positions" else [])):
        shutil.rmtree(warehouse.path(product))
    result = dg.materialize([wallet_books], selection=[dg.AssetKey(["wallets", name])],
                            resources={"warehouse": warehouse})
    assert result.success
    assert [m.asset_key.path[-1] for m in result.get_asset_materialization_events()] == [name]
    alone = warehouse.scan(name).collect()
    assert alone.height > 0
    assert alone.equals(made.scan(name).collect())


def test_books_folded_in_pieces_of_a_chains_wallets_equal_those_of_whole_chains(
        home, tmp_path, monkeypatch):
    # The run folded each chain whole. With pieces of a third of the smallest chain's rows,
    # every chain is folded in three or more pieces of its wallets, its traits from the whole
    # chain, each piece in a worker process: every book must hold the same rows.
    made = Warehouse(root=str(home / "warehouse"), lake_root=str(home / "lake"))
    shutil.copytree(made.root, tmp_path / "warehouse")
    warehouse = Warehouse(root=str(tmp_path / "warehouse"), lake_root=str(home / "lake"))
    rows = made.scan("wallet_ledger").group_by("chain_id").len().collect()["len"]
    monkeypatch.setattr(assets.wallets.books, "PIECE_ROWS", rows.min() // 3)
    sent = []
    to_worker = assets.wallets.books.BooksRun._start_in_worker

    def counted(run, piece, folds):
        sent.append(piece)
        return to_worker(run, piece, folds)

    monkeypatch.setattr(assets.wallets.books.BooksRun, "_start_in_worker", counted)
    result = dg.materialize([wallet_books], selection=[dg.AssetKey(["wallets", n]) for n in BOOKS],
                            resources={"warehouse": warehouse})
    assert result.success
    # Each chain's traits piece, then at least three pieces of its wallets.
    assert sorted({p.chain for p in sent if p.piece is None}) == sorted(
        made.scan("wallet_ledger").select(pl.col("chain_id").unique()).collect()["chain_id"])
    assert all(p.pieces >= 3 for p in sent)
    assert len(sent) == sum(p.pieces + 1 for p in sent if p.piece is None)
    for name in BOOKS:
        pieces, chains = warehouse.scan(name).collect(), made.scan(name).collect()
        assert pieces.height == chains.height > 0
        assert pieces.sort(pieces.columns).equals(chains.sort(chains.columns)), name


def test_a_ledger_failing_partway_leaves_every_book_as_it_was(home, tmp_path, monkeypatch):
    # The first chain is read and folded; reading the second fails. No fold product may be
    # written from the chains that came before the failure.
    shutil.copytree(home / "warehouse", tmp_path / "warehouse")
    warehouse = Warehouse(root=str(tmp_path / "warehouse"), lake_root=str(home / "lake"))

    def books() -> dict[str, tuple[int, dict]]:
        return {name: (warehouse.version(name), warehouse.files(name)) for name in BOOKS}

    def data_files() -> list[str]:
        return sorted(p.relative_to(tmp_path).as_posix()
                      for p in (tmp_path / "warehouse").rglob("*") if "_delta_log" not in p.parts)

    before, present = books(), data_files()
    whole, read = assets.wallets.books.slots, []

    def failing(ledger):
        read.append(ledger["chain_id"][0])
        if len(read) == 2:
            raise OSError("the warehouse went away")
        return whole(ledger)

    monkeypatch.setattr(assets.wallets.books, "slots", failing)
    with pytest.raises(OSError, match="the warehouse went away"):
        dg.materialize([wallet_books], selection=[dg.AssetKey(["wallets", n]) for n in BOOKS],
                       resources={"warehouse": warehouse})
    assert len(read) == 2
    assert books() == before
    assert data_files() == present


def test_a_piece_failing_in_its_worker_leaves_every_book_as_it_was(home, tmp_path, monkeypatch):
    # Every chain in pieces, each folded in a worker process; the second piece names a version
    # of the ledger that does not exist, so its worker fails: no book may be written.
    shutil.copytree(home / "warehouse", tmp_path / "warehouse")
    warehouse = Warehouse(root=str(tmp_path / "warehouse"), lake_root=str(home / "lake"))
    rows = warehouse.scan("wallet_ledger").group_by("chain_id").len().collect()["len"]
    monkeypatch.setattr(assets.wallets.books, "PIECE_ROWS", rows.min() // 3)
    before = {name: (warehouse.version(name), warehouse.files(name)) for name in BOOKS}
    to_worker, sent = assets.wallets.books.BooksRun._start_in_worker, []

    def broken(run, piece, folds):
        sent.append(piece)
        if len(sent) == 2:
            piece = dataclasses.replace(piece, version=piece.version + 1000)
        return to_worker(run, piece, folds)

    monkeypatch.setattr(assets.wallets.books.BooksRun, "_start_in_worker", broken)
    with pytest.raises(Exception, match="version"):
        dg.materialize([wallet_books], selection=[dg.AssetKey(["wallets", n]) for n in BOOKS],
                       resources={"warehouse": warehouse})
    assert {name: (warehouse.version(name), warehouse.files(name)) for name in BOOKS} == before


def _in_chain_order(ledger: pl.DataFrame) -> pl.DataFrame:
    return ledger.sort(*LEDGER_ORDER)


def test_the_ledger_made_a_day_at_a_time_is_the_whole_week_accounted_at_once(home) -> None:
    # Each day (the watermark's in two segments of hours) was accounted from the books and
    # marks the segment before left; the week's events accounted at once, from empty books,
    # must give every row the same books, marks and fees (modelled per chain and hour), and
    # leave every position's books as the last day's states hold them.
    warehouse = Warehouse(root=str(home / "warehouse"), lake_root=str(home / "lake"))
    days = warehouse.lake().days("swaps")
    assert len(days) > 1
    frames = warehouse.frames(LEDGER_INPUTS)
    kept = _in_chain_order(fingerprints(warehouse.scan("wallet_ledger").collect(), "position"))
    assert kept["chain_id"].n_unique() > 1
    events = wallet_events(frames, warehouse.clock()["as_of"])
    whole, after = account_onto(events, None)
    assert warehouse.hours("wallet_ledger", days[-1]) == [0, warehouse.clock()["as_of"].hour]
    assert _in_chain_order(whole.drop("slot")).equals(kept)
    # The last day's closing books are those of the positions it touched only.
    last = warehouse.product_days("wallet_book_states", [days[-1]]).collect()
    assert 0 < last.height < after.height
    states = fingerprints(latest_books(warehouse.product_days("wallet_book_states", days)),
                          "position")
    assert states.sort("chain_id", "position").equals(after.sort("chain_id", "position"))
    # A token's mark at the end is its last priced swap's price in the week.
    last = (whole.filter(pl.col("price_usd").is_not_null()).group_by("chain_id", "token")
            .agg(mark_usd=pl.col("price_usd").last()).sort("chain_id", "token"))
    marks = warehouse.files("token_marks")[days[-1]]
    assert warehouse.read(marks[-1:]).collect().equals(last)


def test_the_stored_ledger_marks_what_has_no_price_and_accounts_again_to_the_same_books(
        home) -> None:
    warehouse = Warehouse(root=str(home / "warehouse"), lake_root=str(home / "lake"))
    kept = warehouse.scan("wallet_ledger").collect()
    # A priced swap is accounted at its notional and keeps no mark; movements and unpriced
    # swaps are charged theirs.
    priced = pl.col("notional_usd").is_not_null()
    assert kept.filter(priced)["mark_usd"].null_count() == kept.filter(priced).height
    assert kept.filter(pl.col("side") == "transfer_in")["mark_usd"].is_not_null().any()
    # An unpriced swap has a mark exactly when its token had a priced swap at or before it.
    first_priced = kept.filter(priced).group_by("chain_id", "token").agg(since=pl.col("ts").min())
    unpriced = kept.filter(~priced, pl.col("side").is_in(["buy", "sell"])).join(
        first_priced, on=["chain_id", "token"], how="left")
    assert unpriced.height > 0
    assert unpriced["mark_usd"].is_not_null().to_list() == (
        unpriced["since"] <= unpriced["ts"]).fill_null(False).to_list()
    again = account(kept).drop("slot")
    assert again.equals(fingerprints(kept, "position"))


def _check_results(result) -> dict[str, dict]:
    """Each book's schema check: passed, and how many failures it counted."""
    return {e.asset_key.path[-1]: {"passed": e.passed,
                                   "failures": e.metadata["failure_count"].value}
            for e in result.get_asset_check_evaluations()}


def test_a_rule_broken_on_one_day_fails_its_ledger_and_blocks_what_reads_it(
        home, tmp_path, monkeypatch):
    # One row of the last day's ledger claims a modelled fee with no fee: only the ledger's
    # rule estimated_fees_exist sees it, in the check of that day.
    shutil.copytree(home / "warehouse", tmp_path / "warehouse")
    whole = assets.wallets.assets.account_onto

    def broken(*args):
        ledger, closing = whole(*args)
        first = pl.int_range(pl.len()) == 0
        return (ledger.with_columns(fee_is_estimated=pl.when(first).then(True)
                                    .otherwise("fee_is_estimated"),
                                    fee_usd=pl.when(first).then(None).otherwise("fee_usd")),
                closing)

    monkeypatch.setattr(assets.wallets.assets, "account_onto", broken)
    warehouse = Warehouse(root=str(tmp_path / "warehouse"), lake_root=str(home / "lake"))
    day = warehouse.lake().days("swaps")[-1]
    profiles = warehouse.version("wallet_profiles"), warehouse.files("wallet_profiles")
    books = {name: warehouse.version(name) for name in BOOKS}
    checks = [c for c in defs.asset_checks
              if c.check_keys & {dg.AssetCheckKey(dg.AssetKey(["wallets", n]), SCHEMA_CHECK)
                                 for n in WALLET_DAYS}]
    with dg.instance_for_test() as instance:
        instance.add_dynamic_partitions("days", warehouse.lake().days("swaps"))
        result = dg.materialize(
            [assets.wallets.assets.wallet_days, *checks, wallet_books,
             assets.wallets.assets.wallet_funding, assets.wallets.assets.wallet_profiles],
            selection=[dg.AssetKey(["wallets", n]) for n in (*WALLET_DAYS, *BOOKS,
                                                              "wallet_profiles")],
            partition_key=day, instance=instance, resources={"warehouse": warehouse},
            raise_on_error=False)
    assert not result.success
    assert _check_results(result) == {
        "wallet_ledger": {"passed": False, "failures": 1},
        **{name: {"passed": True, "failures": 0} for name in WALLET_DAYS[1:]}}
    # The ledger's check blocks every product downstream of it: the books and the profiles
    # were not made.
    made = {m.asset_key.path[-1] for m in result.get_asset_materialization_events()}
    assert made == set(WALLET_DAYS)
    assert {name: warehouse.version(name) for name in BOOKS} == books
    assert (warehouse.version("wallet_profiles"), warehouse.files("wallet_profiles")) == profiles


def test_a_product_checked_in_its_own_step_blocks_what_reads_it_when_it_fails(
        home, tmp_path, monkeypatch):
    # Two profiles of the first chain in cluster -1: the bound ge=0 of the profile's cluster
    # fails twice, in the profiles' own step; the rankings, which read them, are not made.
    shutil.copytree(home / "warehouse", tmp_path / "warehouse")
    whole, chains = assets.wallets.assets.assemble_profiles, []

    def broken(parts):
        profiles = whole(parts)
        chains.append(profiles["chain_id"][0])
        if len(chains) > 1:
            return profiles
        return profiles.with_columns(cluster_id=pl.when(pl.int_range(pl.len()) < 2)
                                     .then(-1).otherwise("cluster_id"))

    monkeypatch.setattr(assets.wallets.assets, "assemble_profiles", broken)
    warehouse = Warehouse(root=str(tmp_path / "warehouse"), lake_root=str(home / "lake"))
    rankings = warehouse.version("wallet_rankings")
    result = dg.materialize(
        [assets.wallets.assets.wallet_profiles, assets.wallets.assets.wallet_rankings],
        resources={"warehouse": warehouse}, raise_on_error=False)
    assert not result.success
    # Both checks ran in the step: the schema's failed, the rule across products held.
    assert {e.check_name: (e.passed, e.metadata["failure_count"].value)
            for e in result.get_asset_check_evaluations()} == {
        "schema_and_meaning_rules": (False, 2), "positions_add_up": (True, 0)}
    assert [m.asset_key.path[-1] for m in result.get_asset_materialization_events()] == [
        "wallet_profiles"]
    assert warehouse.version("wallet_rankings") == rankings
    # No pass is recorded for the stored profiles: a publish would check them and refuse.
    assert warehouse.unchecked("wallet_profiles", rules_of("wallet_profiles")) == \
        warehouse.files("wallet_profiles")[None]


def test_a_products_check_run_alone_checks_the_stored_product(home, tmp_path) -> None:
    shutil.copytree(home / "warehouse", tmp_path / "warehouse")
    warehouse = Warehouse(root=str(tmp_path / "warehouse"), lake_root=str(home / "lake"))
    profiles = warehouse.scan("wallet_profiles").collect()
    # Three profiles in cluster -1, written outside a run: the bound ge=0 fails three times.
    warehouse.write("wallet_profiles", profiles.with_columns(
        cluster_id=pl.when(pl.int_range(pl.len()) < 3).then(-1).otherwise("cluster_id")))
    version = warehouse.version("wallet_profiles")
    result = dg.materialize([assets.wallets.assets.wallet_profiles],
                            selection=dg.AssetSelection.checks(dg.AssetCheckKey(
                                dg.AssetKey(["wallets", "wallet_profiles"]),
                                "schema_and_meaning_rules")),
                            resources={"warehouse": warehouse}, raise_on_error=False)
    assert _check_results(result) == {"wallet_profiles": {"passed": False, "failures": 3}}
    assert result.get_asset_materialization_events() == []
    assert warehouse.version("wallet_profiles") == version


def test_a_product_made_without_its_check_reports_no_check(home, tmp_path) -> None:
    shutil.copytree(home / "warehouse", tmp_path / "warehouse")
    warehouse = Warehouse(root=str(tmp_path / "warehouse"), lake_root=str(home / "lake"))
    version = warehouse.version("wallet_rankings")
    result = dg.materialize([assets.wallets.assets.wallet_rankings],
                            selection=dg.AssetSelection.assets(
                                dg.AssetKey(["wallets", "wallet_rankings"])).without_checks(),
                            resources={"warehouse": warehouse})
    assert result.get_asset_check_evaluations() == []
    assert [m.asset_key.path[-1] for m in result.get_asset_materialization_events()] == [
        "wallet_rankings"]
    assert warehouse.version("wallet_rankings") == version + 1


def test_a_book_check_run_alone_checks_the_stored_product(home, tmp_path):
    shutil.copytree(home / "warehouse", tmp_path / "warehouse")
    warehouse = Warehouse(root=str(tmp_path / "warehouse"), lake_root=str(home / "lake"))
    rounds = warehouse.scan("wallet_rounds").collect()
    # Two rounds held a negative amount: the bound held >= 0 fails twice.
    warehouse.write("wallet_rounds",
                    pl.concat([rounds.head(2).with_columns(held=pl.lit(-1.0)), rounds.slice(2)]))
    result = dg.materialize([wallet_books], selection=dg.AssetSelection.checks(*[
        dg.AssetCheckKey(dg.AssetKey(["wallets", n]), "schema_and_meaning_rules")
        for n in ("wallet_rounds", "wallet_traits")]),
        resources={"warehouse": warehouse}, raise_on_error=False)
    assert _check_results(result) == {"wallet_rounds": {"passed": False, "failures": 2},
                                      "wallet_traits": {"passed": True, "failures": 0}}
    assert result.get_asset_materialization_events() == []


def test_a_wallet_trades_cursor_of_another_shape_is_refused_not_failed(api, home, busiest,
                                                                        monkeypatch) -> None:
    wallet = _first_trader(api, busiest)["address"]
    first = api.get(f"/chains/ethereum/wallets/{wallet}/trades", params={"limit": 2}).json()
    assert first["next_cursor"]
    monkeypatch.setenv("CHAINTAPE_HOME", str(home))
    signer = default_signer()
    issued = signer.decode(first["next_cursor"])
    # The same list and query, paged by offset as it once was: no place to go on from.
    by_offset = signer.encode(Cursor(issued.snapshot_id, issued.list_name, 2, issued.scope))
    answer = api.get(f"/chains/ethereum/wallets/{wallet}/trades",
                     params={"limit": 2, "cursor": by_offset})
    assert answer.status_code == 400 and answer.json()["param"] == "cursor"


def _lake_buys(lake, chain_id: int) -> pl.DataFrame:
    """Every buy of a tradable token on a chain, read from the lake's swaps in chain order:
    the pool paid its base token out to the maker. With the pool's creation block."""
    tradable = lake.scan("tokens").filter(pl.col("chain_id") == chain_id, ~pl.col("is_quote")) \
        .collect()["address"]
    pairs = lake.scan("pairs").filter(pl.col("chain_id") == chain_id).collect().with_columns(
        base_is_0=pl.col("token0").is_in(tradable)).with_columns(
        base=pl.when("base_is_0").then("token0").otherwise("token1"))
    launch = pairs.group_by("base").agg(launch=pl.col("created_block").min())
    return (lake.scan("swaps").filter(pl.col("chain_id") == chain_id).collect()
            .join(pairs.select("base", "base_is_0", pair="address"), on="pair")
            .filter(pl.when("base_is_0").then(pl.col("amount0_out") > 0)
                    .otherwise(pl.col("amount1_out") > 0))
            .join(launch, on="base").sort("block_number", "log_index"))


def test_token_cohorts_are_what_the_lake_and_the_other_lists_say(api, lake) -> None:
    # Each buyer's first buy of each token, from the raw swaps.
    first = _lake_buys(lake, 1).unique(["base", "maker"], keep="first", maintain_order=True)
    snipers = first.filter(pl.col("block_number") < pl.col("launch") + SNIPE_BLOCKS)
    counted = snipers.group_by("base").len().sort(["len", "base"], descending=[True, False])
    address = counted["base"][0]
    path = f"/chains/ethereum/tokens/{address}"
    answer = api.get(path + "/cohorts")
    assert answer.status_code == 200, answer.text
    cohorts = {c["cohort"]: c for c in answer.json()["items"]}
    assert list(cohorts) == list(COHORTS)

    def members(cohort: str) -> list[dict]:
        return walk(api, path + "/traders", cohort=cohort)

    expected = set(snipers.filter(pl.col("base") == address)["maker"])
    assert cohorts["sniper"]["wallets"] == len(expected) == counted["len"][0] > 0
    assert {t["address"] for t in members("sniper")} == expected
    early = first.filter(pl.col("base") == address).head(EARLY_BUYERS)["maker"]
    assert {t["address"] for t in members("early_buyer")} == set(early)
    assert cohorts["early_buyer"]["wallets"] == len(early)
    # A cohort's sums are its members' as the traders list serves them, and the top holders'
    # holdings the first ten of the holders list.
    for name in ("sniper", "early_buyer", "bot"):
        traders = members(name)
        assert cohorts[name]["bought_usd"] == pytest.approx(
            sum(t["bought_usd"] for t in traders), rel=1e-9, abs=1e-6)
        assert cohorts[name]["realized_pnl_usd"] == pytest.approx(
            sum(t["realized_pnl_usd"] for t in traders), rel=1e-9, abs=1e-6)
    top = walk(api, path + "/holders")[:TOP_HOLDERS]
    assert cohorts["top_holder"]["held"] == pytest.approx(sum(h["balance"] for h in top))
    assert cohorts["top_holder"]["share_of_supply"] == pytest.approx(
        sum(h["share_pct"] for h in top) / 100)


def test_cohorts_of_an_unknown_token_are_not_found_and_an_unknown_cohort_is_refused(api, lake):
    missing = api.get("/chains/ethereum/tokens/0x" + "ab" * 20 + "/cohorts")
    assert missing.status_code == 404 and missing.json()["code"] == "not_found"
    address = lake.scan("tokens").filter(pl.col("chain_id") == 1, ~pl.col("is_quote")) \
        .collect()["address"][0]
    wrong = api.get(f"/chains/ethereum/tokens/{address}/traders", params={"cohort": "whales"})
    assert wrong.status_code == 400 and wrong.json()["param"] == "cohort"

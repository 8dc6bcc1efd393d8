"""Market products end to end on the simulated lake: lists, token reads, trades, candles,
holders, the brief and search, each checked against the raw lake or the published pages."""

import shutil
from collections import defaultdict
from datetime import timedelta

import dagster as dg
import httpx
import orjson
import polars as pl
import pytest

from assets.market.assets import LEGS, market_days
from assets.market.reserves import reserves_at
from assets.warehouse import Warehouse
from core.columns import EVENT
from figures.pair_trades import LegPricing
from sources.lake import LakeWriter

ZERO_ID = "00000000-0000-0000-0000-000000000000"


def walk(api: httpx.Client, path: str, **params) -> list[dict]:
    """Every item of a list, following next_cursor."""
    items, cursor = [], None
    while True:
        page = api.get(path, params={**params, "limit": 100,
                                     **({"cursor": cursor} if cursor else {})})
        assert page.status_code == 200, page.text
        body = page.json()
        items += body["items"]
        cursor = body["next_cursor"]
        if cursor is None:
            return items


def test_trending_matches_the_published_page_and_leaves_out_blocked_and_stale(home, api, lake):
    trending = api.get("/trending", params={"limit": 50}).json()
    assert trending["applied_sort"] == "trending" and trending["applied_timeframe"] == "h24"
    assert trending["excluded_chains"] == ["tron"]  # syncing but stale; sui is not live
    snapshot = api.get("/trending").headers["x-snapshot-id"]
    store = home / "store"
    index = orjson.loads(
        (store / "snapshots" / snapshot / "lists" / "trending" / "index.json").read_bytes())
    assert (index["applied_sort"], index["excluded_chains"]) == ("trending", ["tron"])
    published = orjson.loads((store / index["pages"][0]["object"]).read_bytes())
    assert published["items"] == trending["items"]
    same = api.get("/pairs", params={"sort": "trending", "limit": 50}).json()
    assert same["items"] == trending["items"]
    everything = walk(api, "/trending")
    slugs = {item["network"]["slug"] for item in everything}
    assert slugs and not slugs & {"tron", "sui"}
    assert all(item["verdict"]["status"] != "blocked" for item in everything)
    # The published cursor continues at the edge.
    follow = api.get("/trending", params={"cursor": index["pages"][0]["next_cursor"],
                                          "limit": 50})
    assert follow.status_code == 200
    assert follow.json()["items"] == [i for i in everything[50:100]]


def test_pairs_sort_on_the_figures_they_carry(api):
    by_volume = walk(api, "/pairs", sort="volume", timeframe="h1")
    volumes = [p["volume"]["h1"] for p in by_volume]
    assert volumes == sorted(volumes, reverse=True)
    cheapest = walk(api, "/pairs", sort="liquidity", order="asc", chains="ethereum")
    liquidity = [p["liquidity_usd"] for p in cheapest if p["liquidity_usd"] is not None]
    assert liquidity == sorted(liquidity)
    assert {p["network"]["slug"] for p in cheapest} == {"ethereum"}
    newest = walk(api, "/pairs/new", chains="base")
    created = [p["created_at"] for p in newest]
    assert created == sorted(created, reverse=True)


def test_the_fifteen_and_thirty_minute_windows_count_the_lakes_swaps(api, lake):
    # Read again from the lake: a pair's swaps in (as_of - 15 min, as_of] and (as_of - 30 min,
    # as_of], against what the edge serves for its busiest pairs of the last half hour.
    busiest = walk(api, "/pairs", sort="txns", timeframe="m30")
    counts = [p["windows"]["m30"]["txns"]["buys"] + p["windows"]["m30"]["txns"]["sells"]
              for p in busiest]
    assert counts == sorted(counts, reverse=True) and counts[0] > 0
    progress = lake.progress()
    assert progress is not None
    as_of = progress.watermark
    swaps = lake.read("swaps")
    checked = 0
    for pair in busiest[:8]:
        mine = swaps.filter(pl.col("chain_id") == pair["network"]["chain_id"],
                            pl.col("pair") == pair["pair_address"])
        if mine.is_empty():
            continue  # a perp market's trades are not the lake's swaps
        for window, minutes in (("m15", 15), ("m30", 30)):
            inside = mine.filter(pl.col("block_time") > as_of - timedelta(minutes=minutes),
                                 pl.col("block_time") <= as_of).height
            block = pair["windows"][window]
            assert block["txns"]["buys"] + block["txns"]["sells"] == inside
            assert pair["txn"][window]["buys"] + pair["txn"][window]["sells"] == inside
            assert pair["volume"][window] == block["volume_usd"]
        checked += 1
    assert checked >= 3


def test_token_list_excludes_blocked_tokens_and_filters_inclusively(api, lake):
    tokens = lake.read("tokens")
    condemned = set(tokens.filter(pl.col("status").is_in([999, 1000]))["address"])
    listed = walk(api, "/tokens")
    assert listed and not {t["address"] for t in listed} & condemned
    caps = [t["market_cap_usd"] for t in listed if t["market_cap_usd"] is not None]
    assert caps == sorted(caps, reverse=True)
    floor = sorted(t["liquidity_usd"] for t in listed)[len(listed) // 2]
    deep = walk(api, "/tokens", min_liquidity_usd=floor)
    assert {t["address"] for t in deep} == {t["address"] for t in listed
                                            if t["liquidity_usd"] >= floor}
    memes = walk(api, "/tokens", categories="meme,AI")
    assert memes and all({"meme", "ai"} & set(t["categories"]) for t in memes)
    with_blocks = api.get("/tokens", params={"include_market": "true",
                                             "include_deployments": "true"}).json()
    assert with_blocks["includes"] == {"instances": True, "market": True}
    assert all("market" in t and "instances" in t for t in with_blocks["items"])
    bad = api.get("/tokens", params={"min_trust_score": 101})
    assert bad.status_code == 400 and bad.json()["param"] == "min_trust_score"


def test_a_condemned_token_is_blocked_when_read_directly(api, lake):
    tokens = lake.read("tokens").filter(pl.col("status").is_in([999, 1000]))
    slugs = dict(lake.read("chains").select("chain_id", "slug").iter_rows())
    pairs = lake.read("pairs")
    traded = set(pairs["token0"]) | set(pairs["token1"])
    row = tokens.filter(pl.col("address").is_in(traded)).row(0, named=True)
    token = api.get(f"/chains/{slugs[row['chain_id']]}/tokens/{row['address']}").json()
    assert token["verdict"] == {"status": "blocked"} and token["status"] == str(row["status"])


def test_token_figures_agree_with_the_raw_swaps_and_the_registry(api, lake):
    as_of = lake.progress().watermark
    swaps = lake.read("swaps").filter(pl.col("block_time") > as_of - timedelta(days=1),
                                      pl.col("block_time") <= as_of)
    pairs = lake.read("pairs")
    tokens = lake.read("tokens").filter(~pl.col("is_quote"))
    legs = swaps.join(pairs.select("chain_id", pair="address", t0="token0", t1="token1"),
                      on=["chain_id", "pair"])
    per_token: dict[tuple[int, str], int] = defaultdict(int)
    for chain_id, t0, t1 in legs.select("chain_id", "t0", "t1").iter_rows():
        per_token[(chain_id, t0)] += 1
        per_token[(chain_id, t1)] += 1
    instances = lake.read("token_instances")
    known = {(c, a): t for t, c, a in instances.select("token_id", "chain_id", "address")
             .iter_rows()}
    checked = 0
    for row in tokens.head(40).iter_rows(named=True):
        answer = api.get(f"/chains/{row['chain_id']}/tokens/{row['address']}")
        if answer.status_code == 404:
            continue
        token = answer.json()
        key = (row["chain_id"], row["address"])
        assert token["txns_24h"] == per_token.get(key, 0)
        assert token["id"] == known.get(key, ZERO_ID)
        assert token["decimals"] == row["decimals"]
        checked += 1
    assert checked >= 20
    token_id, chain_id, address = instances.row(0)[1], instances.row(0)[2], instances.row(0)[3]
    registry = api.get(f"/tokens/{token_id}").json()
    expected = set(instances.filter(pl.col("token_id") == token_id)["chain_id"])
    assert registry["id"] == token_id
    assert {i["chain_id"] for i in registry["instances"]} <= expected
    assert api.get(f"/tokens/by-slug/{registry['slug'].upper()}").json()["id"] == token_id
    assert api.get(f"/tokens/{ZERO_ID}").status_code == 404
    assert api.get("/tokens/not-a-uuid").status_code == 400
    batch = api.post("/tokens/batch", json={"items": [
        {"chain": str(chain_id), "address": address}, {"chain": "nowhere", "address": "x"},
        {"chain": str(chain_id), "address": "0x" + "00" * 20}]}).json()["items"]
    assert [i["found"] for i in batch] == [True, False, False]
    assert batch[0]["token"]["address"] == address


def _balances(lake: LakeWriter, chain_id: int, token: str) -> dict[str, int]:
    """A token's balances recomputed from the raw lake, row by row."""
    balance: dict[str, int] = defaultdict(int)
    for t in lake.read("transfers").filter(pl.col("chain_id") == chain_id,
                                           pl.col("token") == token).iter_rows(named=True):
        balance[t["from_address"]] -= int(t["amount"])
        balance[t["to_address"]] += int(t["amount"])
    pairs = lake.read("pairs").filter(pl.col("chain_id") == chain_id,
                                      (pl.col("token0") == token) | (pl.col("token1") == token))
    side = {p["address"]: 0 if p["token0"] == token else 1 for p in pairs.iter_rows(named=True)}
    for s in lake.read("swaps").filter(pl.col("chain_id") == chain_id,
                                       pl.col("pair").is_in(list(side))).iter_rows(named=True):
        i = side[s["pair"]]
        balance[s["maker"]] -= int(s[f"amount{i}_in"])
        balance[s["recipient"]] += int(s[f"amount{i}_out"])
    for e in lake.read("liquidity_events").filter(
            pl.col("chain_id") == chain_id, pl.col("pair").is_in(list(side))).iter_rows(named=True):
        amount = int(e[f"amount{side[e['pair']]}"])
        balance[e["owner"]] += -amount if e["kind"] == "mint" else amount
    deploy = lake.read("tokens").filter(pl.col("chain_id") == chain_id,
                                        pl.col("address") == token).row(0, named=True)
    mint = lake.read("transfers").filter(pl.col("tx_hash") == deploy["deploy_tx"],
                                         pl.col("token") == token)["from_address"].to_list()
    return {a: b for a, b in balance.items() if b > 0 and a not in mint and a not in side}


def test_holders_are_the_balances_the_raw_flows_leave(api, lake):
    row = lake.read("tokens").filter(~pl.col("is_quote")).row(3, named=True)
    expected = _balances(lake, row["chain_id"], row["address"])
    holders = walk(api, f"/chains/{row['chain_id']}/tokens/{row['address']}/holders")
    assert len(holders) == len(expected)
    top = max(expected, key=expected.get)
    assert holders[0]["address"] == top and holders[0]["rank"] == 1
    assert holders[0]["balance"] == pytest.approx(expected[top] / 10 ** row["decimals"])
    assert [h["rank"] for h in holders] == list(range(1, len(holders) + 1))


def test_a_day_of_legs_made_alone_equals_that_day_made_with_the_rest(home, lake, tmp_path):
    made = Warehouse(root=str(home / "warehouse"), lake_root=str(home / "lake"))
    days = sorted(made.files("swap_legs"))
    assert days == sorted({d.isoformat() for d in lake.read("swaps")["block_time"].dt.date()})
    day = days[len(days) // 2]
    shutil.copytree(made.root, tmp_path / "warehouse")
    warehouse = Warehouse(root=str(tmp_path / "warehouse"), lake_root=str(home / "lake"))
    # The legs do not depend on the watermark: made alone, they must not need it.
    shutil.rmtree(warehouse.path("as_of"))
    with dg.instance_for_test() as instance:
        instance.add_dynamic_partitions("days", days)
        result = dg.materialize([market_days], selection=[LEGS], partition_key=day,
                                instance=instance, resources={"warehouse": warehouse})
        assert result.success
    alone = warehouse.product_days("swap_legs", [day]).collect()
    assert alone.height > 0
    # Made again: a new file committed in place of the day's, the other days' files as they were.
    assert warehouse.files("swap_legs")[day] != made.files("swap_legs")[day]
    assert alone.equals(made.product_days("swap_legs", [day]).collect())
    # A leg names its swap by event: each is one of that day's swaps in the lake, once.
    on_day = lake.read("swaps").filter(pl.col("block_time").dt.date().cast(pl.String) == day)
    assert alone.select(EVENT).join(on_day, on=list(EVENT)).height == alone.height


def test_a_day_of_legs_is_checked_on_its_own_partition(home, tmp_path, monkeypatch):
    made = home / "warehouse"
    days = sorted(Warehouse(root=str(made), lake_root=str(home / "lake")).files("swap_legs"))
    shutil.copytree(made, tmp_path / "warehouse")
    made_well = LegPricing.legs
    first_day = pl.col("block_time").dt.date().cast(pl.String) == days[0]

    def broken(pricing, read):
        # Three legs of the first day (of its first 23 hours, one segment) are neither a buy
        # nor a sell.
        legs = made_well(pricing, read).with_row_index("_n")
        early = pl.col("block_time").dt.hour() < 23
        return legs.with_columns(side=pl.when(first_day & early & (pl.col("_n") < 3))
                                 .then(pl.lit("both")).otherwise("side")).drop("_n")

    monkeypatch.setattr(LegPricing, "legs", broken)
    warehouse = Warehouse(root=str(tmp_path / "warehouse"), lake_root=str(home / "lake"))
    outcomes = {}
    with dg.instance_for_test() as instance:
        instance.add_dynamic_partitions("days", days)
        for day in (days[0], days[-1]):
            result = dg.materialize([market_days], selection=[LEGS],
                                    partition_key=day,
                                    instance=instance, resources={"warehouse": warehouse},
                                    raise_on_error=False)
            [evaluation] = result.get_asset_check_evaluations()
            outcomes[day] = (evaluation.passed, evaluation.metadata["failure_count"].value,
                             evaluation.partition)
    assert outcomes == {days[0]: (False, 3, days[0]), days[-1]: (True, 0, days[-1])}


def test_reserves_at_any_instant_are_the_last_of_every_reserve_before_it(home, lake):
    warehouse = Warehouse(root=str(home / "warehouse"), lake_root=str(home / "lake"))
    days = sorted(warehouse.files("reserve_days"))
    as_of = warehouse.clock()["as_of"]
    # Every reserve in chain order, from the raw lake: the last at or before each instant.
    every = lake.read("reserves").sort("chain_id", "block_number", "log_index")
    day = pl.col("block_time").dt.date().cast(pl.String)
    # Instants inside each of the first two days (among their reserves), before the first
    # day, and the watermark.
    middle = {d: every.filter(day == d)["block_time"].sort()[every.filter(day == d).height // 2]
              for d in days[:2]}
    cutoffs = {"before": middle[days[0]] - timedelta(days=1), "day_one": middle[days[0]],
               "day_two": middle[days[1]], "now": as_of}
    got = reserves_at(warehouse, cutoffs).collect()
    for name, at in cutoffs.items():
        want = (every.filter(pl.col("block_time") <= at).group_by("chain_id", "pair")
                .agg(pl.col("reserve0", "reserve1").last()))
        seen = got.select("chain_id", "pair", reserve0=f"reserve0_{name}",
                          reserve1=f"reserve1_{name}").drop_nulls()
        assert want.height > 0
        assert seen.sort("chain_id", "pair").equals(want.sort("chain_id", "pair")), name
    firsts = every.group_by("chain_id", "pair").agg(pl.col("reserve0", "reserve1").first())
    assert got.select("chain_id", "pair", reserve0="reserve0_first", reserve1="reserve1_first"
                      ).sort("chain_id", "pair").equals(firsts.sort("chain_id", "pair"))
    # The first day keeps the reserves before it apart: pools are funded before their swaps.
    summary = warehouse.product_days("reserve_days", days[:1]).collect()
    assert summary["earlier"].any() and not summary["earlier"].all()


def test_trades_page_both_ways_and_filter(api, lake):
    swaps = lake.read("swaps")
    busiest = swaps.group_by("chain_id", "pair").len().sort("len", "pair",
                                                             descending=True).row(0)
    chain_id, pair = busiest[0], busiest[1]
    events = lake.read("liquidity_events").filter(pl.col("chain_id") == chain_id,
                                                  pl.col("pair") == pair)
    path = f"/chains/{chain_id}/pairs/{pair}/trades"
    everything = walk(api, path)
    assert len(everything) == busiest[2] + events.height
    keys = [(t["block_info"]["block_number"], t["block_info"]["log_index"]) for t in everything]
    assert keys == sorted(keys, reverse=True) and len(set(keys)) == len(keys)
    # A swap's hash and maker are the lake's swap at its block and log.
    made = {(b, log): (h, m) for b, log, h, m in swaps.filter(
        pl.col("chain_id") == chain_id, pl.col("pair") == pair).select(
        "block_number", "log_index", "tx_hash", "maker").iter_rows()}
    traded = [t for t in everything if t["tx_type"] in ("buy", "sell")]
    assert len(traded) == len(made) and all(
        made[(t["block_info"]["block_number"], t["block_info"]["log_index"])]
        == (t["hash"], t["maker_address"]) for t in traded)
    first = api.get(path, params={"limit": 5}).json()
    second = api.get(path, params={"limit": 5, "cursor": first["next_cursor"]}).json()
    back = api.get(path, params={"limit": 5, "cursor": second["prev_cursor"]}).json()
    assert back["items"] == first["items"]
    caught_up = api.get(path, params={"limit": 5, "cursor": first["prev_cursor"]}).json()
    assert caught_up["items"] == [] and caught_up["prev_cursor"]
    sells = walk(api, path, tx_type="sell")
    assert sells and all(t["tx_type"] == "sell" for t in sells)
    start, end = everything[-1]["timestamp"], everything[len(everything) // 2]["timestamp"]
    low = int(pl.Series([start]).str.to_datetime().dt.epoch("s")[0])
    high = int(pl.Series([end]).str.to_datetime().dt.epoch("s")[0])
    window = walk(api, path, order="asc", **{"from": low, "to": high})
    assert [t["timestamp"] for t in window] == sorted(t["timestamp"] for t in everything
                                                      if start <= t["timestamp"] <= end)
    mismatch = api.get(path, params={"cursor": first["next_cursor"], "order": "asc"})
    assert mismatch.status_code == 400 and mismatch.json()["param"] == "cursor"


def test_trades_are_published_a_chain_at_a_time(home, lake):
    """Each part of the trades holds one chain's rows of its span, a span's parts in chain
    order, so that a publish holds a chain's day of them; together every swap and liquidity
    event of each chain."""
    store = home / "store" / "snapshots"
    sid = orjson.loads((store / "LATEST").read_bytes())["snapshot_id"]
    parts = orjson.loads((store / sid / "manifest.json").read_bytes())["tables"]["trades"][
        "parts"]
    chains_of = [[int(c) for c in part["blocks"]] for part in parts]
    assert all(len(chains) == 1 for chains in chains_of)
    by_span: dict[int, list[int]] = defaultdict(list)
    for part, [chain] in zip(parts, chains_of, strict=True):
        by_span[part["span"]].append(chain)
    assert all(chains == sorted(set(chains)) for chains in by_span.values())
    assert max(len(chains) for chains in by_span.values()) >= 2
    rows: dict[int, int] = defaultdict(int)
    for part, [chain] in zip(parts, chains_of, strict=True):
        rows[chain] += part["rows"]
    expected: dict[int, int] = defaultdict(int)
    for table in ("swaps", "liquidity_events"):
        for chain, n in lake.read(table).group_by("chain_id").len().iter_rows():
            expected[chain] += n
    assert rows == expected


def test_hourly_candles_count_every_swap_of_their_hours(api, lake):
    swaps = lake.read("swaps")
    as_of = lake.progress().watermark
    chain_id, pair = swaps.group_by("chain_id", "pair").len().sort(
        "len", "pair", descending=True).row(0)[:2]
    end = int(as_of.timestamp())
    body = api.get(f"/chains/{chain_id}/pairs/{pair}/candles",
                   params={"resolution": "1h", "from": end - 6 * 3600, "to": end}).json()
    raw = swaps.filter(pl.col("chain_id") == chain_id, pl.col("pair") == pair,
                       pl.col("block_time").dt.epoch("s") >= end - 6 * 3600,
                       pl.col("block_time").dt.epoch("s") <= end)
    assert sum(c["trades"] for c in body["items"]) == raw.height
    for c in body["items"]:
        assert c["time"] % 3600 == 0
        assert c["low"] <= min(c["open"], c["close"]) <= max(c["open"], c["close"]) <= c["high"]
    too_wide = api.get(f"/chains/{chain_id}/pairs/{pair}/candles",
                       params={"resolution": "1m", "from": 0, "to": end})
    assert too_wide.status_code == 400


def test_brief_answers_304_to_its_own_etag_and_search_finds_symbols_and_addresses(api):
    token = api.get("/tokens", params={"limit": 1, "chains": "ethereum"}).json()["items"][0]
    path = f"/chains/ethereum/tokens/{token['address']}/brief"
    first = api.get(path)
    assert first.status_code == 200 and first.json()["token"]["address"] == token["address"]
    etag = first.headers["etag"]
    assert api.get(path, headers={"If-None-Match": etag}).status_code == 304
    assert api.get(path, headers={"If-None-Match": f'W/{etag}, "other"'}).status_code == 304
    assert api.get(path, headers={"If-None-Match": '"other"'}).status_code == 200
    hits = api.get("/search", params={"q": token["symbol"].lower()}).json()
    assert token["address"] in {h["address"] for h in hits["tokens"]}
    pair = token["main_pair"]["address"]
    exact = api.get("/search", params={"q": pair}).json()
    assert [h["pair_address"] for h in exact["pairs"]] == [pair]
    assert api.get("/search").status_code == 400


def test_verdicts_are_signed_and_proven_against_the_published_root(api, lake):
    from eth_account import Account
    from eth_account._utils.encode_typed_data.encoding_and_hashing import hash_struct
    from eth_account.messages import encode_typed_data
    from eth_utils import keccak

    tokens = lake.read("tokens").filter(pl.col("status").is_in([999, 1000]))
    slugs = dict(lake.read("chains").select("chain_id", "slug").iter_rows())
    traded = set(lake.read("pairs")["token0"]) | set(lake.read("pairs")["token1"])
    row = tokens.filter(pl.col("address").is_in(traded),
                        pl.col("address").str.starts_with("0x")).row(0, named=True)
    path = f"/chains/{slugs[row['chain_id']]}/tokens/{row['address']}"

    signed = api.get(path + "/verdict").json()
    message = signed["typed_data"]["message"]
    assert signed["verdict"] == {"status": "blocked"} and signed["listed"] is True
    assert message == {"chainId": row["chain_id"], "token": row["address"],
                       "status": "blocked", "epoch": signed["epoch"]}
    recovered = Account.recover_message(encode_typed_data(full_message=signed["typed_data"]),
                                        signature=signed["signature"])
    assert recovered == signed["signer"]

    proven = api.get(path + "/proof").json()
    types = signed["typed_data"]["types"]
    leaf = hash_struct("TokenVerdict", types, message)
    assert proven["leaf"] == "0x" + leaf.hex() and proven["leaf_index"] == signed["leaf_index"]
    node = leaf
    for sibling in proven["proof"]:
        other = bytes.fromhex(sibling[2:])
        node = keccak(min(node, other) + max(node, other))
    assert "0x" + node.hex() == proven["root"]
    root_doc = proven["root_signed"]["typed_data"]
    assert root_doc["message"] == {"epoch": signed["epoch"], "root": proven["root"],
                                   "leaves": proven["leaves"]}
    assert Account.recover_message(encode_typed_data(full_message=root_doc),
                                   signature=proven["root_signed"]["signature"]) == recovered

    nobody = "0x" + "ee" * 20
    unknown = api.get(f"/chains/{slugs[row['chain_id']]}/tokens/{nobody}/verdict").json()
    assert unknown["verdict"] == {"status": "unknown"} and unknown["listed"] is False
    assert unknown["leaf_index"] is None
    assert api.get(f"/chains/{slugs[row['chain_id']]}/tokens/{nobody}/proof").status_code == 404


def test_token_ownership_is_the_lakes_last_owner(api, lake):
    """Each owned token's `ownership` and its pairs' owner signal, worked out from the lake's
    ownership rows in plain Python: the last row in chain order is the owner now."""
    gone = {"0x" + "0" * 40, "0x" + "0" * 36 + "dead"}
    chains = dict(lake.read("chains").select("chain_id", "slug").iter_rows())
    powers = {(r["chain_id"], r["address"]): r["owner_powers"]
              for r in lake.read("tokens").iter_rows(named=True)}
    story: dict[tuple[int, str], list[dict]] = defaultdict(list)
    for row in lake.read("ownership").iter_rows(named=True):
        story[(row["chain_id"], row["token"])].append(row)
    seen = {"renounced": 0, "kept": 0, "as base": 0}
    for (chain_id, token), rows in sorted(story.items()):
        rows.sort(key=lambda r: (r["block_number"], r["log_index"]
                                 if r["log_index"] is not None else 1 << 40))
        now = rows[-1]["owner"]
        renounced = now in gone
        # Back to where the current owner (or the renunciation) began.
        first = len(rows) - 1
        while first > 0 and ((rows[first - 1]["owner"] in gone) if renounced
                             else rows[first - 1]["owner"] == now):
            first -= 1
        began = rows[first]["block_time"].isoformat(timespec="milliseconds").replace(
            "+00:00", "Z")
        answer = api.get(f"/chains/{chains[chain_id]}/tokens/{token}")
        if answer.status_code == 404:  # no pair of it traded in the lake: not a token row
            continue
        item = answer.json()
        risk = not renounced and bool(powers[(chain_id, token)])
        assert item["ownership"] == {
            "ownable": True, "owner": now, "renounced": renounced,
            "renounced_at": began if renounced else None,
            "owner_since": None if renounced else began,
            "previous_owner": None if rows[first]["previous_owner"] in gone
            else rows[first]["previous_owner"],
            "powers": powers[(chain_id, token)], "risk": risk}, token
        seen["renounced" if renounced else "kept"] += 1
        pair = api.get(f"/chains/{chains[chain_id]}/pairs/{item['main_pair']['address']}").json()
        if pair["tokens"][0]["address"] != token:  # the quote of its main pair: not its signal
            continue
        assert pair["safety"]["owner_renounced"] is renounced
        assert ("owner_powers" in pair["safety"]["labels"]) is risk
        seen["as base"] += 1
    assert min(seen.values()) >= 1, seen


def test_curve_progress_is_the_quote_reserve_over_the_graduation(api, lake):
    """Each launchpad curve's progress worked out from the lake's own rows: its last reserves
    before the watermark, quote side over the graduation reserve; whole once migrated."""
    chains = dict(lake.read("chains").select("chain_id", "slug").iter_rows())
    quotes = set(lake.read("tokens").filter(pl.col("is_quote"))["address"])
    watermark = lake.progress().watermark
    last = (lake.read("reserves").filter(pl.col("block_time") <= watermark)
            .sort("block_number", "log_index").group_by("chain_id", "pair").last())
    held = {(r["chain_id"], r["pair"]): r for r in last.iter_rows(named=True)}
    curves = lake.read("pairs").filter(pl.col("graduation_quote_raw").is_not_null())
    seen = defaultdict(int)
    for pair in curves.iter_rows(named=True):
        answer = api.get(f"/chains/{chains[pair['chain_id']]}/pairs/{pair['address']}")
        if answer.status_code == 404:
            continue
        pad = answer.json()["launchpad"]
        if pair["launchpad_stage"] in ("completed", "migrated"):
            assert pad["progress"] == 1.0, pair["address"]
        else:
            reserves = held[(pair["chain_id"], pair["address"])]
            quote_side = 0 if pair["token0"] in quotes else 1
            expected = min(1.0, int(reserves[f"reserve{quote_side}"])
                           / int(pair["graduation_quote_raw"]))
            assert pad["progress"] == pytest.approx(expected, rel=1e-9), pair["address"]
        seen[pair["launchpad_stage"]] += 1
    assert seen["curve"] >= 1 and seen["migrated"] >= 1, dict(seen)

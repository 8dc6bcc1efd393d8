"""Wallet reads (spec 4.5 and the wallet operations of 4.11): profiles, positions, rounds, raw
trades, the PNL chart, funding, best trades, the overview across chains, rankings, stats, the
labels batch and the wallets that traded a token."""

import time
from typing import Any

import orjson
import polars as pl

from core.caches import LruCache
from core.vocabulary import (
    MIN_RATED_POSITIONS,
    WALLET_WINDOW_SECONDS,
    WALLET_WINDOWS,
    WIRE_TIME,
    wire_time,
)
from edge.addresses import ChainRef, chain_index, normalize, resolve_chain
from edge.live.tail import LiveView, followed, last_rows, tail_held
from edge.live.tokens import live_token_rows
from edge.memo import kept_while, per_snapshot
from edge.paging import Listing, decode, gather_rows, page
from edge.routes.chains import chain_states
from edge.routes.cohorts import cohort_wallets
from edge.routes.market.tokens import token_row
from edge.snapshots import as_of_seconds, snapshot_headers, snapshot_json, table, whole
from edge.spans import Spans, frame_spans, indexed
from edge.web.http import Request, Response
from edge.web.problems import ApiError
from edge.web.registry import Params
from publish.cursor import Cursor, list_scope
from publish.reader import Snapshot
from publish.wallet_rankings import (
    METRIC_FIELDS,
    WalletQuery,
    ranked_at,
    ranking_items,
    wallet_order,
    wallet_scope,
)
from publish.wallets import POSITION_KEY, ROUND_KEY, marked, position_items, round_items

BEST_TRADES = 10
HOUR, DAY = 3_600, 86_400
_stats: LruCache[bytes] = LruCache(256)
TRADER_SORTS = {"realized_pnl": "realized_usd", "total_pnl": "total_pnl_usd",
                "volume": "volume_usd", "trades": "trades"}


WALLET = ("chain_id", "wallet")
# The token row's columns a position is marked with.
MARKS_FROM = ("chain_id", "address", "symbol", "price_usd", "rating_score", "token_status")


positions_of = indexed("wallet_positions", WALLET)
rounds_of = indexed("wallet_rounds", WALLET)
trades_of = indexed("wallet_trades", WALLET, ahead=True)
buckets_of = indexed("wallet_buckets", (*WALLET, "resolution"))
funding_of = indexed("wallet_funding", WALLET)


@per_snapshot(kept=2)
def profiles(snapshot: Snapshot) -> Spans:
    """Every profile's JSON but for its metrics records (its head), looked up by (chain id,
    wallet)."""
    return frame_spans(table(snapshot, "wallet_profiles").select(*WALLET, "head"), WALLET)


def head_of(snapshot: Snapshot, key: tuple[int, str]) -> str | None:
    """A wallet's profile head by (chain id, wallet), or None when it has no profile."""
    found = profiles(snapshot).rows(key)["head"]
    return None if found.is_empty() else str(found[0])


def head(snapshot: Snapshot, chain: ChainRef, address: str) -> str:
    """A wallet's profile head; 404 when the chain knows no such wallet."""
    found = head_of(snapshot, (chain.chain_id, address))
    if found is None:
        raise ApiError("not_found", f"no wallet {address} on {chain.slug}", "address")
    return found


@per_snapshot(kept=2)
def ranked_as_of(snapshot: Snapshot) -> str:
    """The watermark the snapshot's rankings, profiles and metrics records rank as of: their
    own cadence's last run, at most five minutes behind the snapshot's (the snapshot's own
    for rankings published without it)."""
    return ranked_at(table(snapshot, "wallet_rankings")) or snapshot.manifest.as_of


@per_snapshot(kept=2)
def metrics_of(snapshot: Snapshot) -> Spans:
    """The ranking rows' metrics records, fields only, indexed by (chain id, wallet)."""
    rows = table(snapshot, "wallet_rankings").select("chain_id", "wallet", *METRIC_FIELDS)
    return frame_spans(rows, WALLET)


def metrics_records(snapshot: Snapshot, key: tuple[int, str]) -> list[str]:
    """A wallet's metrics record of every window as JSON, in window order: its ranking rows.
    Five rows are encoded as plain tuples: a polars expression's planning would cost more than
    the rest of the request."""
    found = {row[2]: orjson.dumps(dict(zip(METRIC_FIELDS, row[2:], strict=True))).decode()
             for row in metrics_of(snapshot).rows(key).rows()}
    return [found[window] for window in WALLET_WINDOWS]


def with_metrics(head: str, records: list[str]) -> str:
    """A profile's JSON: its head with the metrics records added last."""
    return f'{head[:-1]},"metrics":[{",".join(records)}]}}'


def profile(snapshot: Snapshot, chain: ChainRef, address: str) -> str:
    """A wallet's profile JSON with one metrics record per window; 404 when the chain knows no
    such wallet."""
    return with_metrics(head(snapshot, chain, address),
                        metrics_records(snapshot, (chain.chain_id, address)))


def rebuilt(snapshot: Snapshot, index: Spans, chain: ChainRef, address: str) -> pl.DataFrame:
    """A wallet's rows of an accounting table; none when its rebuild is skipped (machinery's
    zeroes are a decision); 404 for an unknown wallet."""
    found = head(snapshot, chain, address)
    return index.empty() if _skipped(found) else index.rows((chain.chain_id, address))


def _fragments(items: pl.Series) -> list[orjson.Fragment]:
    return [orjson.Fragment(i) for i in items.to_list()]


async def get_wallet(request: Request, params: Params) -> Response:
    """A wallet's profile with one metrics record per window."""
    snapshot = request.state.snapshot
    body = profile(snapshot, params["chain"], params["address"])
    return Response(body.encode(), headers=snapshot_headers(snapshot, ranked_as_of(snapshot)))


async def get_positions(request: Request, params: Params) -> Response:
    """One row per token the wallet swapped, rounds averaged together, open ones first, then by
    last trade; a wallet whose rebuild is skipped has none, by decision."""
    snapshot, chain, address = request.state.snapshot, params["chain"], params["address"]
    view = unchanged_since(request.state.live, (chain.chain_id, address))
    rows = marked_now(snapshot, rebuilt(snapshot, positions_of(snapshot), chain, address),
                      view).sort(["is_open", "last_trade_at", "token"], descending=[True, True, False])
    return snapshot_json(snapshot, {"items": _fragments(position_items(rows))},
                         None if view is None else view.as_of_text)


def unchanged_since(view: LiveView | None, key: tuple[int, str]) -> LiveView | None:
    """The live tail when a wallet's books at the snapshot are its books at the tail's
    watermark (it has no swap or movement in the tail), so its positions may be marked at the
    tail's prices; None when they are not."""
    return view if view is not None and view.wallet_trades.rows(key).is_empty() else None


@per_snapshot(kept=4)
def token_marks(snapshot: Snapshot) -> Spans:
    """What a position's marking reads of its token's row, by (chain id, address)."""
    return frame_spans(table(snapshot, "tokens").select(*MARKS_FROM), ("chain_id", "address"))


def marked_now(snapshot: Snapshot, rows: pl.DataFrame, view: LiveView | None = None
               ) -> pl.DataFrame:
    """A wallet's positions from their published layers (each token's newest row), marked at
    the snapshot's token rows, or with `view` at the prices of the tail's live token rows
    (a token the tail carries no price of keeps the snapshot's)."""
    newest = newest_rows(rows, POSITION_KEY)
    marks = token_marks(snapshot)
    keys = list(newest.select("chain_id", "token").iter_rows())
    found = pl.concat([marks.rows(key) for key in keys]) if keys else marks.empty()
    live = {key: row["price_usd"] for key, row in live_token_rows(view, keys).items()
            if "price_usd" in row}
    if live:
        found = found.with_columns(price_usd=pl.Series([
            live.get(key, price) for key, price in zip(
                found.select("chain_id", "address").iter_rows(), found["price_usd"], strict=True)],
            dtype=pl.Float64))
    return marked(newest, found)


def newest_rows(rows: pl.DataFrame, key: tuple[str, ...]) -> pl.DataFrame:
    """Each key's row in the last part that holds it (the rows in part order)."""
    return rows.unique(subset=list(key), keep="last", maintain_order=True)


async def get_rounds(request: Request, params: Params) -> Response:
    """Every round of every position, newest opened first."""
    snapshot, chain, address = request.state.snapshot, params["chain"], params["address"]
    rows = rounds_now(snapshot, rebuilt(snapshot, rounds_of(snapshot), chain, address)).sort(
        ["opened_at", "token", "round"], descending=[True, False, False])
    return snapshot_json(snapshot, {"items": _fragments(round_items(rows))})


def rounds_now(snapshot: Snapshot, rows: pl.DataFrame) -> pl.DataFrame:
    """A wallet's rounds from their published parts (each round's last part's row), an open
    one held to the snapshot's watermark."""
    return newest_rows(rows, ROUND_KEY).with_columns(
        hold_seconds=pl.coalesce("closed_at", pl.lit(as_of_seconds(snapshot)))
        - pl.col("opened_at"))


def trade_items(rows: pl.DataFrame) -> list[str]:
    """Wallet trade records (spec 2.7): transfers carry no price or notional."""
    return rows.select(pl.struct(
        trade_uid=pl.concat_str("tx_hash", pl.col("log_index").cast(pl.String), "side",
                                separator=":"),
        token_address="token", token_symbol="token_symbol", pair_address="pair", side="side",
        qty="qty", price_usd="price_usd", notional_usd="notional_usd", fee_usd="fee_usd",
        fee_is_estimated="fee_is_estimated",
        timestamp=wire_time(pl.col("ts")),
        block_number="block_number").struct.json_encode()).to_series().to_list()


# A wallet trade's place in its chain: its block, its log, then its end of the event.
WALLET_POSITION = ((pl.col("block_number") * (1 << 32) + pl.col("log_index")) * 4
                   + pl.col("seq").cast(pl.Int64))


@kept_while(tail_held(lambda view: view.wallet_trades,
                       ("block_number", "log_index", "seq", "tx_hash")))
async def list_trades(request: Request, params: Params) -> Response:
    """A wallet's swaps and bare movements, newest first, the live tail's included; paged by
    place with next_cursor, so trades arriving meanwhile never shift a page."""
    snapshot, view = request.state.snapshot, request.state.live
    chain, address = params["chain"], params["address"]
    key = (chain.chain_id, address)
    newer = None if view is None else view.wallet_trades.rows(key)
    if newer is None or newer.is_empty():
        head(snapshot, chain, address)
    # A first page reads its own rows and the one past them (whether there are more).
    rows = (last_rows(trades_of(snapshot), newer, key, params["limit"] + 1)
            if params["cursor"] is None else followed(trades_of(snapshot).rows(key), newer))
    rows = rows.with_columns(position=WALLET_POSITION)
    scope = list_scope(chain=chain.chain_id, wallet=address)
    if params["cursor"] is not None:
        place = decode(request, params["cursor"], "wallets/trades", scope, places=1).position
        rows = rows.filter(pl.col("position") < place[0])
    chosen = rows.tail(params["limit"])
    oldest = chosen["position"].min() if chosen.height else None
    later = None
    if isinstance(oldest, int) and rows.height > chosen.height:
        later = request.state.signer.encode(Cursor(snapshot.snapshot_id, "wallets/trades", 0,
                                                   scope, (oldest,), "older"))
    body = {"items": [orjson.Fragment(item) for item in trade_items(chosen.reverse())],
            "next_cursor": later}
    return snapshot_json(snapshot, body, view and view.as_of_text)


def chart_points(buckets: pl.DataFrame, window: str, as_of_s: int) -> list[dict[str, Any]]:
    """Every bucket of the window, oldest first: hourly up to a week, daily above. A bucket's
    roi is its realised profit over the cost it closed; cumulative_roi is running realised over
    running cost, never a sum of ratios."""
    span = WALLET_WINDOW_SECONDS[window]
    step = HOUR if span is not None and span <= 7 * DAY else DAY
    rows = buckets.filter(pl.col("resolution") == ("1h" if step == HOUR else "1d"))
    last = as_of_s // step * step
    if span is None:
        first = min(rows["bucket"].cast(pl.Int64).to_list(), default=last)
    else:
        first = (as_of_s - span) // step * step + step
        rows = rows.filter(pl.col("bucket") >= first)
    by = {r["bucket"]: r for r in rows.iter_rows(named=True)}
    points, run_realized, run_cost = [], 0.0, 0.0
    for at in range(first, last + step, step):
        r = by.get(at, {"realized_usd": 0.0, "cost_usd": 0.0, "wins": 0, "losses": 0})
        run_realized += r["realized_usd"]
        run_cost += r["cost_usd"]
        points.append({
            "timestamp": _iso(at), "realized_usd": r["realized_usd"],
            "cumulative_usd": run_realized, "cost_usd": r["cost_usd"],
            "roi": r["realized_usd"] / r["cost_usd"] if r["cost_usd"] > 0 else 0.0,
            "cumulative_roi": run_realized / run_cost if run_cost > 0 else 0.0,
            "wins": r["wins"], "losses": r["losses"]})
    return points


def _iso(seconds: int) -> str:
    return time.strftime(WIRE_TIME, time.gmtime(seconds))


def _skipped(item: str) -> bool:
    skipped: bool = orjson.loads(item)["rebuild_skipped"]
    return skipped


async def get_chart(request: Request, params: Params) -> Response:
    """The wallet's realised PNL per bucket over the window (all zeroes when its rebuild is
    skipped, by decision)."""
    snapshot, chain, address = request.state.snapshot, params["chain"], params["address"]
    found = head(snapshot, chain, address)
    buckets = buckets_of(snapshot).empty() if _skipped(found) else pl.concat(
        [buckets_of(snapshot).rows((chain.chain_id, address, r)) for r in ("1h", "1d")])
    return snapshot_json(snapshot, {"window": params["window"], "points": chart_points(
        buckets, params["window"], as_of_seconds(snapshot))})


async def get_funding(request: Request, params: Params) -> Response:
    """Who funded the wallet with the chain's native token: the first funding and every funder
    summed, each with the labels known for it, and the wallet's funding cluster."""
    snapshot, chain, address = request.state.snapshot, params["chain"], params["address"]
    item = orjson.loads(head(snapshot, chain, address))
    rows = funding_of(snapshot).rows((chain.chain_id, address)).sort("ts", "log_index")
    def labels(funder: str) -> list[Any]:
        funding = (chain.chain_id, funder)
        return labels_of(snapshot, funding, profile_of(snapshot, funding)) or []

    first = None
    if rows.height:
        r = rows.row(0, named=True)
        first = {"funder": r["funder"], "amount": r["amount"], "amount_usd": r["amount_usd"],
                 "at": _iso(r["ts"]), "tx_hash": r["tx_hash"], "labels": labels(r["funder"])}
    funders = (rows.group_by("funder").agg(
        transfers=pl.len(), amount=pl.col("amount").sum(), amount_usd=pl.col("amount_usd").sum(),
        first_at=pl.col("ts").min(), last_at=pl.col("ts").max())
        .sort(["first_at", "funder"]))
    cluster = item["cluster_id"]
    return snapshot_json(snapshot, {
        "address": address, "chain": item["chain"], "first_funding": first,
        "funders": [{**f, "first_at": _iso(f["first_at"]), "last_at": _iso(f["last_at"]),
                     "labels": labels(f["funder"])} for f in funders.iter_rows(named=True)],
        "cluster_id": cluster,
        "cluster_size": cluster_sizes(snapshot).get((chain.chain_id, cluster), 0) if cluster
        else 0})


@per_snapshot(kept=2)
def known_entities(snapshot: Snapshot) -> dict[tuple[int, str], list[Any]]:
    """The lake's labels of known entities (exchanges, bridges, ...) by (chain id, address)."""
    out: dict[tuple[int, str], list[Any]] = {}
    for r in table(snapshot, "address_labels").iter_rows(named=True):
        out.setdefault((r["chain_id"], r["address"]), []).append(
            {"kind": r["kind"], "name": r["name"], "confidence": r["confidence"],
             "token_address": r["token_address"]})
    return out


def profile_of(snapshot: Snapshot, key: tuple[int, str]) -> dict[str, Any] | None:
    """A wallet's profile head, parsed, or None when it has no profile."""
    found = head_of(snapshot, key)
    return None if found is None else dict(orjson.loads(found))


def labels_of(snapshot: Snapshot, key: tuple[int, str],
              profile: dict[str, Any] | None) -> list[Any] | None:
    """An address's labels: its profile's (`profile`, parsed) when it traded, else a known
    entity's; None when nothing labels it."""
    return profile["labels"] if profile is not None else known_entities(snapshot).get(key)


@per_snapshot(kept=2)
def cluster_sizes(snapshot: Snapshot) -> dict[tuple[int, int], int]:
    """Wallets per funding cluster."""
    counts = (table(snapshot, "wallet_profiles").filter(pl.col("cluster_id") > 0)
              .group_by("chain_id", "cluster_id").len())
    return {(c, k): n for c, k, n in counts.iter_rows()}


async def best_trades(request: Request, params: Params) -> Response:
    """The wallet's most profitable rounds closed by a sell inside the window."""
    snapshot, chain, address = request.state.snapshot, params["chain"], params["address"]
    span = WALLET_WINDOW_SECONDS[params["window"]]
    rows = rounds_now(snapshot, rebuilt(snapshot, rounds_of(snapshot), chain, address)).filter(
        pl.col("closed_by_sell"), pl.col("realized_usd") > 0)
    if span is not None:
        rows = rows.filter(pl.col("closed_at") > as_of_seconds(snapshot) - span)
    rows = rows.sort(["realized_usd", "token"], descending=[True, False]).head(BEST_TRADES)
    return snapshot_json(snapshot, {"window": params["window"],
                                    "items": _fragments(round_items(rows))})


async def list_wallets(request: Request, params: Params) -> Response:
    """GET /wallets: the ranking of one chain in one window with every filter of 4.5."""
    chain: ChainRef = params["chain"]
    tiers = params.get("tiers")
    query = WalletQuery(
        chain_id=chain.chain_id, window=params["window"], sort=params["sort"],
        descending=params["order"] == "desc",
        **{k: params[k] for k in ("min_total_pnl_usd", "min_realized_pnl_usd", "min_volume_usd",
                                  "min_win_rate", "min_trades", "max_avg_hold_seconds",
                                  "min_user_score")},
        no_abuse_evidence=bool(params["no_abuse_evidence"]),
        only_copy_eligible=bool(params["only_copy_eligible"]),
        exclude_bots=bool(params["exclude_bots"]),
        tiers=None if tiers is None else tuple(sorted({t.lower() for t in tiers})))
    listing = Listing(
        "wallets", lambda s: wallet_order(table(s, "wallet_rankings"), query,
                                          MIN_RATED_POSITIONS).to_frame(),
        wallet_scope(query), render=lambda rows: ranking_items(rows).to_list(), backward=False,
        gather=gather_rows("wallet_rankings"), as_of=ranked_as_of)
    return await page(request, listing, params["limit"], params["cursor"])


async def wallet_stats(request: Request, params: Params) -> Response:
    """A chain's wallet population in one window: counts by type and tier, how many made
    money, the median PNL, volume and realised profit."""
    snapshot, chain, window = request.state.snapshot, params["chain"], params["window"]
    key = (snapshot.snapshot_id, chain.chain_id, window)
    body = _stats.get(key) or _stats.put(key, population(snapshot, chain, window))
    return Response(body, headers=snapshot_headers(snapshot, ranked_as_of(snapshot)))


def population(snapshot: Snapshot, chain: ChainRef, window: str) -> bytes:
    """The stats document of one chain and window, derived once per snapshot."""
    rows = table(snapshot, "wallet_rankings").filter(pl.col("chain_id") == chain.chain_id,
                                                     pl.col("window") == window)
    active = rows.filter(pl.col("trades") > 0)
    rated = active.filter(~pl.col("type").is_in(["bot", "market_maker"]))
    profitable = rated.filter(pl.col("total_pnl_usd") > 0).height
    machinery = rows.filter(pl.col("type").is_in(["bot", "market_maker"]))
    return orjson.dumps({
        "chain": {"slug": chain.slug, "chain_id": chain.chain_id}, "window": window,
        "wallets": rows.height, "active": active.height + machinery.height,
        "by_type": dict(rows.group_by("type").len().sort("type").iter_rows()),
        "by_tier": dict(rows.group_by("tier").len().sort("tier").iter_rows()),
        "profitable": profitable,
        "profitable_share": profitable / rated.height if rated.height else 0.0,
        "median_total_pnl_usd": rated["total_pnl_usd"].median() if rated.height else 0.0,
        "volume_usd": float(active["volume_usd"].sum()),
        "realized_pnl_usd": float(active["realized_pnl_usd"].sum()),
        "copy_eligible": rows.filter("copy_eligible").height,
        "as_of": ranked_as_of(snapshot)})


async def label_batch(request: Request, params: Params) -> Response:
    """Labels, tier, copy eligibility and user score of up to 200 addresses on one chain; an
    address absent from the answer carries no labels."""
    snapshot = request.state.snapshot
    body = params["body"]
    chain = resolve_chain(snapshot, body["chain"], "body.chain")
    items, seen = [], set()
    for i, asked in enumerate(body["addresses"]):
        address = normalize(asked, chain.address_format, f"body.addresses[{i}]")
        key = (chain.chain_id, address)
        if key in seen:
            continue
        item = profile_of(snapshot, key)
        labels = labels_of(snapshot, key, item)
        if labels is None:
            continue
        seen.add(key)
        items.append({"address": address, "tier": item["tier"] if item else "unrated",
                      "labels": labels,
                      "copy_eligible": item["copy_eligible"] if item else False,
                      "user_score": item["user_score"]["value"] if item else 0})
    return snapshot_json(snapshot, {"items": items})


async def overview(request: Request, params: Params) -> Response:
    """A wallet across chains in one window: its profile per chain, the per-chain split, the
    most profitable chain and lifetime figures. A chain whose wallet data cannot be read (the
    snapshot carries no wallet tables) is listed as unavailable, never counted as zero; a chain
    whose indexer stopped is readable: its data is served, and listed as stale."""
    snapshot, address, window = request.state.snapshot, params["address"], params["window"]
    chains = params.get("chains") or all_chains(snapshot)
    syncing, stale_metrics = chain_states(snapshot)
    readable = "wallet_profiles" in snapshot.tables
    found, per_chain, unavailable, stale, lifetime = [], [], [], [], _lifetime()
    for chain in chains:
        ref = {"slug": chain.slug, "chain_id": chain.chain_id}
        if not readable:
            unavailable.append(ref)
            continue
        key = (chain.chain_id, address)
        known = head_of(snapshot, key)
        if known is None:
            continue
        records = metrics_records(snapshot, key)
        found.append(orjson.Fragment(with_metrics(known, records)))
        behind = chain.chain_id not in syncing or chain.chain_id in stale_metrics
        if behind:
            stale.append(ref)
        metrics = dict(zip(WALLET_WINDOWS, map(orjson.loads, records), strict=True))
        now, ever = metrics[window], metrics["all"]
        per_chain.append({"chain": ref, "stale": behind,
                          "realized_pnl_usd": now["realized_pnl_usd"],
                          "total_pnl_usd": now["total_pnl_usd"]})
        _add_lifetime(lifetime, ever, deployed(snapshot)[(chain.chain_id, address)],
                      marked_now(snapshot, positions_of(snapshot).rows(key)))
    total = sum(max(c["total_pnl_usd"], 0.0) for c in per_chain)
    for c in per_chain:
        c["share_of_total"] = max(c["total_pnl_usd"], 0.0) / total if total > 0 else 0.0
    best = max(per_chain, key=lambda c: c["total_pnl_usd"], default=None)
    if not found and not unavailable:
        raise ApiError("not_found", f"no wallet {address} on the chains asked", "address")
    return snapshot_json(snapshot, {
        "address": address, "window": window, "profiles": found, "per_chain": per_chain,
        "most_profitable_chain": best["chain"] if best else None,
        "unavailable_chains": unavailable, "stale_chains": stale, "lifetime": lifetime},
        ranked_as_of(snapshot) if readable else None)


def all_chains(snapshot: Snapshot) -> list[ChainRef]:
    """Every chain the snapshot serves, by chain id."""
    return sorted(set(chain_index(snapshot).values()), key=lambda c: c.chain_id)


def _lifetime() -> dict[str, Any]:
    return {"deployed_usd": 0.0, "gross_bought_usd": 0.0, "gross_sold_usd": 0.0,
            "realized_pnl_usd": 0.0, "unrealized_pnl_usd": 0.0, "total_pnl_usd": 0.0,
            "unrealized_available": True}


def _add_lifetime(into: dict[str, Any], ever: dict[str, Any], deployed: float,
                  positions: pl.DataFrame) -> None:
    into["deployed_usd"] += deployed
    into["gross_bought_usd"] += ever["invested_usd"]
    into["gross_sold_usd"] += ever["volume_usd"] - ever["invested_usd"]
    for k in ("realized_pnl_usd", "unrealized_pnl_usd", "total_pnl_usd"):
        into[k] += ever[k]
    if positions.filter(pl.col("is_open") & ~pl.col("marked")).height:
        into["unrealized_available"] = False


@per_snapshot(kept=2)
def deployed(snapshot: Snapshot) -> dict[tuple[int, str], float]:
    """The most cost basis each wallet ever had open at once."""
    rows = table(snapshot, "wallet_profiles")
    return dict(zip(zip(rows["chain_id"].to_list(), rows["wallet"].to_list(), strict=True),
                    rows["deployed_usd"].to_list(), strict=True))


@per_snapshot(kept=2)
def traders_by_token(snapshot: Snapshot) -> Spans:
    """Every position with its wallet's tier and type, indexed by (chain id, token) once per
    snapshot: a token's traders are then a slice, not a scan and join of every position."""
    kinds = table(snapshot, "wallet_profiles").select("chain_id", "wallet", "tier", "type")
    newest = newest_rows(whole(snapshot, "wallet_positions"), POSITION_KEY)
    rows = (marked(newest, table(snapshot, "tokens").select(*MARKS_FROM))
            .select("chain_id", "wallet", "token", "bought_usd", "sold_usd", "buys", "sells",
                    "realized_usd", "unrealized_usd", "total_pnl_usd", "held",
                    "basis_is_incomplete", "first_trade_at", "last_trade_at")
            .join(kinds, on=["chain_id", "wallet"], how="left")
            .sort("chain_id", "token"))
    return frame_spans(rows, ("chain_id", "token"))


def _traders(snapshot: Snapshot, chain_id: int, token: str, sort: str,
             cohort: str | None) -> pl.DataFrame:
    rows = traders_by_token(snapshot).rows((chain_id, token))
    if cohort is not None:
        rows = rows.join(cohort_wallets(snapshot, chain_id, token, cohort), on="wallet",
                         how="semi")
    return (rows
            .with_columns(volume_usd=pl.col("bought_usd") + pl.col("sold_usd"),
                          trades=pl.col("buys") + pl.col("sells"))
            .sort([TRADER_SORTS[sort], "wallet"], descending=[True, False], nulls_last=True)
            .with_columns(item=pl.struct(
                address="wallet", tier="tier", type="type", realized_pnl_usd="realized_usd",
                unrealized_pnl_usd="unrealized_usd", total_pnl_usd="total_pnl_usd",
                bought_usd="bought_usd", sold_usd="sold_usd", volume_usd="volume_usd",
                buys="buys", sells="sells", trades="trades", held="held",
                basis_is_incomplete="basis_is_incomplete",
                first_trade_at=wire_time(pl.col("first_trade_at")),
                last_trade_at=wire_time(pl.col("last_trade_at"))).struct.json_encode()))


async def list_traders(request: Request, params: Params) -> Response:
    """The wallets that traded a token, lifetime (no window), by realised PNL unless `sort`
    says otherwise, only those of one of its cohorts when `cohort` names one; 404 when the
    chain lists no such token."""
    chain: ChainRef = params["chain"]
    address, sort, cohort = params["address"], params["sort"], params.get("cohort")
    token_row(request.state.snapshot, chain, address)
    listing = Listing("tokens/traders",
                      lambda s: _traders(s, chain.chain_id, address, sort, cohort),
                      list_scope(chain=chain.chain_id, token=address, sort=sort, cohort=cohort))
    return await page(request, listing, params["limit"], params["cursor"])


HANDLERS = {
    ("GET", "/chains/{chain}/wallets/{address}"): get_wallet,
    ("GET", "/chains/{chain}/wallets/{address}/positions"): get_positions,
    ("GET", "/chains/{chain}/wallets/{address}/rounds"): get_rounds,
    ("GET", "/chains/{chain}/wallets/{address}/trades"): list_trades,
    ("GET", "/chains/{chain}/wallets/{address}/chart"): get_chart,
    ("GET", "/chains/{chain}/wallets/{address}/funding"): get_funding,
    ("GET", "/chains/{chain}/wallets/{address}/best-trades"): best_trades,
    ("GET", "/wallets"): list_wallets,
    ("GET", "/wallets/stats"): wallet_stats,
    ("GET", "/wallets/{address}/overview"): overview,
    ("POST", "/wallets/labels/batch"): label_batch,
    ("GET", "/chains/{chain}/tokens/{address}/traders"): list_traders,
}

"""Wallet profiles (spec 2.4): type and tier, labels, scores with the signals behind them,
funding clusters, and the metrics grid of every wallet and window (zeroes, by decision, for
machinery) that rankings carry and a profile's metrics records are read from."""

import hashlib
from collections.abc import Sequence

import polars as pl

from checks.schemas.wallets import HUMAN_UNKNOWN_CAP
from core.fingerprints import keyed
from core.vocabulary import CAPITAL_TIERS, WALLET_WINDOWS, wire_time
from publish.wallet_rankings import METRIC_COUNTS, METRIC_FIGURES

# Round trips: at least this many, and at least this share of buys, make a bot.
BOT_ROUND_TRIPS, BOT_SHARE = 3, 0.5
# Market makers: many swaps, (nearly) all in established pools, on both sides.
MM_SWAPS, MM_ESTABLISHED, MM_TWO_SIDED = 40, 0.95, 0.6
# Snipers: at least two pools entered, half of them among a new pool's first swaps.
SNIPER_ENTRIES, SNIPER_SHARE = 2, 0.5
# Timing evidence: fewer swaps or hours of day than this is too thin to call a wallet human.
HUMAN_SWAPS, HUMAN_HOURS = 10, 3
# A funder of more wallets than this is a service (faucet, payroll), not a cluster's owner.
CLUSTER_MAX = 50
TIERS = tuple(zip((100_000.0, 10_000.0, 1_000.0, 100.0, 0.0), CAPITAL_TIERS, strict=True))
SCAMMER_BANDS = ((60, "high"), (30, "medium"), (1, "low"), (0, "none"))
# Label kinds beyond the lake's 1..6 (exchange, bridge, MEV bot, scam deployer, team, market
# maker): what behaviour shows.
BEHAVIOUR_LABELS = {"bot": (7, "Bot"), "market_maker": (6, "Market Maker"),
                    "sniper": (8, "Sniper"), "deployer": (9, "Token Deployer")}
COPY_MIN_RATED = 5
# The profile's list item parts (spec 2.5) kept as JSON beside it, by the column they come
# from: a ranking item is made of them and one window's metrics record.
ITEM_PARTS = {"address": "wallet", "chain": "chain", "labels": "labels", "user_score": "user",
              "scammer_score": "scammer"}


def cluster_number(chain_id: int, funder: str) -> int:
    """A funding cluster's id: stable across snapshots, from the chain and the funder."""
    return int.from_bytes(hashlib.sha256(f"{chain_id}:{funder}".encode()).digest()[:6], "big")


def funding_clusters(funding: pl.DataFrame, labels: pl.DataFrame) -> pl.DataFrame:
    """Per funded wallet: its first funder, when, and its funding cluster: the wallets one
    funder was first to fund, when it did so for 2 to CLUSTER_MAX of them and is no exchange
    or bridge (0 for no cluster)."""
    first = funding.sort("ts").group_by("chain_id", "wallet").agg(
        funder=pl.col("funder").first(), funded_at=pl.col("ts").first())
    services = (labels.filter(pl.col("kind").is_in([1, 2]))
                .select("chain_id", funder="address").unique().with_columns(service=pl.lit(True)))
    # A cluster's id is worked out once per funder (a hundred or so), not once per wallet.
    owners = (first.group_by("chain_id", "funder").agg(wallets=pl.len())
              .join(services, on=["chain_id", "funder"], how="left")
              .filter(pl.col("service").is_null(), pl.col("wallets").is_between(2, CLUSTER_MAX))
              .select("chain_id", "funder", cluster_id=pl.struct("chain_id", "funder")
                      .map_elements(lambda r: cluster_number(r["chain_id"], r["funder"]),
                                    return_dtype=pl.Int64)))
    return first.join(owners, on=["chain_id", "funder"], how="left").with_columns(
        pl.col("cluster_id").fill_null(0))


def classify(traits: pl.DataFrame) -> pl.DataFrame:
    """Type from behaviour, in order: bot, market maker, deployer, sniper, trader; a wallet
    that never swapped is a holder. Also why machinery is skipped, and the timing verdict."""
    share = pl.col("round_trips") / pl.col("buys").clip(1)
    two_sided = pl.min_horizontal("buys", "sells") / pl.max_horizontal("buys", "sells").clip(1)
    established = pl.col("established") / pl.col("swaps").clip(1)
    sniped = pl.col("sniped") / pl.col("entries").clip(1)
    bot = (pl.col("round_trips") >= BOT_ROUND_TRIPS) & (share >= BOT_SHARE)
    mm = ((pl.col("swaps") >= MM_SWAPS) & (established >= MM_ESTABLISHED)
          & (two_sided >= MM_TWO_SIDED))
    sniper = (pl.col("entries") >= SNIPER_ENTRIES) & (sniped >= SNIPER_SHARE)
    pct = (share * 100).round(0).cast(pl.Int64).cast(pl.String)
    return traits.with_columns(
        round_trip_share=share, two_sided=two_sided, established_share=established,
        sniped_share=sniped,
        type=pl.when(pl.col("swaps") == 0).then(pl.lit("holder"))
        .when(bot).then(pl.lit("bot")).when(mm).then(pl.lit("market_maker"))
        .when(pl.col("deployed_tokens") > 0).then(pl.lit("deployer"))
        .when(sniper).then(pl.lit("sniper")).otherwise(pl.lit("trader")),
        human_known=(pl.col("swaps") >= HUMAN_SWAPS) & (pl.col("hours") >= HUMAN_HOURS) & ~bot,
    ).with_columns(
        rebuild_skipped=pl.col("type").is_in(["bot", "market_maker"]),
        rebuild_skip_reason=pl.when(pl.col("type") == "bot").then(
            pl.format("bot: {} of {} buys ({}%) were sold back in the pool's very next swap",
                      "round_trips", "buys", pct))
        .when(pl.col("type") == "market_maker").then(
            pl.format("market maker: {} swaps, all in established pools, on both sides",
                      "swaps"))
        .otherwise(pl.lit("")))


def tier_of(usd: pl.Expr) -> pl.Expr:
    """Capital tier from the most cost basis the wallet ever had open at once."""
    expr = pl.lit(TIERS[-1][1])
    for floor, name in reversed(TIERS[:-1]):
        expr = pl.when(usd >= floor).then(pl.lit(name)).otherwise(expr)
    return expr


def band_of(value: pl.Expr) -> pl.Expr:
    """The scammer band of a scammer score."""
    expr = pl.lit("none")
    for floor, name in reversed(SCAMMER_BANDS[:-1]):
        expr = pl.when(value >= floor).then(pl.lit(name)).otherwise(expr)
    return expr


def _signal(kind: str, title: str, detail: pl.Expr, subject: pl.Expr, points: pl.Expr,
            occurrences: pl.Expr, last_seen: pl.Expr, direction: str, target: str) -> pl.Expr:
    return pl.struct(kind=pl.lit(kind), title=pl.lit(title), detail=detail,
                     subject=subject.cast(pl.String), points=points.cast(pl.Float64),
                     occurrences=occurrences.cast(pl.Int64), last_seen=last_seen,
                     direction=pl.lit(direction), target=pl.lit(target))


def scammer_signals() -> list[tuple[pl.Expr, pl.Expr]]:
    """Scammer evidence: when each signal is raised, and the signal."""
    iso = pl.col("last_active_at")
    candidates = [
        (pl.col("condemned_tokens") > 0,
         _signal("condemned_deployment", "Deployed condemned tokens",
                 pl.format("{} token(s) it deployed are condemned (status 999 or 1000)",
                           "condemned_tokens"), pl.col("wallet"),
                 pl.min_horizontal(pl.col("condemned_tokens") * 60, 100), pl.col("condemned_tokens"),
                 iso, "negative", "scammer_score")),
        (pl.col("rugged_pools") > 0,
         _signal("liquidity_pulled", "Pulled liquidity from its own pools",
                 pl.format("removed most of the liquidity of {} pool(s) it created",
                           "rugged_pools"), pl.col("wallet"),
                 pl.min_horizontal(pl.col("rugged_pools") * 30, 60), pl.col("rugged_pools"),
                 iso, "negative", "scammer_score")),
        (pl.col("scam_label"),
         _signal("labelled_scam_deployer", "Known scam deployer", pl.lit("labelled by a source"),
                 pl.col("wallet"), pl.lit(40), pl.lit(1), iso, "negative", "scammer_score")),
        (pl.col("scam_cluster") & ~pl.col("scam_label") & (pl.col("condemned_tokens") == 0),
         _signal("scam_cluster", "Funded alongside scam deployers",
                 pl.lit("shares its first funder with a wallet that deployed condemned tokens"),
                 pl.col("cluster_id"), pl.lit(20), pl.lit(1), iso, "negative", "scammer_score")),
    ]
    return candidates


def user_signals() -> list[tuple[pl.Expr, pl.Expr]]:
    """What the 30-day record says for copying a wallet: when each signal is raised, and the
    signal."""
    rate = pl.when(pl.col("m_rated_positions") >= COPY_MIN_RATED).then("m_win_rate") \
        .otherwise("m_trade_win_rate")
    candidates = [
        (pl.col("m_trades") > 0,
         _signal("win_rate", "Wins", pl.format("win rate {} over {} rated positions",
                                                rate.round(2), "m_rated_positions"),
                 pl.lit("30d"), (rate * 40).round(1), pl.col("m_rated_positions"),
                 pl.col("last_active_at"), "positive", "user_score")),
        (pl.col("m_realized_pnl_usd") > 0,
         _signal("roi", "Return on closed cost", pl.format("roi {}", pl.col("m_roi").round(3)),
                 pl.lit("30d"), (pl.col("m_roi").clip(0, 1) * 30).round(1),
                 pl.col("m_closed_positions"), pl.col("last_active_at"), "positive",
                 "user_score")),
        (pl.col("m_rated_positions") > 0,
         _signal("sample", "Rated sample", pl.format("{} rated positions", "m_rated_positions"),
                 pl.lit("30d"), pl.min_horizontal(pl.col("m_rated_positions") * 2, 20),
                 pl.col("m_rated_positions"), pl.col("last_active_at"), "positive",
                 "user_score")),
        (pl.col("m_gross_profit_usd") > pl.col("m_gross_loss_usd"),
         _signal("profit_factor", "Profits outweigh losses",
                 pl.format("gross profit {} vs loss {}", pl.col("m_gross_profit_usd").round(2),
                           pl.col("m_gross_loss_usd").round(2)),
                 pl.lit("30d"), pl.lit(10), pl.col("m_winning_trades"),
                 pl.col("last_active_at"), "positive", "user_score")),
    ]
    return candidates


def _label(code: int, name: str) -> pl.Expr:
    return pl.struct(kind=pl.lit(code, pl.Int64), name=pl.lit(name), confidence=pl.lit(0.9),
                     token_address=pl.lit(None, pl.String))


def _listed(frame: pl.DataFrame, candidates: list[tuple[pl.Expr, pl.Expr]],
            leading: str | None = None) -> pl.Series:
    """Per row of `frame`, the items of its list column `leading` (if any), then the items
    whose condition holds there, in the candidates' order (an empty list for none). Items are
    made only for the rows that keep them and gathered into lists once, which costs a fraction
    of a per-row list literal for every candidate, or of joining two lists on every row."""
    rows = frame.with_row_index("_row")
    first = [] if leading is None else [
        rows.select("_row", item=leading).drop_nulls("item").explode("item")]
    items = pl.concat([*first, *(rows.filter(cond.fill_null(False)).select("_row", item=item)
                                 for cond, item in candidates)])
    lists = items.sort("_row", maintain_order=True).group_by("_row").agg("item")
    return (rows.select("_row").join(lists, on="_row", how="left", maintain_order="left")
            .select(pl.col("item").fill_null([]))).to_series()


def score(candidates: list[tuple[pl.Expr, pl.Expr]]) -> pl.Expr:
    """The points of the signals raised, added up to a 0..100 score."""
    points = pl.sum_horizontal([pl.when(cond).then(sig.struct.field("points")).otherwise(0.0)
                                for cond, sig in candidates])
    return points.clip(0, 100).round(0).cast(pl.Int64)


def metric_grid(wallets: pl.DataFrame, windows: pl.DataFrame,
                names: Sequence[str] = WALLET_WINDOWS,
                carried: tuple[str, ...] = ()) -> pl.DataFrame:
    """One metrics record per wallet and window (of `names`), with the wallet's `carried`
    columns: a window without activity is zeroes, and so is every window of a wallet whose
    rebuild is skipped (a decision, not an absence)."""
    order = pl.DataFrame({"window": names, "window_order": range(len(names))})
    zero = [pl.when(pl.col("rebuild_skipped")).then(0).otherwise(pl.col(c).fill_null(0)).alias(c)
            for c in (*METRIC_FIGURES, *METRIC_COUNTS) if c != "profit_factor"]
    # Wallets sorted first, then each one's windows in order: the grid comes out sorted without
    # sorting its five rows per wallet, and finds its records by fingerprint, not by address.
    found = windows.with_columns(key=keyed("chain_id", "wallet")).drop("chain_id", "wallet")
    return (wallets.select("chain_id", "wallet", "rebuild_skipped", *carried)
            .sort("chain_id", "wallet")
            .with_columns(key=keyed("chain_id", "wallet"))
            .join(order, how="cross", maintain_order="left_right")
            .join(found, on=["key", "window"], how="left", maintain_order="left").drop("key")
            .with_columns(*zero, profit_factor=pl.when(~pl.col("rebuild_skipped"))
                          .then("profit_factor"))
            .with_columns(pl.col(*METRIC_FIGURES).cast(pl.Float64),
                          pl.col(*METRIC_COUNTS).cast(pl.Int64)))


def assemble_profiles(parts: dict[str, pl.DataFrame]) -> pl.DataFrame:
    """Every wallet the ledger knows on every chain: its profile fields, scores and signals,
    and its wire JSON but for the metrics records (`head`), which the edge adds from the
    wallet's ranking rows: 5 records a wallet are 3 KB of JSON, most never asked for."""
    chains = parts["chains"]
    tokens = parts["tokens"]
    deployed = tokens.group_by("chain_id", wallet="deployer").agg(
        deployed_tokens=pl.len(),
        condemned_tokens=pl.col("status").is_in([999, 1000]).sum())
    rugged = (parts["pair_risk"].filter("rugged")
              .join(parts["pair_tokens"].select("chain_id", "pair", "creator"),
                    on=["chain_id", "pair"])
              .group_by("chain_id", wallet="creator").agg(rugged_pools=pl.len()))
    labels = parts["labels"].group_by("chain_id", wallet="address").agg(
        lake_labels=pl.struct(kind="kind", name="name", confidence="confidence",
                              token_address="token_address"),
        scam_label=(pl.col("kind") == 4).any())
    frame = (parts["traits"]
             .join(deployed, on=["chain_id", "wallet"], how="left")
             .join(rugged, on=["chain_id", "wallet"], how="left")
             .join(labels, on=["chain_id", "wallet"], how="left")
             .join(funding_clusters(parts["funding"], parts["labels"]),
                   on=["chain_id", "wallet"], how="left")
             .with_columns(pl.col("deployed_tokens", "condemned_tokens", "rugged_pools")
                           .fill_null(0), pl.col("scam_label").fill_null(False),
                           cluster_id=pl.col("cluster_id").fill_null(0)))
    frame = classify(frame).with_columns(
        tier=tier_of(pl.col("deployed_usd")),
        first_onchain=pl.min_horizontal("first_seen", "funded_at"),
        age_is_estimated=pl.col("funded_at").is_null())
    frame = frame.with_columns(first_seen_at=wire_time(pl.col("first_seen")),
                               first_onchain_at=wire_time(pl.col("first_onchain")),
                               last_active_at=wire_time(pl.col("last_active")))
    scam_clusters = frame.filter(pl.col("condemned_tokens") > 0, pl.col("cluster_id") > 0) \
        .select("chain_id", "cluster_id").unique().with_columns(scam_cluster=pl.lit(True))
    frame = frame.join(scam_clusters, on=["chain_id", "cluster_id"], how="left").with_columns(
        scam_cluster=pl.col("scam_cluster").fill_null(False))
    month = metric_grid(frame, parts["windows"], ("30d",)).select(
        "chain_id", "wallet", *[pl.col(c).alias(f"m_{c}") for c in (*METRIC_FIGURES,
                                                                    *METRIC_COUNTS)])
    frame = frame.with_columns(scammer_value=score(scammer_signals())).join(
        month, on=["chain_id", "wallet"], how="left")
    frame = frame.with_columns(user_raw=score(user_signals())).with_columns(
        scammer_band=band_of(pl.col("scammer_value")),
        user_score=pl.when(pl.col("rebuild_skipped")).then(0)
        .when(~pl.col("human_known")).then(pl.min_horizontal("user_raw", HUMAN_UNKNOWN_CAP))
        .otherwise("user_raw"))
    frame = frame.with_columns(
        user_status=pl.when(pl.col("rebuild_skipped")).then(pl.lit("skipped"))
        .when(pl.col("m_trades") == 0).then(pl.lit("inactive"))
        .when(~pl.col("human_known")).then(pl.lit("capped")).otherwise(pl.lit("scored")),
        copy_eligible=~pl.col("rebuild_skipped") & pl.col("human_known")
        & (pl.col("scammer_band") == "none") & (pl.col("m_rated_positions") >= COPY_MIN_RATED)
        & (pl.col("m_total_pnl_usd") > 0))
    return _with_head(frame.join(chains, on="chain_id"))


def _with_head(frame: pl.DataFrame) -> pl.DataFrame:
    # The lake's labels, then what behaviour shows.
    labels = _listed(frame, [(pl.col("type") == kind, _label(code, name))
                             for kind, (code, name) in BEHAVIOUR_LABELS.items()], "lake_labels")
    chain = pl.struct(slug="slug", chain_id="chain_id")
    frame = frame.with_columns(
        labels=labels,
        chain=chain,
        user=pl.struct(value="user_score", status="user_status"),
        scammer=pl.struct(value="scammer_value", band="scammer_band"),
        signals=_listed(frame, scammer_signals() + user_signals()))
    return frame.with_columns(**{f"item_{part}": _json(pl.col(column))
                                 for part, column in ITEM_PARTS.items()}, head=pl.struct(
        address="wallet", chain="chain", tier="tier", type="type", labels="labels",
        human_known="human_known", rebuild_skipped="rebuild_skipped",
        copy_eligible="copy_eligible", age_is_estimated="age_is_estimated",
        rebuild_skip_reason="rebuild_skip_reason", cluster_id="cluster_id",
        first_seen_at="first_seen_at", first_onchain_at="first_onchain_at",
        last_active_at="last_active_at", user_score="user", scammer_score="scammer",
        signals="signals").struct.json_encode())


# What a ranking reads of a profile: never its head, most of the profile's bytes.
RANKING_INPUTS = ("chain_id", "wallet", "rebuild_skipped", "tier", "type", "copy_eligible",
                  "user_score", "scammer_band", *[f"item_{part}" for part in ITEM_PARTS])


def assemble_rankings(profiles: pl.DataFrame, windows: pl.DataFrame) -> pl.DataFrame:
    """One ranking row per wallet and window (spec 2.5): the figures filters and sorts read,
    that window's metrics, and the wallet's parts of the list item as JSON; the item itself is
    put together only for the rows a page shows (`publish.wallet_rankings.ranking_items`)."""
    carried = tuple(c for c in RANKING_INPUTS if c not in ("chain_id", "wallet", "rebuild_skipped"))
    return (metric_grid(profiles, windows, carried=carried)
            .select(pl.exclude("window_order", "rebuild_skipped", *carried), *carried))


def _json(value: pl.Expr) -> pl.Expr:
    """A column's values as JSON text, each on its own."""
    return pl.struct(value.alias("v")).struct.json_encode().str.slice(5).str.head(-1)

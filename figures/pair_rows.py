"""Pair rows (spec 2.3): every block of a pair, one row per pair, with its JSON `item`."""

from datetime import datetime, timedelta

import polars as pl

import core.windows
from core.quotes import prices_at
from core.token_market import tax_measured
from core.vocabulary import (
    HIGH_BUY_TAX,
    HIGH_SELL_TAX,
    OWNER_RISK_POINTS,
    PAIR_WINDOWS,
    POSITION_BASED,
)
from core.windows import (
    around,
    as_swaps,
    filled_windows,
    first_at,
    window_columns,
    window_fields,
)
from core.wire import iso, pair_status, status_text
from figures.ownership import token_owners
from figures.taxes import token_taxes

KEY = ["chain_id", "pair"]
SCORE_TITLES = ((80, "good"), (50, "fair"), (20, "poor"), (0, "dangerous"))
# Risk signals: (kind, group, severity, weight in score points, condition column).
SIGNALS = (
    ("honeypot", "cannot_exit", "critical", 100.0, "honeypot"),
    ("liquidity_pulled", "rug", "critical", 100.0, "rugged"),
    ("condemned_token", "token_status", "critical", 100.0, "condemned"),
    ("high_sell_tax", "cannot_exit", "high", 30.0, "high_sell_tax"),
    ("high_buy_tax", "cost", "medium", 15.0, "high_buy_tax"),
    ("deployer_abuser", "deployer", "high", 30.0, "deployer_abuser"),
    ("lp_unlocked", "liquidity", "medium", 15.0, "lp_unlocked"),
    ("owner_powers", "owner", "medium", float(OWNER_RISK_POINTS), "owner_risk"),
    ("thin_liquidity", "liquidity", "low", 10.0, "thin_liquidity"),
    ("unverified_contract", "contract", "low", 5.0, "unverified_contract"),
)
# Share of the LP supply locked or burned under which a pair's liquidity counts as unlocked.
LOCKED_ENOUGH = 0.5


def curve_progress(stage: pl.Expr, quote_reserve: pl.Expr, graduation: pl.Expr) -> pl.Expr:
    """How far a launchpad's bonding curve is to its graduation: the quote reserve it holds
    over the reserve at which it graduates, at most 1; 1 once completed or migrated; null
    where the graduation is not known (docs/market.md, "Curve progress")."""
    held = (quote_reserve.fill_null(0.0) / graduation).clip(0.0, 1.0)
    return (pl.when(stage.is_in(["completed", "migrated"])).then(1.0)
            .when((stage == "curve") & graduation.is_not_null()).then(held))


def trending(makers: pl.Expr, volume: pl.Expr, thin: pl.Expr) -> pl.Expr:
    """The trending score of a window: distinct makers times the log of the volume, a tenth of
    that for a pool under its chain's minimum liquidity."""
    return makers * (1.0 + volume).log() * pl.when(thin).then(0.1).otherwise(1.0)


def holding(low: str, high: str, current: str | pl.Expr, as_of: datetime) -> dict[str, pl.Expr]:
    """A 24h range widened to hold the current value, observed at `as_of`: the range is over
    every observation of the day and now, so the value a row shows never falls outside it."""
    now = pl.col(current) if isinstance(current, str) else current
    at = pl.lit(as_of).cast(pl.Datetime("us", "UTC"))
    below = now.is_not_null() & (pl.col(low).is_null() | (now < pl.col(low)))
    above = now.is_not_null() & (pl.col(high).is_null() | (now > pl.col(high)))
    return {low: pl.when(below).then(now).otherwise(pl.col(low)),
            high: pl.when(above).then(now).otherwise(pl.col(high)),
            f"{low}_at": pl.when(below).then(at).otherwise(pl.col(f"{low}_at")),
            f"{high}_at": pl.when(above).then(at).otherwise(pl.col(f"{high}_at"))}


def seconds(column: str) -> pl.Expr:
    """A UTC timestamp as the wire's unix seconds (a number, to the millisecond)."""
    return (pl.col(column).dt.epoch("ms") / 1000).alias(f"{column}_seconds")


def window_prices(legs: pl.LazyFrame, as_of: datetime) -> pl.LazyFrame:
    """Per pair: the last swap price and when, each window's price change and the 24h range,
    as core.windows defines them, with their instants as timestamps."""
    def instant(column: str) -> pl.Expr:
        return pl.from_epoch(column, "ms").dt.replace_time_zone("UTC").cast(
            pl.Datetime("us", "UTC"))

    return core.windows.window_prices(as_swaps(legs), int(as_of.timestamp() * 1000)).with_columns(
        last_trade_at=instant("last_trade_ms"), range_low_at=instant("range_low_ms"),
        range_high_at=instant("range_high_ms")).drop("last_trade_ms", "range_low_ms",
                                                     "range_high_ms")


def native_prices(frames: dict[str, pl.LazyFrame], as_of: datetime) -> pl.LazyFrame:
    """Per chain: its native token's USD price at the watermark."""
    return (frames["chains"].join(frames["tokens"].select("chain_id", "address", "price_feed_id"),
                                  left_on=["chain_id", "native_token"],
                                  right_on=["chain_id", "address"])
            .join(prices_at(frames["quote_prices"], int(as_of.timestamp())),
                  left_on="price_feed_id", right_on="feed_id")
            .select("chain_id", native_usd="price_usd"))


def in_native(base_usd: str, quote_usd: str) -> dict[str, pl.Expr]:
    """The base's and the quote's prices in the chain's native token (`native_usd`)."""
    return {"base_price_native": pl.col(base_usd) / pl.col("native_usd"),
            "quote_price_native": pl.col(quote_usd) / pl.col("native_usd")}


def quote_ranges(prices: pl.LazyFrame, as_of: datetime) -> pl.LazyFrame:
    """Per price feed: its lowest and highest USD price over the last 24 hours, and when."""
    end = int(as_of.timestamp())
    return (prices.filter(pl.col("ts") > end - 86_400, pl.col("ts") <= end)
            .with_columns(at=pl.from_epoch("ts", "s").dt.replace_time_zone("UTC"))
            .group_by("feed_id").agg(
                quote_range_low=pl.col("price_usd").min(),
                quote_range_high=pl.col("price_usd").max(),
                quote_range_low_at=first_at("at", "price_usd", "min"),
                quote_range_high_at=first_at("at", "price_usd", "max"))
            .rename({"feed_id": "quote_feed_id"}))


def liquidity_range(reserves: pl.LazyFrame, pairs: pl.LazyFrame, as_of: datetime) -> pl.LazyFrame:
    """Per pair: the lowest and highest liquidity (both sides, USD) over the last 24 hours."""
    b0 = pl.col("base_is_token0")
    day = reserves.filter(pl.col("block_time") > pl.lit(as_of) - pl.duration(days=1),
                          pl.col("block_time") <= as_of)
    valued = day.join(pairs.select(*KEY, "base_is_token0", "quote_decimals", "quote_usd"),
                      on=KEY).with_columns(
        usd=2.0 * pl.when(b0).then("reserve1").otherwise("reserve0").cast(pl.Float64)
        / pl.lit(10.0).pow(pl.col("quote_decimals")) * pl.col("quote_usd"))
    return valued.group_by(KEY).agg(
        liq_low=pl.col("usd").min(), liq_high=pl.col("usd").max(),
        liq_low_at=first_at("block_time", "usd", "min"),
        liq_high_at=first_at("block_time", "usd", "max"))


def lp_supply(events: pl.LazyFrame, as_of: datetime) -> pl.LazyFrame:
    """Per pair: its LP tokens in existence at `as_of` (minted less burned), raw."""
    return events.filter(pl.col("block_time") <= as_of).group_by(KEY).agg(
        lp_supply=pl.when(pl.col("kind") == "mint").then(pl.col("liquidity").cast(pl.Float64))
        .otherwise(-pl.col("liquidity").cast(pl.Float64)).sum())


def lp_security(events: pl.LazyFrame, locks: pl.LazyFrame, as_of: datetime) -> pl.LazyFrame:
    """Per pair: shares of the LP supply burned and locked, the top lock provider, the earliest
    unlock still ahead."""
    supply = lp_supply(events, as_of)
    held = (locks.filter(pl.col("locked_at") <= as_of,
                         pl.col("unlock_at").is_null() | (pl.col("unlock_at") > as_of))
            .with_columns(amount=pl.col("amount").cast(pl.Float64)))
    by_kind = held.group_by(KEY).agg(
        burned=pl.col("amount").filter(pl.col("kind") == "burn").sum(),
        locked=pl.col("amount").filter(pl.col("kind") == "lock").sum(),
        earliest_unlock=pl.col("unlock_at").filter(pl.col("kind") == "lock").min())
    top = (held.filter(pl.col("kind") == "lock", pl.col("provider").is_not_null())
           .group_by(*KEY, "provider").agg(pl.col("amount").sum())
           .sort("amount", "provider", descending=[True, False])
           .group_by(KEY).agg(top_lock_provider=pl.col("provider").first()))
    share = pl.when(pl.col("lp_supply") > 0)
    return (supply.join(by_kind, on=KEY, how="left").join(top, on=KEY, how="left")
            .select(*KEY, "top_lock_provider", "earliest_unlock",
                    burned_pct=share.then(
                        (pl.col("burned").fill_null(0) / pl.col("lp_supply") * 100).clip(0, 100))
                    .otherwise(0.0),
                    locked_pct=share.then(
                        (pl.col("locked").fill_null(0) / pl.col("lp_supply") * 100).clip(0, 100))
                    .otherwise(0.0)))


def deployer_reputation(pairs: pl.LazyFrame, risk: pl.LazyFrame) -> pl.LazyFrame:
    """Per chain and creator: pairs created, those that turned out scams, first seen."""
    return (pairs.join(risk.select(*KEY, "is_scam"), on=KEY, how="left")
            .group_by("chain_id", "creator").agg(
                pairs_created=pl.len().cast(pl.Int64),
                abused_launches=pl.col("is_scam").fill_null(False).sum().cast(pl.Int64),
                first_seen_at=pl.col("created_at").min())
            .with_columns(rep_score=(100 - 100 * pl.col("abused_launches")
                                     // pl.col("pairs_created")).cast(pl.Int64))
            .with_columns(rep_status=pl.when(pl.col("abused_launches") == 0).then(pl.lit("clean"))
                          .when(pl.col("rep_score") >= 50).then(pl.lit("suspicious"))
                          .otherwise(pl.lit("abuser"))))


def perp_blocks(markets: pl.LazyFrame, snapshots: pl.LazyFrame, as_of: datetime) -> pl.LazyFrame:
    """Per perp market: the latest observation as the pair row's perp block."""
    latest = (snapshots.filter(pl.col("observed_at") <= as_of)
              .sort("observed_at").group_by("chain_id", "market").last())
    day = (snapshots.filter(pl.col("observed_at") > pl.lit(as_of) - pl.duration(days=1),
                            pl.col("observed_at") <= as_of)
           .group_by("chain_id", "market").agg(day_notional_volume=pl.col("volume_usd").sum()))
    oi = pl.col("oi_long_usd") + pl.col("oi_short_usd")
    return (markets.join(latest, on=["chain_id", "market"], how="left")
            .join(day, on=["chain_id", "market"], how="left")
            .select("chain_id", pair="market", perp=pl.struct(
                "max_leverage", "only_isolated",
                funding_rate="funding_long_1h",
                open_interest=oi / pl.col("mark_price"), open_interest_usd=oi,
                mark_price="mark_price", oracle_price="oracle_price",
                premium=(pl.col("mark_price") / pl.col("oracle_price") - 1.0),
                day_notional_volume=pl.col("day_notional_volume").fill_null(0.0),
                synced_at=iso("observed_at"))))


def perp_windows(snapshots: pl.LazyFrame, as_of: datetime) -> pl.LazyFrame:
    """Per perp market (as its pair): the mark price now and its change in each window, the
    price a perp's pair row shows where a pool shows its swaps'."""
    cut = {w: as_of - timedelta(seconds=s) for w, s in PAIR_WINDOWS.items()}
    seen = (snapshots.filter(pl.col("observed_at") <= as_of)
            .select("chain_id", "observed_at", "mark_price", pair="market"))
    marks = around(seen, "observed_at", ("mark_price",), {"now": as_of, **cut})
    now = pl.col("mark_price_before_now")
    return marks.select(
        *KEY, perp_mark=now, **{
            f"perp_change_{w}": pl.when(o > 0).then((now / o - 1.0) * 100.0).otherwise(0.0)
            for w in PAIR_WINDOWS
            for o in [pl.coalesce(f"mark_price_before_{w}", f"mark_price_after_{w}")]})


def _token(side: str, position: pl.Expr) -> pl.Expr:
    """The tokens[] entry of the base or the quote token."""
    return pl.struct(
        name=f"{side}_name", symbol=f"{side}_symbol", address=side,
        status=status_text(f"{side}_token_status"), chain_id="chain_id",
        price_usd=f"{side}_price_usd", price_native=f"{side}_price_native", position=position,
        decimals=f"{side}_decimals", reserve=f"{side}_reserve",
        total_supply=f"{side}_total_supply",
        price_range=pl.struct(low=f"{side}_range_low", high=f"{side}_range_high",
                              low_at=f"{side}_range_low_at_seconds",
                              high_at=f"{side}_range_high_at_seconds"))


def assemble(frames: dict[str, pl.LazyFrame], as_of: datetime) -> pl.DataFrame:
    """Every pair row: wide columns the checks and lists read, and `item`, the wire JSON."""
    tokens = frames["tokens"].select(
        "chain_id", "address", "name", "symbol", "status", "contract_verified", "decimals",
        total_supply=pl.col("total_supply_raw").cast(pl.Float64)
        / pl.lit(10.0).pow(pl.col("decimals"))).join(
            token_taxes(frames["tokens"], frames["token_taxes"]), on=["chain_id", "address"],
            how="left")
    chains = frames["chains"].select("chain_id", "slug", "native_token", "min_liquidity_usd")
    native = native_prices(frames, as_of)
    state = frames["pair_state"]
    base = frames["pair_tokens"].join(
        frames["pairs"].select("chain_id", pair="address", factory_type="factory_type",
                               lp_token_symbol="lp_token_symbol", created_block="created_block",
                               created_log_index="created_log_index", created_tx="created_tx",
                               launchpad_stage="launchpad_stage",
                               launchpad_completed_at="launchpad_completed_at",
                               migrated_pool="migrated_pool",
                               graduation_quote_raw="graduation_quote_raw"), on=KEY, how="left")
    pair_prices = window_prices(frames["swap_legs"], as_of)
    wide = (base.join(state, on=KEY, how="left")
            .join(frames["pair_activity"], on=KEY, how="left")
            .join(pair_prices, on=KEY, how="left")
            .join(frames["pair_risk"], on=KEY, how="left")
            .join(chains, on="chain_id", how="left")
            .join(native, on="chain_id", how="left")
            .join(quote_ranges(frames["quote_prices"], as_of), on="quote_feed_id", how="left")
            .join(tokens.rename(lambda c: c if c in ("chain_id", "address") else f"base_{c}"),
                  left_on=["chain_id", "base"], right_on=["chain_id", "address"], how="left")
            .join(token_owners(frames["tokens"], frames["ownership"]).select(
                "chain_id", base="address", owner_renounced="renounced", owner_risk="owner_risk"),
                  on=["chain_id", "base"], how="left")
            .join(tokens.rename(lambda c: c if c in ("chain_id", "address") else f"quote_{c}"),
                  left_on=["chain_id", "quote"], right_on=["chain_id", "address"], how="left")
            .join(liquidity_range(frames["reserves"], base.join(
                state.select(*KEY, "quote_usd"), on=KEY, how="left"), as_of), on=KEY, how="left")
            .join(lp_security(frames["liquidity_events"], frames["lp_locks"], as_of), on=KEY,
                  how="left")
            .join(deployer_reputation(base, frames["pair_risk"]), on=["chain_id", "creator"],
                  how="left")
            .join(perp_blocks(frames["perp_markets"], frames["perp_snapshots"], as_of), on=KEY,
                  how="left")
            .join(perp_windows(frames["perp_snapshots"], as_of), on=KEY, how="left"))
    perp = pl.col("is_perp").fill_null(False)
    # A perp market trades no swaps in a pool: its row shows its own mark price. Its notional
    # volume has no taker side in the lake, so it stays in the perp block
    # (`day_notional_volume`) and the windows keep volume = buys + sells (docs/market.md).
    wide = wide.with_columns(
        price_usd=pl.when(perp).then(pl.coalesce("perp_mark", "price_usd"))
        .otherwise("price_usd"),
        **{f"price_change_{w}": pl.when(perp).then(pl.col(f"perp_change_{w}"))
           .otherwise(f"price_change_{w}") for w in PAIR_WINDOWS})
    wide = wide.with_columns(
        *filled_windows(),
        *[pl.col(c).fill_null(False)
          for c in ("rugged", "condemned", "honeypot", "is_scam", "owner_risk")],
        burned_pct=pl.col("burned_pct").fill_null(0.0),
        locked_pct=pl.col("locked_pct").fill_null(0.0),
        base_price_usd=pl.col("price_usd"), quote_price_usd=pl.col("quote_usd"),
        pair_fee=pl.col("fee_bps") / 10_000,
        liquidity_onchain_usd=pl.col("quote_reserve") * pl.col("quote_usd"),
        graduation_quote=pl.col("graduation_quote_raw").cast(pl.Float64)
        / pl.lit(10.0).pow(pl.col("quote_decimals")),
    ).with_columns(
        curve_progress=curve_progress(pl.col("launchpad_stage"), pl.col("quote_reserve"),
                                      pl.col("graduation_quote")),
        graduation_usd=pl.col("graduation_quote") * pl.col("quote_usd"),
        **in_native("base_price_usd", "quote_price_usd"),
        fees_usd_24h=pl.col("volume_h24_usd") * pl.col("pair_fee"),
        high_sell_tax=pl.col("base_sell_tax").fill_null(0.0) >= HIGH_SELL_TAX,
        high_buy_tax=pl.col("base_buy_tax").fill_null(0.0) >= HIGH_BUY_TAX,
        deployer_abuser=pl.col("rep_status") == "abuser",
        # A position-based pool has no LP supply to burn or lock: the signal does not apply
        # (docs/market.md); its creator pulling the liquidity is `liquidity_pulled`.
        lp_unlocked=~pl.col("is_perp") & ~pl.col("factory_type").is_in(POSITION_BASED)
        & (pl.col("burned_pct") + pl.col("locked_pct") < LOCKED_ENOUGH * 100),
        thin_liquidity=~pl.col("is_perp") & (pl.col("liquidity_usd").fill_null(0.0)
                                             < pl.col("min_liquidity_usd")),
        unverified_contract=~pl.col("base_contract_verified").fill_null(False),
    ).rename({"range_low": "base_range_low", "range_high": "base_range_high",
              "range_low_at": "base_range_low_at", "range_high_at": "base_range_high_at",
              "base_status": "base_token_status", "quote_status": "quote_token_status"})
    wide = wide.with_columns(
        **holding("base_range_low", "base_range_high", "base_price_usd", as_of),
        **holding("quote_range_low", "quote_range_high", "quote_price_usd", as_of),
        **holding("liq_low", "liq_high", "liquidity_usd", as_of))
    signal_list = pl.concat_list([
        pl.when(pl.col(cond)).then(pl.struct(
            kind=pl.lit(kind), weight=pl.lit(weight), group=pl.lit(group),
            severity=pl.lit(severity), observed_at=iso(pl.lit(as_of))))
        for kind, group, severity, weight, cond in SIGNALS]).list.drop_nulls()
    wide = wide.with_columns(risk_signals=signal_list).with_columns(
        score=(100.0 - pl.col("risk_signals").list.eval(pl.element().struct.field("weight"))
               .list.sum()).clip(0, 100).cast(pl.Int64),
        unresolved=pl.col("quote_usd").is_null() | pl.col("price_usd").is_null())
    title = pl.lit(SCORE_TITLES[-1][1])
    for floor, name in reversed(SCORE_TITLES[:-1]):
        title = pl.when(pl.col("score") >= floor).then(pl.lit(name)).otherwise(title)
    severe = pl.col("risk_signals").list.eval(
        pl.element().struct.field("severity").is_in(["high"])).list.any()
    wide = wide.with_columns(
        score_title=title,
        verdict=pl.when(pl.col("is_scam")).then(pl.lit("blocked"))
        .when(pl.col("unresolved")).then(pl.lit("unknown"))
        .when(severe).then(pl.lit("watch")).otherwise(pl.lit("ok")),
        status=pair_status(pl.col("unresolved"), pl.col("rugged"), pl.col("txns_h24")),
        **{f"trending_{w}": trending(pl.col(f"makers_{w}"), pl.col(f"volume_{w}_usd"),
                                     pl.col("thin_liquidity")) for w in PAIR_WINDOWS},
        **window_columns())
    return _items(wide.collect(), as_of)


def _items(wide: pl.DataFrame, as_of: datetime) -> pl.DataFrame:
    """The wide frame plus `item`: the pair row exactly as the wire carries it."""
    at = iso(pl.lit(as_of))
    times = ["created_at", "last_trade_at", "earliest_unlock", "first_seen_at",
             "launchpad_completed_at"]
    instants = ["base_range_low_at", "base_range_high_at", "quote_range_low_at",
                "quote_range_high_at", "liq_low_at", "liq_high_at"]
    text = wide.with_columns(*[iso(c).alias(f"{c}_text") for c in times],
                             *[seconds(c) for c in instants])
    item = pl.struct(
        network=pl.struct(slug="slug", chain_id="chain_id"),
        dex=pl.struct(name="venue_name", factory="factory", factory_type="factory_type",
                      chain_id="chain_id", lp_token_symbol="lp_token_symbol"),
        pair_address="pair", ticker="ticker", status="status",
        prop_data=pl.struct(
            is_perp="is_perp", is_honeypot="honeypot", spot_disabled="is_perp",
            perp_disabled=~pl.col("is_perp"), buy_tax="base_buy_tax", sell_tax="base_sell_tax",
            liquidity_range=pl.struct(low="liq_low", high="liq_high",
                                      low_at="liq_low_at_seconds",
                                      high_at="liq_high_at_seconds"),
            perp="perp"),
        score=pl.struct(value="score", title="score_title", updated_at=at,
                        risk_signals="risk_signals"),
        deployer=pl.struct(
            address="creator", tx_hash="created_tx", block_number="created_block",
            log_index="created_log_index",
            reputation=pl.struct(score="rep_score", status="rep_status",
                                 pairs_created="pairs_created",
                                 abused_launches="abused_launches",
                                 first_seen_at="first_seen_at_text")),
        security=pl.struct(burned_pct="burned_pct", locked_pct="locked_pct",
                           top_lock_provider="top_lock_provider",
                           earliest_unlock_at="earliest_unlock_text", checked_at=at),
        verdict=pl.struct(status="verdict"),
        pair_fee="pair_fee",
        tokens=pl.concat_list(
            _token("base", pl.when(pl.col("base_is_token0")).then(0).otherwise(1)),
            _token("quote", pl.when(pl.col("base_is_token0")).then(1).otherwise(0))),
        txn=window_fields()["txn"], volume=window_fields()["volume"],
        price_change=window_fields()["price_change"],
        liquidity_usd="liquidity_usd", liquidity_onchain_usd="liquidity_onchain_usd",
        apr=pl.when(pl.col("liquidity_usd") > 0).then(
            pl.col("fees_usd_24h") * 365 / pl.col("liquidity_usd") * 100).otherwise(0.0),
        fees_usd_24h="fees_usd_24h", price_native="base_price_native",
        last_updated_at=at, created_at="created_at_text", last_trade_at="last_trade_at_text",
        windows=window_fields()["windows"],
        launchpad=pl.when(pl.col("launchpad").is_not_null()).then(pl.struct(
            name="launchpad", protocol="launchpad", stage="launchpad_stage",
            completed_at="launchpad_completed_at_text", migrated_pool="migrated_pool",
            progress="curve_progress", graduation_quote="graduation_quote",
            graduation_usd="graduation_usd")),
        safety=pl.struct(is_honeypot="honeypot", buy_tax="base_buy_tax",
                         sell_tax="base_sell_tax", lp_locked_pct="locked_pct",
                         lp_burned_pct="burned_pct", score="score",
                         owner_renounced="owner_renounced",
                         tax_measured=tax_measured("base_"),
                         labels=pl.col("risk_signals").list.eval(
                             pl.element().struct.field("kind"))))
    per_window = [f"{c}_{w}{u}" for w in PAIR_WINDOWS for c, u in (
        ("volume", "_usd"), ("txns", ""), ("makers", ""), ("price_change", ""), ("trending", ""))]
    return text.with_columns(item=item.struct.json_encode()).select(
        "chain_id", "slug", "pair", "ticker", "base", "quote", "base_symbol", "quote_symbol",
        "venue_id", "venue_name", "created_at", "last_trade_at", "liquidity_usd",
        "base_price_usd", "quote_price_usd", *per_window, "score", "verdict", "status",
        "is_perp", "launchpad", "launchpad_stage", "curve_progress", "rugged", "is_scam", "item")

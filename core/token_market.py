"""A token's market row (spec 2.2) from its pairs' rows, its swaps' window blocks and its
feed's prices, over its basis (contract, registry, profile, holders): one definition, called by
the batch's token rows over every token and by the edge over one token and the live tail."""

import functools
import math
from datetime import datetime, timedelta
from decimal import Decimal

import polars as pl

from core.vocabulary import HIGH_SELL_TAX, OWNER_RISK_POINTS, PAIR_WINDOWS
from core.vocabulary import UNKNOWN_TOKEN_ID as ZERO_ID
from core.wire import is_terminal, iso, status_text

KEY = ["chain_id", "address"]
# A market block is good until the next market refresh (the 5-minute cadence).
MARKET_TTL = timedelta(minutes=5)
RATING_WEIGHTS = {"safety": 0.4, "liquidity": 0.2, "activity": 0.15, "holders": 0.15,
                  "age_info": 0.1}
# Log-scaled rating parts reach 100 at these figures; age reaches 100 at a year.
RATING_FULL = {"liquidity": 10_000_000.0, "activity": 10_000.0, "holders": 100_000.0}
AGE_FULL_DAYS = 365.0


def token_pairs(pairs: pl.LazyFrame) -> pl.LazyFrame:
    """Every pair seen from each of its two tokens, with that token's price in the pair."""
    shared = ["pair", "ticker", "venue_id", "liquidity_usd", "created_at", "is_scam", "rugged",
              "verdict", "score"]
    base = pairs.select("chain_id", *shared, address="base", role=pl.lit("base"),
                        pair_price_usd="base_price_usd",
                        **{f"pair_change_{w}": f"price_change_{w}" for w in PAIR_WINDOWS})
    quote = pairs.select("chain_id", *shared, address="quote", role=pl.lit("quote"),
                         pair_price_usd="quote_price_usd",
                         **{f"pair_change_{w}": pl.lit(None, pl.Float64) for w in PAIR_WINDOWS})
    return pl.concat([base, quote])


def pair_rollup(seen: pl.LazyFrame) -> pl.LazyFrame:
    """Per token: pair count, liquidity across its pairs, first listing, rug evidence on a pool
    it is the base of, and its main pair (no scam evidence first, then deepest liquidity)."""
    ranked = seen.sort(["is_scam", "liquidity_usd", "pair"], descending=[False, True, False],
                       nulls_last=True)
    return ranked.group_by(KEY).agg(
        pairs_count=pl.len().cast(pl.Int64),
        liquidity_usd=pl.col("liquidity_usd").sum(),
        first_listed_at=pl.col("created_at").min(),
        rugged_as_base=(pl.col("rugged") & (pl.col("role") == "base")).any(),
        main_pair=pl.col("pair").first(), main_ticker=pl.col("ticker").first(),
        main_dex=pl.col("venue_id").first(), main_liquidity_usd=pl.col("liquidity_usd").first(),
        main_verdict=pl.col("verdict").first(), main_price_usd=pl.col("pair_price_usd").first(),
        **{f"main_change_{w}": pl.col(f"pair_change_{w}").first() for w in PAIR_WINDOWS})


def tax_measured(prefix: str = "") -> pl.Expr:
    """The wire's evidence of a token's taxes (its columns named with `prefix`): for each
    side, how many swaps measured the tax served and since when (null: not measured)."""
    return pl.struct([e for n in ("buy", "sell") for e in (
        pl.col(f"{prefix}{n}_tax_swaps").alias(f"{n}_swaps"),
        iso(f"{prefix}{n}_tax_since").alias(f"{n}_since"))])


def log_part(value: str, full: float) -> pl.Expr:
    """A 0..100 rating part on a log scale reaching 100 at `full`."""
    return ((1.0 + pl.col(value).fill_null(0.0)).log10() / math.log10(1.0 + full) * 100.0
            ).clip(0, 100).round().cast(pl.Int64)


def plain_decimal(value: float | None) -> str | None:
    """A float as a plain decimal string to 15 significant digits: no exponent, no trailing
    zeros (1.2e-09 is "0.0000000012")."""
    if value is None or not math.isfinite(value):
        return None
    # -0.0 is a key equal to 0.0 but is written "-0": zeros are not kept.
    return _kept_decimal(value) if value != 0 else _decimal(value)


# Kept: a live tail renders every token's figures again every few seconds, and most of them
# (supplies, the windows of tokens nobody traded) are the same floats as the tail before.
@functools.lru_cache(maxsize=1 << 16)
def _kept_decimal(value: float) -> str:
    return _decimal(value)


def _decimal(value: float) -> str:
    return format(Decimal(f"{value:.15g}").normalize(), "f")


def decimal_text(column: str | pl.Expr) -> pl.Expr:
    """A figure column as the wire's decimal strings."""
    expr = pl.col(column) if isinstance(column, str) else column
    return expr.cast(pl.Float64).map_batches(
        lambda s: pl.Series([plain_decimal(v) for v in s.to_list()], dtype=pl.String),
        return_dtype=pl.String)


def market_block(as_of: datetime) -> pl.Expr:
    """The market block, as JSON, from a row's figure columns: observed at `as_of`, good
    until the next refresh."""
    return pl.struct(
        observed_at=iso(pl.lit(as_of)), expires_at=iso(pl.lit(as_of + MARKET_TTL)),
        metrics=pl.struct([decimal_text(m).alias(m) for m in (
            "price_usd", "liquidity_usd", "market_cap_usd", "fdv_usd", "circulating_supply",
            "total_supply")], holders_count=pl.col("holders")),
        windows=pl.struct([pl.struct(
            price_change_percent=decimal_text(f"price_change_{w}"),
            volume_usd=decimal_text(f"volume_{w}_usd"), buys=f"buys_{w}",
            sells=f"sells_{w}", transactions=f"txns_{w}").alias(w) for w in PAIR_WINDOWS]),
        primary_market=pl.struct(chain_id="primary_chain_id",
                                 pair_address="main_pair", dex_id="main_dex",
                                 liquidity_usd=decimal_text("main_liquidity_usd"))
    ).struct.json_encode()


SUMMED = [c for w in PAIR_WINDOWS for c in (f"volume_{w}_usd", f"buys_{w}", f"sells_{w}",
                                            f"txns_{w}")]


def token_market(basis: pl.LazyFrame, pairs: pl.LazyFrame, activity: pl.LazyFrame,
                 oracle: pl.LazyFrame, as_of: datetime) -> pl.DataFrame:
    """The market rows of the tokens of `basis` with a pair among `pairs` (pair rows), their
    window blocks in `activity` (keyed by `token`) and their feeds' prices in `oracle` (by
    `oracle_changes`), as of `as_of`: wide columns the lists filter and sort on, `item` (the
    row's JSON without the optional blocks), `market` and `instances` (their JSON)."""
    wide = (pair_rollup(token_pairs(pairs)).join(basis, on=KEY, how="inner")
            .join(activity.rename({"token": "address"}), on=KEY, how="left")
            .join(oracle, left_on="price_feed_id", right_on="feed_id", how="left"))
    counts = [c for w in PAIR_WINDOWS for c in (f"txns_{w}", f"buys_{w}", f"sells_{w}",
                                                f"buyers_{w}", f"sellers_{w}", f"makers_{w}")]
    volumes = [c for w in PAIR_WINDOWS for c in (f"volume_{w}_usd", f"buy_volume_{w}_usd",
                                                 f"sell_volume_{w}_usd")]
    priced_by_oracle = pl.col("oracle_usd").is_not_null()
    wide = wide.with_columns(
        *[pl.col(c).fill_null(0).cast(pl.Int64) for c in counts],
        *[pl.col(c).fill_null(0.0) for c in volumes],
        holders=pl.col("holders").fill_null(0),
        price_usd=pl.when(priced_by_oracle).then("oracle_usd").otherwise("main_price_usd"),
        **{f"price_change_{w}": pl.when(priced_by_oracle).then(f"oracle_change_{w}")
           .otherwise(pl.col(f"main_change_{w}").fill_null(0.0)) for w in PAIR_WINDOWS},
        market_cap_estimated=pl.col("circulating_supply").is_null(),
        age_days=(pl.lit(as_of) - pl.col("first_listed_at")).dt.total_seconds() / 86_400.0,
        is_scam=is_terminal("token_status") | (pl.col("honeypot_test") == "fail")
        | pl.col("rugged_as_base"),
        # As the pair rows read them: a tax not measured is not a high one, and a contract
        # whose verification is unknown counts as unverified.
        high_sell_tax=pl.col("sell_tax").fill_null(0.0) >= HIGH_SELL_TAX,
    ).with_columns(
        fdv_usd=pl.col("price_usd") * pl.coalesce("max_supply", "total_supply"),
        market_cap_usd=pl.col("price_usd") * pl.coalesce("circulating_supply", "total_supply"),
        top10_pct=pl.when(pl.col("total_supply") > 0).then(
            (pl.col("top10").fill_null(0.0) / pl.col("total_supply") * 100.0).clip(0, 100))
        .otherwise(0.0),
        verdict=pl.when(pl.col("is_scam")).then(pl.lit("blocked"))
        .when((pl.col("token_status") == 1) | pl.col("price_usd").is_null())
        .then(pl.lit("unknown"))
        .when(pl.col("high_sell_tax") | (pl.col("main_verdict") == "watch"))
        .then(pl.lit("watch")).otherwise(pl.lit("ok")),
        status=pl.when((pl.col("token_status") == 0) & pl.col("registry_status").is_not_null())
        .then("registry_status").otherwise(status_text("token_status")),
        safety=pl.when(pl.col("is_scam")).then(0).otherwise(
            100 - 30 * pl.col("high_sell_tax").cast(pl.Int64)
            - OWNER_RISK_POINTS * pl.col("owner_risk").fill_null(False).cast(pl.Int64)
            - 5 * (~pl.col("contract_verified").fill_null(False)).cast(pl.Int64)).cast(pl.Int64),
        liquidity_part=log_part("liquidity_usd", RATING_FULL["liquidity"]),
        activity=log_part("txns_h24", RATING_FULL["activity"]),
        holders_part=log_part("holders", RATING_FULL["holders"]),
        age_info=(pl.col("age_days").fill_null(0.0) / AGE_FULL_DAYS * 100.0).clip(0, 100)
        .round().cast(pl.Int64),
    )
    weighted = pl.sum_horizontal(pl.col(c) * w for c, w in zip(
        ("safety", "liquidity_part", "activity", "holders_part", "age_info"),
        RATING_WEIGHTS.values(), strict=True))
    rated = wide.with_columns(rating_score=pl.when(pl.col("is_scam")).then(0)
                              .otherwise(weighted.round()).cast(pl.Int64)).collect()
    return _items(_with_registry_blocks(rated, as_of), as_of)


def _with_registry_blocks(wide: pl.DataFrame, as_of: datetime) -> pl.DataFrame:
    """Adds `instance` (this row as a registry instance), `market` and `instances`: the
    registry-wide blocks for tokens the registry knows, this chain's own for the others."""
    wide = wide.with_columns(primary_chain_id="chain_id")
    wide = wide.with_columns(own_market=market_block(as_of))
    instance = pl.struct(
        id=pl.col("instance_id").fill_null(ZERO_ID), chain_id="chain_id", address="address",
        decimals="decimals", status="status", risk_score=100 - pl.col("safety"),
        contract_verified="contract_verified", market=pl.lit("@MARKET@"))
    wide = wide.with_columns(instance=instance.struct.json_encode().str.replace(
        '"@MARKET@"', pl.col("own_market"), literal=True))
    known = wide.filter(pl.col("token_id").is_not_null())
    registry = registry_markets(known, as_of)
    instances = (known.sort("chain_id").group_by("token_id")
                 .agg(instances=pl.lit("[") + pl.col("instance").str.join(",") + pl.lit("]")))
    return (wide.join(registry.select("token_id", "registry_market"), on="token_id", how="left")
            .join(instances, on="token_id", how="left")
            .with_columns(market=pl.coalesce("registry_market", "own_market"),
                          instances=pl.coalesce(
                              "instances", pl.lit("[") + pl.col("instance") + pl.lit("]"))))


def registry_markets(known: pl.DataFrame, as_of: datetime) -> pl.DataFrame:
    """Per registry token: its market block across every chain it trades on. Figures and
    counts add up over instances; the price, price changes and primary market are those of the
    instance with the deepest liquidity."""
    primary = (known.sort(["main_liquidity_usd", "chain_id"], descending=[True, False],
                          nulls_last=True)
               .group_by("token_id", maintain_order=True).first())
    totals = known.group_by("token_id").agg(
        *[pl.when(pl.col(c).is_not_null().any()).then(pl.col(c).sum()).alias(c)
          for c in ("liquidity_usd", "market_cap_usd", "fdv_usd", "circulating_supply",
                    "total_supply", "holders")],
        *[pl.col(c).sum() for c in SUMMED])
    merged = primary.select(
        "token_id", "price_usd", "main_pair", "main_dex", "main_liquidity_usd",
        primary_chain_id="chain_id",
        **{f"price_change_{w}": f"price_change_{w}" for w in PAIR_WINDOWS}).join(
        totals, on="token_id")
    return merged.with_columns(registry_market=market_block(as_of))


def _windows() -> pl.Expr:
    return pl.struct([pl.struct(
        price_change_pct=f"price_change_{w}", volume_usd=f"volume_{w}_usd",
        buy_volume_usd=f"buy_volume_{w}_usd", sell_volume_usd=f"sell_volume_{w}_usd",
        txns=pl.struct(buys=f"buys_{w}", sells=f"sells_{w}"), buyers=f"buyers_{w}",
        sellers=f"sellers_{w}", makers=f"makers_{w}", makers_main_pair_only=pl.lit(False))
        .alias(w) for w in PAIR_WINDOWS])


def _items(wide: pl.DataFrame, as_of: datetime) -> pl.DataFrame:
    """The wide frame plus `item`: the token row exactly as the wire carries it."""
    socials = ("twitter", "telegram", "discord", "github", "docs")
    no_list = pl.lit([], pl.List(pl.String))
    item = pl.struct(
        id=pl.col("token_id").fill_null(ZERO_ID), slug="registry_slug",
        symbol=pl.coalesce("registry_symbol", "symbol"), name=pl.coalesce("registry_name", "name"),
        description="description", status="status", category="category",
        confidence=pl.col("confidence").fill_null(0), rank="rank",
        logo_url=pl.coalesce("logo_url", "image_url"),
        chain=pl.struct(slug="slug", chain_id="chain_id"), address="address",
        decimals="decimals", score="rating_score", txns_24h="txns_h24",
        pairs_count="pairs_count", holders="holders", categories="categories",
        price_usd="price_usd", price_change_1h="price_change_h1",
        price_change_6h="price_change_h6", price_change_24h="price_change_h24",
        volume_24h="volume_h24_usd", liquidity_usd="liquidity_usd", fdv_usd="fdv_usd",
        market_cap_usd="market_cap_usd", total_supply="total_supply",
        max_supply="max_supply", circulating_supply="circulating_supply",
        market_cap_estimated="market_cap_estimated", launched_at=iso("first_listed_at"),
        rating=pl.struct(score="rating_score", safety="safety", liquidity="liquidity_part",
                         activity="activity", holders="holders_part", age_info="age_info"),
        main_pair=pl.struct(address="main_pair", ticker="main_ticker"),
        launch=pl.struct(deployer="deployer", tx_hash="deploy_tx", block_number="deploy_block",
                         deployed_at=iso("deployed_at")),
        windows=_windows(),
        taxes=pl.struct(buy_tax="buy_tax", sell_tax="sell_tax", measured=tax_measured()),
        honeypot=pl.when(pl.col("honeypot_result").is_not_null()).then(pl.struct(
            result="honeypot_result", tested_at=iso("honeypot_tested_at"),
            buy_tax="honeypot_buy_tax", sell_tax="honeypot_sell_tax",
            failed_step="honeypot_failed_step")),
        ownership=pl.when(pl.col("ownable").is_not_null()).then(pl.struct(
            ownable="ownable", owner="owner", renounced="renounced",
            renounced_at=iso("renounced_at"), owner_since=iso("owner_since"),
            previous_owner="previous_owner", powers="owner_powers", risk="owner_risk")),
        holder_stats=pl.struct(count="holders", top10_pct="top10_pct",
                               updated_at=iso(pl.lit(as_of))),
        profile=pl.struct(
            image_url="image_url", websites=pl.col("websites").fill_null(no_list),
            socials=pl.struct([pl.col(s).fill_null(no_list) for s in socials]),
            verified=pl.col("verification_tier").is_in(["verified", "premium"]).fill_null(False),
            verification_tier=pl.col("verification_tier").fill_null("none"),
            verified_by=pl.col("verified_by").fill_null(no_list)),
        verdict=pl.struct(status="verdict"))
    return wide.with_columns(item=item.struct.json_encode()).select(
        "chain_id", "slug", "address", "token_id", "registry_slug",
        pl.coalesce("registry_symbol", "symbol").alias("symbol"),
        pl.coalesce("registry_name", "name").alias("name"),
        pl.coalesce("logo_url", "image_url").alias("logo_url"), "categories", "deployer",
        "first_listed_at", "main_pair", "price_usd", "liquidity_usd", "volume_h24_usd",
        "txns_h24", "makers_h24", "market_cap_usd", "fdv_usd", "price_change_h24", "holders",
        "top10_pct", "total_supply", "rating_score", "status", "token_status", "verdict", "is_scam",
        "instance", "item", "market", "instances")

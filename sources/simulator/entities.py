"""Entity tables of one chain: chain, venues, tokens, registry, profiles, labels, pairs."""

import numpy as np
import polars as pl

from sources.simulator.assemble import Clock, raw_series, with_utc
from sources.simulator.pools import SimulatedPool
from sources.simulator.world import ChainWorld, TokenSpec, owner_story, registry_ids

LABEL_KINDS = {"exchange": 1, "bridge": 2, "mev_bot": 3, "scam_deployer": 4, "team": 5,
               "market_maker": 6, "farm_factory": 10}
EXCHANGES = ("Binance", "Coinbase", "OKX", "Bybit", "Kraken")


def chain_row(world: ChainWorld) -> dict:
    """The `chains` row."""
    t = world.template
    return {"chain_id": t.chain_id, "slug": t.slug, "display_name": t.display_name,
            "address_format": t.address_format, "explorer_url": t.explorer_url,
            "native_symbol": t.native, "native_token": world.quotes["native"].address,
            "block_time_ms": t.block_time_ms, "min_liquidity_usd": t.min_liquidity_usd}


def venues_table(world: ChainWorld) -> pl.DataFrame:
    """The `venues` table (the unnamed factory is deliberately absent)."""
    return pl.DataFrame([{"venue_id": v.venue_id, "name": v.name, "category": v.category,
                          "factory": v.factory, "factory_type": v.factory_type,
                          "router": v.router} for v in world.venues])


def tokens_table(world: ChainWorld, extra: list[TokenSpec], deploys: pl.DataFrame,
                 observed_at: float, rng: np.random.Generator) -> pl.DataFrame:
    """The `tokens` table: every token with its deployment taken from its mint transfer."""
    specs = list(world.quotes.values()) + world.tokens + extra
    supply = [s.supply_raw for s in specs]
    fmt = world.template.address_format
    stories = [owner_story(s, fmt, world.wallets.rug_deployers) for s in specs]
    circulating = [int(s.supply_raw * rng.uniform(0.5, 0.95)) if s.kind == "established" else None
                   for s in specs]
    frame = pl.DataFrame({
        "address": [s.address for s in specs], "symbol": [s.symbol for s in specs],
        "name": [s.name for s in specs], "decimals": [s.decimals for s in specs],
        "deployer": [s.deployer for s in specs],
        "deployed_at": [s.deployed_at.timestamp() for s in specs],
        "contract_verified": [s.verified for s in specs],
        "buy_tax": [s.buy_tax for s in specs], "sell_tax": [s.sell_tax for s in specs],
        "honeypot_test": [s.honeypot_test for s in specs], "status": [s.status for s in specs],
        "is_quote": [s.is_quote for s in specs],
        "price_feed_id": [s.feed.feed_id if s.feed else None for s in specs],
        "categories": pl.Series([s.categories for s in specs], dtype=pl.List(pl.String)),
        # An EVM token's code is known to the simulator: the powers of its story, or none.
        "owner_powers": pl.Series([None if fmt != "evm" else
                                   list(story.powers) if story is not None else []
                                   for story in stories], dtype=pl.List(pl.String)),
        "observed_at": [observed_at] * len(specs),
    }).with_columns(
        raw_series("total_supply_raw", supply),
        raw_series("max_supply_raw", [s if c is not None else None
                                      for s, c in zip(supply, circulating, strict=True)]),
        raw_series("circulating_supply_raw", circulating),
    )
    frame = with_utc(frame, "deployed_at", "observed_at")
    placed = deploys.select(address="token", deploy_tx="tx_hash", deploy_block="block_number",
                            block_time="block_time")
    return (frame.join(placed, on="address", how="left")
            .with_columns(deployed_at=pl.coalesce("block_time", "deployed_at"),
                          deploy_tx=pl.col("deploy_tx").fill_null(""),
                          deploy_block=pl.col("deploy_block").fill_null(0))
            .drop("block_time"))


def registry_rows(world: ChainWorld, known: dict[str, dict]) -> list[dict]:
    """Adds the chain's registry-known tokens to `known` and returns this chain's instances."""
    instances, seen = [], set()
    for spec in list(world.quotes.values()) + world.tokens:
        if spec.kind not in ("quote", "established") or spec.symbol in seen:
            continue
        seen.add(spec.symbol)
        token_id, instance_id = registry_ids(world.template.slug, spec.symbol)
        known.setdefault(token_id, {
            "token_id": token_id, "slug": spec.symbol.lower(), "symbol": spec.symbol,
            "name": spec.name, "category": spec.categories[0] if spec.categories else "token",
            "confidence": 90 if spec.kind == "quote" else 70,
            "logo_url": f"https://assets.chaintape.dev/tokens/{spec.symbol.lower()}.png",
            "description": f"{spec.name} ({spec.symbol})", "status": "active",
        })
        instances.append({"instance_id": instance_id, "token_id": token_id,
                          "chain_id": world.template.chain_id, "address": spec.address})
    return instances


def profiles_table(world: ChainWorld, updated_at: float, rng: np.random.Generator) -> pl.DataFrame:
    """Token profiles: established tokens always, launches sometimes."""
    rows = []
    for spec in world.tokens:
        if spec.kind != "established" and rng.random() > 0.4:
            continue
        slug = spec.symbol.lower()
        tier = "verified" if spec.kind == "established" else str(rng.choice(["none", "basic"]))
        rows.append({
            "address": spec.address,
            "image_url": f"https://assets.chaintape.dev/tokens/{slug}.png",
            "websites": [f"https://{slug}.example"], "twitter": [f"https://x.com/{slug}"],
            "telegram": [f"https://t.me/{slug}"] if rng.random() < 0.6 else [],
            "discord": [], "github": [f"https://github.com/{slug}"] if tier == "verified" else [],
            "docs": [], "verification_tier": tier,
            "verified_by": ["chaintape"] if tier == "verified" else [], "updated_at": updated_at,
        })
    frame = pl.DataFrame(rows, schema_overrides={c: pl.List(pl.String) for c in (
        "websites", "twitter", "telegram", "discord", "github", "docs", "verified_by")})
    return with_utc(frame, "updated_at")


def labels_table(world: ChainWorld, rugged: dict[str, str],
                 factories: list[tuple[str, str]]) -> pl.DataFrame:
    """Known entities: exchanges, bridges, some MEV bots and market makers, scam deployers,
    and the farm `factories` (address, name)."""
    w = world.wallets
    rows = [{"address": a, "kind": LABEL_KINDS["exchange"], "name": f"{n} Hot Wallet",
             "confidence": 0.99, "token_address": None, "source": "chaintape"}
            for a, n in zip(w.funders[:5], EXCHANGES, strict=True)]
    rows.append({"address": w.funders[5], "kind": LABEL_KINDS["bridge"], "name": "Bridge Vault",
                 "confidence": 0.95, "token_address": None, "source": "chaintape"})
    rows += [{"address": a, "kind": LABEL_KINDS["mev_bot"], "name": "MEV Bot",
              "confidence": 0.8, "token_address": None, "source": "community"}
             for a in w.by_archetype["bot"][:3]]
    rows.append({"address": w.by_archetype["market_maker"][0],
                 "kind": LABEL_KINDS["market_maker"], "name": "Known Market Maker",
                 "confidence": 0.9, "token_address": None, "source": "chaintape"})
    rows += [{"address": deployer, "kind": LABEL_KINDS["scam_deployer"], "name": "Rug Deployer",
              "confidence": 0.85, "token_address": token, "source": "community"}
             for deployer, token in rugged.items()]
    rows += [{"address": address, "kind": LABEL_KINDS["farm_factory"], "name": name,
              "confidence": 0.99, "token_address": None, "source": "chaintape"}
             for address, name in factories]
    return pl.DataFrame(rows, schema_overrides={"token_address": pl.String})


def pairs_table(world: ChainWorld, pools: list[SimulatedPool], mints: pl.DataFrame,
                perps: list[tuple[str, TokenSpec]], clock: Clock,
                listings: pl.DataFrame) -> pl.DataFrame:
    """The `pairs` table, with each pool's creation block and tx from its first mint."""
    named = {v.factory for v in world.venues}
    rows = []
    graduations: list[int | None] = []
    for p in pools:
        label = p.venue.name if p.venue.factory in named else "UNKNOWN"
        rows.append({"address": p.address, "factory": p.venue.factory,
                     "factory_type": p.venue.factory_type, "token0": p.token0,
                     "token1": p.token1, "fee_bps": p.fee_bps, "created_at": p.created_at,
                     "creator": p.creator, "launchpad": p.launchpad, "launchpad_stage": p.stage,
                     "launchpad_completed_at": p.completed_at,
                     "migrated_pool": p.migrated_pool, "lp_token_symbol": f"{label}-LP",
                     "is_perp": False})
        graduations.append(p.curve_target if p.venue.factory_type == "bonding_curve" else None)
    perp_venue = next((v for v in world.venues if v.category == "perps"), None)
    stable = world.quotes["stable"]
    for market, token in perps:
        assert perp_venue is not None
        rows.append({"address": market, "factory": perp_venue.factory,
                     "factory_type": perp_venue.factory_type, "token0": token.address,
                     "token1": stable.address, "fee_bps": 4,
                     "created_at": token.deployed_at.timestamp(), "creator": perp_venue.router,
                     "launchpad": None, "launchpad_stage": None, "launchpad_completed_at": None,
                     "migrated_pool": None, "lp_token_symbol": "", "is_perp": True})
        graduations.append(None)
    frame = pl.DataFrame(rows, schema_overrides={
        "launchpad": pl.String, "launchpad_stage": pl.String, "migrated_pool": pl.String,
        "launchpad_completed_at": pl.Float64}).with_columns(
            raw_series("graduation_quote_raw", graduations))
    market_of = {token.address: market for market, token in perps}
    listed = listings.select(address=pl.col("address").replace_strict(market_of),
                             created_block="block_number", created_log_index=pl.lit(0, pl.Int64),
                             created_tx="tx_hash")
    first = pl.concat([
        mints.sort("block_number", "log_index").group_by("pair").first()
        .select(address="pair", created_block="block_number",
                created_log_index=pl.col("log_index").cast(pl.Int64), created_tx="tx_hash"),
        listed])
    frame = frame.join(first, on="address", how="left").with_columns(
        created_block=pl.col("created_block").fill_null(
            pl.Series(clock.block(frame["created_at"].to_numpy()))),
        created_log_index=pl.col("created_log_index").fill_null(0),
        created_tx=pl.col("created_tx").fill_null(""),
    )
    return with_utc(frame, "created_at", "launchpad_completed_at")

"""Pools of one chain: which exist, on which venue, with what initial liquidity."""

from dataclasses import dataclass, field
from datetime import timedelta

import numpy as np

from sources.simulator import amm, ids
from sources.simulator.world import ChainWorld, TokenSpec, VenueSpec

DEAD = "dead"


@dataclass
class SimulatedPool:
    """One constant-product pool (or launchpad bonding curve) and its running state."""

    address: str
    venue: VenueSpec
    base: TokenSpec
    quote: TokenSpec
    fee_bps: int
    created_at: float
    creator: str
    story: str
    liquidity_usd: float
    base_is_0: bool = True
    r_base: int = 0
    r_quote: int = 0
    lp_supply: int = 0
    launchpad: str | None = None
    stage: str | None = None
    completed_at: float | None = None
    migrated_pool: str | None = None
    # A bonding curve completes when its quote reserve reaches this (six times its start).
    curve_target: int | None = None
    holders: dict[str, int] = field(default_factory=dict)
    holder_list: list[str] = field(default_factory=list)

    @property
    def token0(self) -> str:
        return self.base.address if self.base_is_0 else self.quote.address

    @property
    def token1(self) -> str:
        return self.quote.address if self.base_is_0 else self.base.address

    def reserves(self) -> tuple[int, int]:
        """(reserve0, reserve1) in the pool's token order."""
        return (self.r_base, self.r_quote) if self.base_is_0 else (self.r_quote, self.r_base)


def plan_pools(world: ChainWorld, rng: np.random.Generator, quote_usd) -> list[SimulatedPool]:
    """Every pool of the chain, in creation order, before any trading."""
    dexes = [v for v in world.venues if v.category == "dex"]
    pads = [v for v in world.venues if v.category == "launchpad"]
    unnamed = VenueSpec("", "", "dex", world.unnamed_factory, "constant_product", dexes[0].router)
    native, stable = world.quotes["native"], world.quotes["stable"]
    fmt = world.template.address_format
    pools: list[SimulatedPool] = []
    orphans: list[TokenSpec] = []

    def add(base, quote, venue, fee, liq, story, delay_s=300.0):
        # A pool is created once both its tokens exist (an orphan pair's quote is a token too).
        created = max(base.deployed_at, quote.deployed_at) + timedelta(seconds=delay_s)
        pools.append(SimulatedPool(ids.address(fmt, rng.bytes(32)), venue, base, quote, fee,
                          created.timestamp(), base.deployer, story, liq,
                          base_is_0=bool(rng.random() < 0.5)))
        return pools[-1]

    for token in world.tokens:
        dex = dexes[int(rng.integers(len(dexes)))]
        if token.kind == "established":
            add(token, native, dex, 30, float(rng.lognormal(np.log(2e6), 1.0)), "established")
            if rng.random() < 0.5:
                other = dexes[int(rng.integers(len(dexes)))]
                add(token, stable, other, int(rng.choice([5, 30])),
                    float(rng.lognormal(np.log(5e5), 1.0)), "established", 3600.0)
        elif token.kind == "launchpad":
            pad = pads[int(rng.integers(len(pads)))]
            pool = add(token, native, pad, 100, 8_000.0, "curve", 1.0)
            pool.launchpad, pool.stage = pad.venue_id, "curve"
        elif token.kind == "orphan":
            orphans.append(token)
        else:
            venue = unnamed if token.kind == "fresh" and rng.random() < 0.08 else dex
            add(token, native, venue, 30, float(rng.lognormal(np.log(2e4), 0.8)), token.kind)
    for a, b in zip(orphans[0::2], orphans[1::2], strict=False):
        add(a, b, dexes[int(rng.integers(len(dexes)))], 30, 0.0, "orphan")
    for pool in pools:
        seed_reserves(pool, rng, quote_usd)
    return sorted(pools, key=lambda p: p.created_at)


def seed_reserves(pool: SimulatedPool, rng: np.random.Generator, quote_usd) -> None:
    """The first deposit: half the liquidity in each token, the curve holding most supply."""
    base = pool.base
    if pool.story == "orphan":
        pool.r_base = base.supply_raw // 4
        pool.r_quote = pool.quote.supply_raw // 4
    else:
        usd = quote_usd(pool.quote, pool.created_at)
        pool.r_quote = int(pool.liquidity_usd / 2 / usd * 10**pool.quote.decimals)
        share = 0.8 if pool.story == "curve" else float(rng.uniform(0.2, 0.6))
        pool.r_base = int(base.supply_raw * share)
    pool.lp_supply = amm.initial_liquidity(pool.r_base, pool.r_quote) + amm.MINIMUM_LIQUIDITY


def migrate(curve: SimulatedPool, dex: VenueSpec, t: float, rng: np.random.Generator, fmt: str,
            withdrawn: tuple[int, int]) -> SimulatedPool:
    """A completed bonding curve moves its withdrawn reserves into a new DEX pool."""
    curve.stage, curve.completed_at = "migrated", t
    pool = SimulatedPool(ids.address(fmt, rng.bytes(32)), dex, curve.base, curve.quote, 25, t + 60.0,
                dex.router, "migrated", 0.0, base_is_0=curve.base_is_0,
                r_base=withdrawn[0], r_quote=withdrawn[1] * 95 // 100,
                launchpad=curve.launchpad, stage="migrated", completed_at=t,
                holders=curve.holders, holder_list=curve.holder_list)
    pool.lp_supply = amm.initial_liquidity(pool.r_base, pool.r_quote) + amm.MINIMUM_LIQUIDITY
    curve.migrated_pool = pool.address
    return pool

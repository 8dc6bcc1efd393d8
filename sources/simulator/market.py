"""One chain's spot market: pools, swaps, liquidity, transfers and LP locks, as lake tables."""

from dataclasses import dataclass
from datetime import timedelta

import numpy as np

from sources.simulator import ids
from sources.simulator.events import Events
from sources.simulator.pools import DEAD, Pool, migrate, plan_pools
from sources.simulator.trading import Trader, regime_for
from sources.simulator.world import ChainWorld

# Some attempted trades do not execute (a sell with nothing to sell, dust into a drained
# pool), so a few more are attempted than the swaps asked for.
ATTEMPTS_PER_SWAP = 1.055
STORY_WEIGHT = {"established": 4.0, "fresh": 1.0, "curve": 1.2, "honeypot": 0.5, "rug": 0.6,
                "orphan": 0.15}


@dataclass
class Trading:
    """A pool still trading at the end of the history: its trader and attempts per second."""

    trader: Trader
    rate: float


@dataclass
class MarketRun:
    """A chain's market after its history: every pool (migrations included), the LP locks, and
    the pools that trade on."""

    pools: list[Pool]
    locks: list[dict]
    trading: list[Trading]


def simulate_market(world: ChainWorld, n_swaps: int, rng: np.random.Generator, quote_usd,
                    events: Events) -> MarketRun:
    """Run every pool of the chain through its history."""
    start, end = world.start.timestamp(), world.indexed_until.timestamp()
    pools = plan_pools(world, rng, quote_usd)
    weights = np.array([STORY_WEIGHT[p.story] for p in pools]) * rng.pareto(1.3, len(pools))
    active = np.array([max(0.0, end - max(p.created_at, start)) for p in pools])
    weights = weights * active / max(active.max(), 1.0)
    counts = rng.multinomial(int(n_swaps * ATTEMPTS_PER_SWAP), weights / weights.sum())
    dexes = [v for v in world.venues if v.category == "dex"]
    fmt = world.template.address_format
    locks: list[dict] = []
    out: list[Pool] = []
    trading: list[Trading] = []
    for pool, count in zip(pools, counts, strict=True):
        trader = Trader(pool, world.wallets, events, rng, quote_usd)
        trader.mint(pool.created_at, pool.creator, pool.r_base, pool.r_quote, pool.lp_supply)
        out.append(pool)
        t0 = max(pool.created_at + 1.0, start)
        times = np.sort(rng.uniform(t0, end, count)) if end > t0 else np.array([])
        regime = regime_for(pool, t0, end, rng)
        rug_at = None
        if pool.story in ("rug", "honeypot") and len(times):
            rug_at = t0 + (end - t0) * float(rng.uniform(0.2, 0.6))
        done = trader.run(times, regime, rug_at)
        rate = count / (end - t0) if end > t0 else 0.0
        last = Trading(trader, rate)
        if pool.story == "curve" and done < len(times):
            dex = dexes[int(rng.integers(len(dexes)))]
            t_done = float(times[done - 1])
            withdrawn = (pool.r_base, pool.r_quote)
            trader.burn(t_done + 1.0, pool.venue.router, 1.0)
            new = migrate(pool, dex, t_done, rng, fmt, withdrawn)
            follow = Trader(new, world.wallets, events, rng, quote_usd)
            follow.mint(new.created_at, new.creator, new.r_base, new.r_quote, new.lp_supply)
            locks.append(_lock(new, "burn", None, world, new.lp_supply, new.created_at, rng))
            rest = times[done:][times[done:] > new.created_at]
            follow.run(rest, regime)
            out.append(new)
            last = Trading(follow, rate)
        elif pool.story in ("established", "fresh") and rng.random() < 0.6:
            kind = "lock" if rng.random() < 0.65 else "burn"
            provider = None
            if kind == "lock":
                provider = str(rng.choice(list(world.lockers)))
            share = float(rng.uniform(0.5, 0.95))
            locks.append(_lock(pool, kind, provider, world, int(pool.lp_supply * share),
                               pool.created_at + 600.0, rng))
        if pool.story == "rug" and rng.random() < 0.5:
            locks.append(_lock(pool, "lock", "PinkLock", world, pool.lp_supply // 2,
                               pool.created_at + 300.0, rng, unlock_days=0.5))
        if rate > 0:
            trading.append(last)
    return MarketRun(out, locks, trading)


def _lock(pool: Pool, kind: str, provider: str | None, world: ChainWorld, amount: int, t: float,
          rng: np.random.Generator, unlock_days: float | None = None) -> dict:
    fmt = world.template.address_format
    if kind == "lock" and provider is not None:
        days = unlock_days if unlock_days is not None else float(rng.uniform(30, 365))
        unlock = t + days * 86_400
        locker = world.lockers[provider]
    else:
        unlock, locker = None, ids.named_address(fmt, f"{world.template.slug}:{DEAD}")
    return {"pair": pool.address, "kind": kind, "provider": provider, "locker_address": locker,
            "owner": pool.creator, "amount": amount, "t": t, "unlock": unlock}


def zero_address(world: ChainWorld) -> str:
    """The chain's mint/burn address."""
    return ids.named_address(world.template.address_format, "zero")


def deployments(world: ChainWorld, events: Events) -> None:
    """Each token's supply minted to its deployer: the mint is the deployment a token's launch
    names."""
    zero = zero_address(world)
    for token in world.tokens + list(world.quotes.values()):
        events.add("transfers", token.deployed_at.timestamp(), events.tx(), 0,
                   token=token.address, from_address=zero, to_address=token.deployer,
                   amount=token.supply_raw)


def funding(world: ChainWorld, first_seen: dict[str, float], events: Events,
            rng: np.random.Generator) -> None:
    """Native-token funding of every wallet shortly before it first trades."""
    native = world.quotes["native"]
    funders = world.wallets.funders
    start = world.start.timestamp() - timedelta(days=30).total_seconds()
    rug_funder = funders[-1]
    rugs = set(world.wallets.rug_deployers)
    for wallet, t in first_seen.items():
        when = max(start, t - float(rng.uniform(600, 3 * 86_400)))
        funder = rug_funder if wallet in rugs else funders[int(rng.integers(len(funders) - 1))]
        amount = int(float(rng.lognormal(0, 1)) * 10**native.decimals)
        if amount > 0:
            events.add("transfers", when, events.tx(), 0, token=native.address,
                       from_address=funder, to_address=wallet, amount=amount)

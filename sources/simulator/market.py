"""One chain's spot market: pools, swaps, liquidity, transfers and LP locks, as lake tables."""

from dataclasses import dataclass

import numpy as np

from sources.simulator import ids
from sources.simulator.events import EventColumns
from sources.simulator.pools import DEAD, SimulatedPool, migrate, plan_pools
from sources.simulator.trading import Regime, Trader, regime_for
from sources.simulator.world import RENOUNCED_TO, ChainWorld, owner_story

# Some attempted trades do not execute (a sell with nothing to sell, dust into a drained
# pool), so a few more are attempted than the swaps asked for.
ATTEMPTS_PER_SWAP = 1.055
DAY_S = 86_400.0
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

    pools: list[SimulatedPool]
    locks: list[dict]
    trading: list[Trading]


@dataclass
class _Lane:
    """One pool's place in the market: its trader (a curve's successor once it migrates), its
    buy pressure and rug time, and its attempts in each span of the history."""

    trader: Trader
    regime: Regime
    rug_at: float | None
    t0: float
    attempts: np.ndarray
    rate: float


class Market:
    """A chain's spot market, stepped through its history a span (a day or a part of one) at a
    time: the pools are planned and given their attempts per span up front, and in each span
    every pool trades that span's attempts in time order, so only a span's events are held at
    once."""

    def __init__(self, world: ChainWorld, n_swaps: int, rng: np.random.Generator, quote_usd,
                 events: EventColumns, span_s: float = DAY_S) -> None:
        self.world, self.rng, self.quote_usd, self.events = world, rng, quote_usd, events
        self.start, self.end = world.start.timestamp(), world.indexed_until.timestamp()
        self.span_s = span_s
        self.spans = max(1, int(np.ceil((self.end - self.start) / span_s)))
        pools = plan_pools(world, rng, quote_usd)
        weights = np.array([STORY_WEIGHT[p.story] for p in pools]) * rng.pareto(1.3, len(pools))
        active = np.array([max(0.0, self.end - max(p.created_at, self.start)) for p in pools])
        weights = weights * active / max(active.max(), 1.0)
        counts = rng.multinomial(int(n_swaps * ATTEMPTS_PER_SWAP), weights / weights.sum())
        self.dexes = [v for v in world.venues if v.category == "dex"]
        self.pools: list[SimulatedPool] = []
        self.locks: list[dict] = []
        self.lanes: list[_Lane] = []
        edges = self.start + span_s * np.arange(self.spans + 1)
        for pool, count in zip(pools, counts, strict=True):
            trader = Trader(pool, world.wallets, events, rng, quote_usd)
            trader.mint(pool.created_at, pool.creator, pool.r_base, pool.r_quote, pool.lp_supply)
            self.pools.append(pool)
            t0 = max(pool.created_at + 1.0, self.start)
            trades = self.end > t0 and count > 0
            regime = regime_for(pool, t0, self.end, rng)
            rug_at = None
            if pool.story in ("rug", "honeypot") and trades:
                rug_at = t0 + (self.end - t0) * float(rng.uniform(0.2, 0.6))
            attempts = np.zeros(self.spans, dtype=np.int64)
            if trades:
                # The attempts fall uniformly over the pool's active time, span by span.
                spans = (np.clip(edges[1:], t0, self.end) - np.clip(edges[:-1], t0, self.end))
                attempts = rng.multinomial(int(count), spans / spans.sum())
            if pool.story in ("established", "fresh") and rng.random() < 0.6:
                kind = "lock" if rng.random() < 0.65 else "burn"
                provider = None
                if kind == "lock":
                    provider = str(rng.choice(list(world.lockers)))
                share = float(rng.uniform(0.5, 0.95))
                self.locks.append(_lock(pool, kind, provider, world, int(pool.lp_supply * share),
                                        pool.created_at + 600.0, rng))
            if pool.story == "rug" and rng.random() < 0.5:
                self.locks.append(_lock(pool, "lock", "PinkLock", world, pool.lp_supply // 2,
                                        pool.created_at + 300.0, rng, unlock_days=0.5))
            rate = count / (self.end - t0) if self.end > t0 else 0.0
            self.lanes.append(_Lane(trader, regime, rug_at, t0, attempts, rate))

    def trade(self, span: int) -> None:
        """Every pool's attempts of the history's `span` (0-based), in time order; a bonding
        curve that completes migrates to a DEX and its successor trades the rest; a span past
        where the chain is indexed holds nothing."""
        if span >= self.spans:
            return
        lo = self.start + span * self.span_s
        hi = min(lo + self.span_s, self.end)
        for lane in self.lanes:
            n = int(lane.attempts[span])
            if not n:
                continue
            times = np.sort(self.rng.uniform(max(lo, lane.t0), hi, n))
            trader = lane.trader
            if trader.attempted == 0 and trader.snipes and lane.t0 >= lo:
                times = self._sniped(trader.pool, times, min(trader.snipes, n))
            done = trader.run(times, lane.regime, lane.rug_at)
            pool = trader.pool
            if pool.story == "curve" and pool.r_quote >= (pool.curve_target or np.inf):
                lane.trader = self._migrate(pool, trader, float(times[done - 1]))
                lane.rug_at = None
                rest = times[done:][times[done:] > lane.trader.pool.created_at]
                lane.trader.run(rest, lane.regime)

    def _sniped(self, pool: SimulatedPool, times: np.ndarray, snipes: int) -> np.ndarray:
        """A new pool's first attempts (`times`) with its first `snipes`, the snipers' buys,
        moved to where snipers make them: in the pool's own block and the two after it."""
        block_s = self.world.template.block_time_ms / 1000.0
        burst = pool.created_at + 2 * block_s * np.arange(1, snipes + 1) / (snipes + 1)
        return np.sort(np.concatenate([burst, times[snipes:]]))

    def _migrate(self, pool: SimulatedPool, trader: Trader, t_done: float) -> Trader:
        """A completed curve's liquidity withdrawn and deposited into a new DEX pool, its LP
        tokens burnt; returns the new pool's trader."""
        world, rng = self.world, self.rng
        dex = self.dexes[int(rng.integers(len(self.dexes)))]
        withdrawn = (pool.r_base, pool.r_quote)
        trader.burn(t_done + 1.0, pool.venue.router, 1.0)
        new = migrate(pool, dex, t_done, rng, world.template.address_format, withdrawn)
        follow = Trader(new, world.wallets, self.events, rng, self.quote_usd)
        # What the launchpad's router withdrew from the curve it deposits into the new pool.
        follow.mint(new.created_at, pool.venue.router, new.r_base, new.r_quote, new.lp_supply)
        self.locks.append(_lock(new, "burn", None, world, new.lp_supply, new.created_at, rng))
        self.pools.insert(self.pools.index(pool) + 1, new)
        return follow

    def result(self) -> MarketRun:
        """The market as its history leaves it."""
        return MarketRun(self.pools, self.locks,
                         [Trading(lane.trader, lane.rate) for lane in self.lanes if lane.rate > 0])


def _lock(pool: SimulatedPool, kind: str, provider: str | None, world: ChainWorld, amount: int, t: float,
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


def deployments(world: ChainWorld, events: EventColumns) -> None:
    """Each token's supply minted to its deployer: the mint is the deployment a token's launch
    names."""
    zero = zero_address(world)
    fmt = world.template.address_format
    for token in world.tokens + list(world.quotes.values()):
        deployed = token.deployed_at.timestamp()
        tx = events.tx()
        events.add("transfers", deployed, tx, 0, token=token.address, from_address=zero,
                   to_address=token.deployer, amount=token.supply_raw)
        story = owner_story(token, fmt, world.wallets.rug_deployers)
        if story is None:
            continue
        # As OpenZeppelin's `Ownable` constructor does, in the deployment's transaction.
        events.add("ownership", deployed, tx, 1, token=token.address,
                   previous_owner=RENOUNCED_TO, owner=token.deployer)
        if story.after_s is not None and story.heir is not None:
            events.add("ownership", deployed + story.after_s, events.tx(), 0,
                       token=token.address, previous_owner=token.deployer, owner=story.heir)


def funding(world: ChainWorld, first_seen: dict[str, float], events: EventColumns,
            rng: np.random.Generator, floor: float) -> None:
    """Native-token funding of each wallet of `first_seen` (its first trade's time) shortly
    before it first trades, and not before `floor`."""
    native = world.quotes["native"]
    funders = world.wallets.funders
    rug_funder = funders[-1]
    rugs = set(world.wallets.rug_deployers)
    for wallet, t in first_seen.items():
        when = max(floor, t - float(rng.uniform(600, 3 * 86_400)))
        funder = rug_funder if wallet in rugs else funders[int(rng.integers(len(funders) - 1))]
        amount = int(float(rng.lognormal(0, 1)) * 10**native.decimals)
        if amount > 0:
            events.add("transfers", when, events.tx(), 0, token=native.address,
                       from_address=funder, to_address=wallet, amount=amount)

"""The live market: after its history, each chain goes on producing blocks in real time.

Every block's trades are drawn from a generator seeded by (seed, chain, block) and applied to
the pools' running state, so the market a live writer produces does not depend on how its blocks
were batched: a writer that restarts replays the history and the blocks it committed (without
writing them) and goes on from the same state, with no gap and no duplicate."""

import time
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime

import numpy as np
import polars as pl

from core.prices import TICK_S
from core.renewal import Renewal
from sources.lake import LakeError, LakeWriter
from sources.simulator import (
    SEEN_AT_TIMESTAMP,
    ChainRun,
    SimulationConfig,
    assemble,
    replay,
    replayable,
)
from sources.simulator import WRITER as HISTORY_WRITER
from sources.simulator.derivatives import LiveDerivatives
from sources.simulator.events import EventColumns
from sources.simulator.oracle import PriceBook
from sources.simulator.trading import Regime, regime_for

WRITER = "live"
# Keeps the live draws apart from the history's, which come from the bare seed.
STREAM = 0x11FE
# How far ahead each pool's buy-pressure regimes are drawn when the live market starts.
REGIME_SPAN_S = 400 * 86_400.0
# A batch covers at most this much chain time, so that catching up after a pause prices its
# trades with a price book of bounded size.
CATCH_UP_S = 300.0
# Trades inside a block keep this far from its edges, so that float rounding never places one
# in a neighbouring block.
EDGE_S = 1e-3
# The tables a batch appends, in commit order; the progress mark comes after the last.
APPENDED = ("oracle_updates", "transfers", "liquidity_events", "reserves", "swaps", "blocks",
            "perp_snapshots", "farm_pools", "heads")
LAG_S = {"lagging": 240.0}


def _unpriced(token: object, t: float) -> float:
    """What a trader prices with between batches: nothing (a batch hands it its price book)."""
    raise RuntimeError("a trader priced a trade outside a batch")


@dataclass
class Position:
    """Where the live market stands: each chain's next block, the next oracle tick and the next
    head observation (unix seconds), and the batches committed."""

    blocks: dict[int, int]
    tick: int
    head_at: float
    at: float
    step: int = 0

    def as_meta(self) -> dict[str, object]:
        """The position as a progress mark's metadata."""
        return {"blocks": {str(k): v for k, v in self.blocks.items()}, "tick": self.tick,
                "head_at": self.head_at, "at": self.at, "step": self.step,
                "blocks_seen": SEEN_AT_TIMESTAMP}

    @classmethod
    def from_meta(cls, meta: dict) -> "Position":
        """The position a progress mark recorded."""
        return cls({int(k): int(v) for k, v in meta["blocks"].items()}, int(meta["tick"]),
                   float(meta["head_at"]), float(meta["at"]), int(meta["step"]))


@dataclass
class _Chain:
    run: ChainRun
    index: int
    regimes: list[Regime]
    rates: np.ndarray
    venue_of: dict[str, tuple[str, str]]
    derivatives: LiveDerivatives


class LiveMarket:
    """Every chain's market from the end of its history on, block by block."""

    def __init__(self, config: SimulationConfig, runs: list[ChainRun], lake: LakeWriter) -> None:
        """`lake` holds the history: its last perp snapshots and farm observations are where
        those go on from."""
        self.config = config
        self.end = config.end.timestamp()
        self.chains: list[_Chain] = []
        for i, run in enumerate(runs):
            rng = np.random.default_rng([config.seed, STREAM, i])
            trading = run.market.trading
            regimes = [regime_for(t.trader.pool, self.end, self.end + REGIME_SPAN_S, rng)
                       for t in trading]
            for t in trading:
                t.trader.gift_delay_s = 0.0
            venue_of = {p.address: (p.venue.router, p.venue.factory) for p in run.market.pools}
            chain_id = run.world.template.chain_id
            history = {name: lake.scan(name).filter(pl.col("chain_id") == chain_id).collect()
                       for name in ("perp_markets", "perp_snapshots", "farm_pools")}
            history["perp_snapshots"] = history["perp_snapshots"].filter(
                pl.col("observed_at") < config.end)
            history["farm_pools"] = history["farm_pools"].filter(
                pl.col("observed_at") < config.end)
            derivatives = LiveDerivatives(run.world, run.market.pools, history,
                                          (config.seed, STREAM, i))
            self.chains.append(_Chain(run, i, regimes, np.array([t.rate for t in trading]),
                                      venue_of, derivatives))
        first_tick = PriceBook(config.end, config.end).start
        head_at = min(float(assemble.grid(c.run.world, self.end, self.end + 120, assemble.HEAD_EVERY_S)[0])
                      for c in self.chains)
        self.position = Position(
            {c.run.world.template.chain_id: int(c.run.clock.block(
                c.run.world.indexed_until.timestamp())) + 1 for c in self.chains},
            first_tick, head_at, self.end)
        self._idle()

    def _idle(self) -> None:
        """Let go of what the traders were handed for the last batch (or the history): its
        events and price book. A trader that does not trade for a while would otherwise keep
        the batch it last traded in, each its own book, for as long as the market runs."""
        idle = EventColumns()
        for chain in self.chains:
            for t in chain.run.market.trading:
                t.trader.events, t.trader.quote_usd = idle, _unpriced

    def advance(self, now: float, build: bool = True) -> dict[str, pl.DataFrame]:
        """Produce every block complete by `now` (a lagging chain's by four minutes before, a
        stopped chain's never), the oracle ticks and the head observations up to `now`; returns
        the rows to append (none when `build` is false: a replay only moves the state on)."""
        position = self.position
        since = min(c.run.clock.at(position.blocks[c.run.world.template.chain_id])
                    for c in self.chains)
        book = PriceBook(assemble.utc(min(since, position.tick) - 2 * TICK_S),
                         assemble.utc(now + 2 * TICK_S))
        out: dict[str, list[pl.DataFrame]] = {name: [] for name in APPENDED}
        for chain in self.chains:
            world = chain.run.world
            chain_id = world.template.chain_id
            if world.role == "stopped":
                continue
            events = EventColumns()
            lag = LAG_S.get(world.role, 0.0)
            last = self._trade(chain, now - lag, events, book)
            if build and events.columns:
                for name, frame in self._tables(chain, events, position.blocks[chain_id]).items():
                    out[name].append(assemble.stamp(frame, chain_id))
            for name, frame in chain.derivatives.rows(position.at - lag, now - lag,
                                                      book).items():
                if build:
                    out[name].append(assemble.stamp(frame, chain_id))
            position.blocks[chain_id] = last
        # Every chain's history starts at the same instant, so they share one grid of heads.
        seen = assemble.grid(self.chains[0].run.world, position.head_at, now + EDGE_S,
                             assemble.HEAD_EVERY_S)
        if len(seen):
            if build:
                out["heads"] += [assemble.stamp(assemble.heads_table(c.run.world, c.run.clock,
                                                                     seen),
                                                c.run.world.template.chain_id)
                                 for c in self.chains]
            position.head_at = float(seen[-1]) + assemble.HEAD_EVERY_S
        position.at = now
        ticks_until = int(now) + 1
        if ticks_until > position.tick:
            if build:
                updates = PriceBook(assemble.utc(position.tick), assemble.utc(ticks_until))
                out["oracle_updates"].append(updates.updates())
            position.tick += TICK_S * (-(-(ticks_until - position.tick) // TICK_S))
        self._idle()
        return {name: pl.concat(frames) for name, frames in out.items() if frames}

    def _trade(self, chain: _Chain, until: float, events: EventColumns, book: PriceBook) -> int:
        """Trade every block of the chain that ends by `until`; returns the next block."""
        clock, world = chain.run.clock, chain.run.world
        block = self.position.blocks[world.template.chain_id]
        trading = chain.run.market.trading
        seed = self.config.seed
        while clock.at(block) <= until:
            total = float(chain.rates.sum())
            rng = np.random.default_rng([seed, STREAM, chain.index, block])
            n = int(rng.poisson(total * clock.block_s)) if total > 0 else 0
            if n:
                start = clock.at(block)
                picks = rng.choice(len(trading), n, p=chain.rates / total)
                times = np.sort(rng.uniform(start + EDGE_S, start + clock.block_s - EDGE_S, n))
                for k in np.unique(picks):
                    mine = trading[int(k)]
                    trader = mine.trader
                    trader.rng, trader.events, trader.quote_usd = rng, events, book.quote_usd
                    wanted = times[picks == k]
                    if trader.run(wanted, chain.regimes[int(k)]) < len(wanted):
                        # A bonding curve completed: it trades no more.
                        chain.rates[int(k)] = 0.0
            block += 1
        return block

    def _tables(self, chain: _Chain, events: EventColumns, first_block: int) -> dict[str, pl.DataFrame]:
        rng = np.random.default_rng([self.config.seed, STREAM, chain.index, 1 << 40, first_block])
        return assemble.lake_rows(chain.run.world, assemble.frames_of(events), chain.run.clock,
                                  rng, chain.venue_of)


def start(lake: LakeWriter, progress: Callable[[str], None] = lambda _: None) -> LiveMarket:
    """The live market over `lake`: its history replayed from the identity the simulator
    recorded, then the batches a live writer committed; a batch it began but did not mark is
    rolled back first."""
    mark = lake.progress()
    if mark is None or "seed" not in mark.meta:
        raise LakeError(f"{lake.root} holds no simulated history: run `chaintape simulate` first")
    if mark.writer not in (HISTORY_WRITER, WRITER):
        raise LakeError(f"{lake.root} was last written by {mark.writer!r}, not the simulator")
    if not replayable(mark.meta):
        raise LakeError(f"{lake.root} holds a history an earlier simulator made, which this one "
                        "cannot replay: simulate it again (`chaintape up --fresh`)")
    meta = mark.meta
    config = SimulationConfig.from_identity(meta)
    lake.roll_back(mark)
    began = time.perf_counter()
    market = LiveMarket(config, replay(config), lake)
    progress(f"history replayed [{time.perf_counter() - began:.1f}s]")
    if mark.writer == WRITER:
        target = Position.from_meta(meta["position"])
        _replay(market, target)
        progress(f"{target.step:,} committed batches replayed "
                 f"[{time.perf_counter() - began:.1f}s]")
    return market


def _replay(market: LiveMarket, target: Position) -> None:
    at = market.end
    while at < target.at:
        at = min(at + CATCH_UP_S, target.at)
        market.advance(at, build=False)
    if (market.position.blocks, market.position.tick, market.position.head_at) != (
            target.blocks, target.tick, target.head_at):
        raise LakeError("the live market's replay does not reach the position the lake "
                        f"recorded ({market.position} against {target})")
    market.position = target


def commit(lake: LakeWriter, market: LiveMarket, now: float) -> dict[str, int]:
    """Produce everything up to `now` and append it, one commit per table, then mark the
    batch; returns the rows appended per table."""
    tables = market.advance(now)
    for name in APPENDED:
        if name in tables:
            lake.append(name, tables[name])
    market.position.step += 1
    lake.mark(assemble.utc(now), WRITER, market.position.step,
              meta={**market.config.identity(), "position": market.position.as_meta()})
    return {name: frame.height for name, frame in tables.items()}


def run(lake: LakeWriter, every_s: float = 1.0, until: datetime | None = None,
        stop: Callable[[], bool] = lambda: False,
        progress: Callable[[str], None] = lambda _: None,
        market: LiveMarket | None = None, renewal: Renewal | None = None) -> LiveMarket:
    """Write the live market to `lake` every `every_s` seconds of wall time, catching up first
    when the lake trails the clock, until `until` (or for ever, or until `stop` says so),
    renewed in place by `renewal` between two batches when it is due. It goes on from `market`
    when given (the history just written), else from the lake's mark."""
    market = market or start(lake, progress)
    last_said = 0.0
    while not stop():
        if renewal is not None:
            renewal.step()
        wall = time.time()
        # Whole seconds: the watermark every product is computed as of.
        now = float(int(min(wall, until.timestamp()) if until else wall))
        behind = now - market.position.at
        now = min(now, market.position.at + CATCH_UP_S)
        counts = commit(lake, market, now)
        if time.monotonic() - last_said > 60 or behind > CATCH_UP_S:
            progress(f"live: batch {market.position.step:,} up to {assemble.utc(now):%H:%M:%S}"
                     f", {counts.get('swaps', 0)} swaps"
                     + (f", {behind:,.0f}s behind" if behind > CATCH_UP_S else ""))
            last_said = time.monotonic()
        if until and now >= until.timestamp():
            break
        if behind <= CATCH_UP_S:
            time.sleep(max(0.0, every_s - (time.time() - wall)))
    return market


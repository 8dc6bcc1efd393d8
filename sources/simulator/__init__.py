"""The market simulator: a deterministic multi-chain market written to the lake."""

import time
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

import numpy as np
import polars as pl

from sources.lake import TABLES, LakeWriter
from sources.simulator import assemble, derivatives, entities, ids, market
from sources.simulator.events import EventColumns
from sources.simulator.oracle import PriceBook
from sources.simulator.world import CHAIN_TEMPLATES, ChainWorld, build_chain

DEFAULT_END = datetime(2026, 11, 20, tzinfo=UTC)
MIN_CHAINS = 4
DAY_S = market.DAY_S
# Swaps (of every chain) made at once at most, and the parts of a day a span may be.
SPAN_SWAPS = 200_000
SPLITS = (1, 2, 3, 4, 6, 8, 12, 24)


@dataclass(frozen=True)
class SimulationConfig:
    """What to simulate: how many chains, days and swaps, from which seed, ending when."""

    chains: int = 6
    days: int = 7
    swaps: int = 1_000_000
    seed: int = 7
    end: datetime = DEFAULT_END

    def validate(self) -> None:
        """Refuse settings the simulator cannot honour, saying why."""
        if not MIN_CHAINS <= self.chains <= len(CHAIN_TEMPLATES):
            raise ValueError(f"--chains must be {MIN_CHAINS}..{len(CHAIN_TEMPLATES)} "
                             "(every edge case needs a lagging and a stopped chain)")
        if not 1 <= self.days <= 90:
            raise ValueError("--days must be 1..90")
        if self.swaps < 1_000:
            raise ValueError("--swaps must be at least 1000")
        if self.end.tzinfo is None:
            raise ValueError("end must be timezone-aware")

    def span_seconds(self) -> float:
        """How much of the history is made at once: a day, or the part of one (a divisor of it
        that every chain's blocks meet) that holds about SPAN_SWAPS swaps, so a history of any
        size is made in about the same memory."""
        return DAY_S / self.spans_a_day()

    def spans_a_day(self) -> int:
        """How many spans a day of the history is made in (`span_seconds`)."""
        per_day = self.swaps / self.days
        return next((k for k in SPLITS if per_day / k <= SPAN_SWAPS), SPLITS[-1])

    def identity(self) -> dict[str, object]:
        """What makes a simulated lake: the same identity gives the same lake, byte for byte."""
        return {"chains": self.chains, "days": self.days, "swaps": self.swaps,
                "seed": self.seed, "end": self.end.isoformat(), "made": MADE}

    @classmethod
    def from_identity(cls, identity: dict) -> "SimulationConfig":
        """The configuration an identity (as a progress mark records it) names."""
        return cls(int(identity["chains"]), int(identity["days"]), int(identity["swaps"]),
                   int(identity["seed"]), datetime.fromisoformat(identity["end"]))


WRITER = "simulator"
# How a history is made, recorded with its identity: a history made another way (an earlier
# simulator's) cannot be replayed to its state, so the live market cannot go on from it.
MADE = "spans-1"


# The assembly's draws (hashes, gas, entities) come from a generator of their own, so the
# market's draws, and so its state, are the same whether or not its rows are made.
ASSEMBLY = 0xA55E
# Rows queued before they are appended: the lake is written in pieces of about this size.
FLUSH_BYTES = 64 << 20


# A live block is produced as soon as its timestamp has come, as a real chain's is seen right
# after it; a live writer's marks say so. A lake whose live batches were written when a block
# came one block later (its marks do not say it) is simulated again.
SEEN_AT_TIMESTAMP = "at_timestamp"


def replayable(meta: dict) -> bool:
    """Whether the live market can go on from a lake whose mark says `meta`: a history this
    simulator made, and live batches, if any, written by the rule it follows."""
    position = meta.get("position")
    return ("seed" in meta and meta.get("made") == MADE
            and (position is None or position.get("blocks_seen") == SEEN_AT_TIMESTAMP))


def roles(n: int) -> list[str]:
    """Which chain lags and which stops syncing: the last two of the selection."""
    return ["live"] * (n - 2) + ["lagging", "stopped"]


@dataclass
class ChainRun:
    """One chain after its history: its world, its market's running state and its clock."""

    world: ChainWorld
    market: market.MarketRun
    clock: assemble.Clock


def _chains(config: SimulationConfig):
    """Each chain's world, swap budget and random generator, in the order they are drawn."""
    end = config.end
    start = end - timedelta(days=config.days)
    chain_seeds = np.random.SeedSequence(config.seed).spawn(config.chains)
    templates = CHAIN_TEMPLATES[:config.chains]
    weights = np.array([t.weight for t in templates])
    budget = np.floor(config.swaps * weights / weights.sum()).astype(int)
    budget[0] += config.swaps - budget.sum()
    for i, (template, role) in enumerate(zip(templates, roles(config.chains), strict=True)):
        rng = np.random.default_rng(chain_seeds[i])
        world = build_chain(template, role, start, end, int(budget[i]), rng)
        yield world, int(budget[i]), rng


class ChainHistory:
    """One chain's history made a span at a time: its market stepped through each span, the
    wallets that first traded in it funded, and its events handed over as lake rows (blocks,
    log indexes and hashes filled in) once no later event can fall in their blocks."""

    def __init__(self, world: ChainWorld, budget: int, rng: np.random.Generator,
                 book: PriceBook, assembly: np.random.Generator, span_s: float) -> None:
        self.world, self.rng, self.assembly = world, rng, assembly
        self.clock = assemble.Clock(world)
        self.events = EventColumns()
        self.perps = derivatives.perp_markets(world) if world.template.perps else []
        market.deployments(world, self.events)
        self.market = market.Market(world, budget, rng, book.quote_usd, self.events, span_s)
        self.extra = (derivatives.perp_tables(world, book, rng, self.events)
                      if self.perps else {})
        self.seen: set[str] = set()
        self.carried: dict[str, pl.DataFrame] = {}
        self.deploys: list[pl.DataFrame] = []
        self.mints: list[pl.DataFrame] = []

    def step(self, span: int) -> None:
        """Trade the history's `span` and fund the wallets that traded for the first time in it
        (the first span's from up to 30 days before the history, the others' within the span)."""
        self.market.trade(span)
        swaps = self.events.columns.get("swaps", {})
        first: dict[str, float] = {}
        for maker, t in zip(swaps.get("maker", ()), swaps.get("t", ()), strict=True):
            if maker not in self.seen and t < first.get(maker, np.inf):
                first[maker] = t
        self.seen.update(first)
        start = self.world.start.timestamp()
        floor = start - 30 * DAY_S if span == 0 else start + span * self.market.span_s
        market.funding(self.world, first, self.events, self.rng, floor)

    def discard(self) -> None:
        """Forget the events made so far (a replay moves the state on without rows)."""
        self.events.columns.clear()

    def take(self, before: float | None) -> dict[str, pl.DataFrame]:
        """The lake rows of the events in blocks that start before `before` (every event when
        None); the rest wait for the next span."""
        frames = assemble.frames_of(self.events)
        self.discard()
        for name, kept in self.carried.items():
            frames[name] = (pl.concat([kept, frames[name]], how="vertical_relaxed")
                            if name in frames else kept)
        self.carried = {}
        if before is not None:
            cutoff = int(self.clock.block(before))
            for name in list(frames):
                late = pl.Series(self.clock.block(frames[name]["t"].to_numpy()) >= cutoff)
                if late.any():
                    self.carried[name] = frames[name].filter(late)
                    frames[name] = frames[name].filter(~late)
                if frames[name].is_empty():
                    del frames[name]
        if not frames:
            return {}
        venue_of = {p.address: (p.venue.router, p.venue.factory) for p in self.market.pools}
        tables = assemble.lake_rows(self.world, frames, self.clock, self.assembly, venue_of)
        zero = market.zero_address(self.world)
        if "transfers" in tables:
            self.deploys.append(tables["transfers"].filter(pl.col("from_address") == zero)
                                .select("token", "tx_hash", "block_number", "block_time"))
        if "liquidity_events" in tables:
            self.mints.append(tables["liquidity_events"].filter(pl.col("kind") == "mint"))
        return tables

    def entities(self, end: datetime) -> dict[str, pl.DataFrame]:
        """The chain's tables that describe rather than happen: heads, tokens, pairs, venues,
        profiles, labels, LP locks, farm observations and the perp markets'."""
        world, clock, rng, perps = self.world, self.clock, self.assembly, self.perps
        run = self.market.result()
        tables = dict(self.extra)
        tables["heads"] = assemble.heads_table(
            world, clock, assemble.grid(world, world.start.timestamp(), end.timestamp(),
                                        assemble.HEAD_EVERY_S))
        observed = world.indexed_until.timestamp()
        # A perp market's base is listed, not minted: its listing transaction is its
        # deployment and the market's creation.
        listed = ids.tx_hashes(world.template.address_format, rng, len(perps))
        listings = pl.DataFrame({
            "address": [t.address for _, t in perps], "tx_hash": listed.tolist(),
            "block_number": clock.block(np.array([t.deployed_at.timestamp() for _, t in perps]))
            .tolist(),
            "block_time": [t.deployed_at for _, t in perps]},
            schema={"address": pl.String, "tx_hash": pl.String, "block_number": pl.Int64,
                    "block_time": pl.Datetime("us", "UTC")})
        deploys = pl.concat([*self.deploys, listings.rename({"address": "token"})])
        tables["tokens"] = entities.tokens_table(world, [t for _, t in perps], deploys,
                                                 observed, rng)
        tables["pairs"] = entities.pairs_table(world, run.pools, pl.concat(self.mints), perps,
                                               clock, listings)
        tables["venues"] = entities.venues_table(world)
        tables["token_profiles"] = entities.profiles_table(world, observed, rng)
        rugged = {t.deployer: t.address for t in world.tokens if t.status in (999, 1000)}
        tables["address_labels"] = entities.labels_table(world, rugged,
                                                         derivatives.farm_factories(world))
        tables["lp_locks"] = _locks_table(run.locks, clock, rng, world)
        tables["farm_pools"] = derivatives.farm_observations(world, run.pools, rng)
        return tables


class _Rows:
    """Lake rows on their way: appended a table at a time, in one commit each, whenever they
    come to FLUSH_BYTES, so the lake is written in pieces of about that size."""

    def __init__(self, lake: LakeWriter) -> None:
        self.lake = lake
        self.frames: dict[str, list[pl.DataFrame]] = {}
        self.bytes = 0.0
        self.counts: dict[str, int] = {}

    def add(self, tables: dict[str, pl.DataFrame], chain_id: int | None) -> None:
        """Queue `tables` (stamped with `chain_id` when given)."""
        for name, frame in tables.items():
            if chain_id is not None:
                frame = assemble.stamp(frame, chain_id)
            self.frames.setdefault(name, []).append(frame)
            self.counts[name] = self.counts.get(name, 0) + frame.height
            self.bytes += frame.estimated_size()
        if self.bytes >= FLUSH_BYTES:
            self.write()

    def write(self) -> None:
        """Append what is queued."""
        for name, frames in self.frames.items():
            self.lake.append(name, pl.concat(frames, how="diagonal_relaxed"))
        self.frames, self.bytes = {}, 0.0


def simulate(config: SimulationConfig, lake: LakeWriter,
             progress: Callable[[str], None] = lambda _: None,
             runs: list[ChainRun] | None = None) -> dict[str, int]:
    """Write the whole simulated lake, replacing what was there, a span of every chain at a time
    (so in about the same memory at any size); returns rows per table. Each chain's state at
    the end is added to `runs` when given (the live market goes on from it)."""
    config.validate()
    started = time.perf_counter()
    end = config.end
    book = PriceBook(end - timedelta(days=config.days), end)
    for table in TABLES:
        lake.drop(table)
    rows = _Rows(lake)
    histories = _histories(config, book)
    span_s = config.span_seconds()
    per_day = config.spans_a_day()
    spans = config.days * per_day
    swaps = 0
    for span in range(spans):
        for history in histories:
            history.step(span)
            before = (None if span == spans - 1 else
                      history.world.start.timestamp() + (span + 1) * span_s)
            rows.add(history.take(before), history.world.template.chain_id)
        if (span + 1) % per_day == 0:
            day = (span + 1) // per_day
            progress(f"day {day}/{config.days}: {rows.counts.get('swaps', 0) - swaps:,} swaps "
                     f"on {config.chains} chains [{time.perf_counter() - started:.1f}s]")
            swaps = rows.counts.get("swaps", 0)
    chain_rows: list[dict[str, object]] = []
    registry: dict[str, dict[str, object]] = {}
    instances: list[dict[str, object]] = []
    for history in histories:
        world = history.world
        rows.add(history.entities(end), world.template.chain_id)
        if runs is not None:
            runs.append(ChainRun(world, history.market.result(), history.clock))
        chain_rows.append(entities.chain_row(world))
        instances += entities.registry_rows(world, registry)
    rows.add({
        "chains": pl.DataFrame(chain_rows),
        "token_registry": pl.DataFrame(list(registry.values())).with_columns(
            rank=pl.int_range(1, pl.len() + 1)),
        "token_instances": pl.DataFrame(instances),
        "oracle_feeds": book.feeds(),
        "oracle_updates": book.updates(),
    }, None)
    rows.write()
    progress(f"{rows.counts['swaps']:,} swaps, {rows.counts['oracle_updates']:,} oracle updates "
             f"of {rows.counts['oracle_feeds']} feeds [{time.perf_counter() - started:.1f}s]")
    lake.mark(end, WRITER, 0, meta=config.identity())
    return rows.counts


def _histories(config: SimulationConfig, book: PriceBook) -> list[ChainHistory]:
    """Each chain's history, ready for its first day."""
    return [ChainHistory(world, budget, rng, book,
                         np.random.default_rng([config.seed, ASSEMBLY, i]),
                         config.span_seconds())
            for i, (world, budget, rng) in enumerate(_chains(config))]


def replay(config: SimulationConfig) -> list[ChainRun]:
    """Each chain's state at the end of the history `config` writes, without writing it: the
    same draws in the same order, so the same state."""
    config.validate()
    book = PriceBook(config.end - timedelta(days=config.days), config.end)
    histories = _histories(config, book)
    for span in range(config.days * config.spans_a_day()):
        for history in histories:
            history.step(span)
            history.discard()
    return [ChainRun(h.world, h.market.result(), h.clock) for h in histories]


def _locks_table(locks: list[dict], clock: assemble.Clock, rng: np.random.Generator,
                 world: ChainWorld) -> pl.DataFrame:
    """LP locks and burns, each in its own transaction."""
    hashes = ids.tx_hashes(world.template.address_format, rng, len(locks))
    frame = pl.DataFrame({
        "pair": [lk["pair"] for lk in locks], "kind": [lk["kind"] for lk in locks],
        "provider": pl.Series([lk["provider"] for lk in locks], dtype=pl.String),
        "locker_address": [lk["locker_address"] for lk in locks],
        "owner": [lk["owner"] for lk in locks],
        "locked_at": [lk["t"] for lk in locks],
        "unlock_at": pl.Series([lk["unlock"] for lk in locks], dtype=pl.Float64),
        "tx_hash": hashes.tolist(),
        "block_number": clock.block(np.array([lk["t"] for lk in locks], dtype=float)),
    }).with_columns(assemble.raw_series("amount", [lk["amount"] for lk in locks]))
    return assemble.with_utc(frame, "locked_at", "unlock_at")

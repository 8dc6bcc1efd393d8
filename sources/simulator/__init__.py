"""The market simulator: a deterministic multi-chain market written to the lake."""

import time
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

import numpy as np
import polars as pl

from sources.lake import TABLES, Lake
from sources.simulator import assemble, derivatives, entities, ids, market
from sources.simulator.events import Events
from sources.simulator.oracle import PriceBook
from sources.simulator.world import CHAIN_TEMPLATES, ChainWorld, build_chain

DEFAULT_END = datetime(2026, 11, 20, tzinfo=UTC)
MIN_CHAINS = 4


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

    def identity(self) -> dict[str, object]:
        """What makes a simulated lake: the same identity gives the same lake, byte for byte."""
        return {"chains": self.chains, "days": self.days, "swaps": self.swaps,
                "seed": self.seed, "end": self.end.isoformat()}

    @classmethod
    def from_identity(cls, identity: dict) -> "SimulationConfig":
        """The configuration an identity (as a progress mark records it) names."""
        return cls(int(identity["chains"]), int(identity["days"]), int(identity["swaps"]),
                   int(identity["seed"]), datetime.fromisoformat(identity["end"]))


WRITER = "simulator"


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


def simulate(config: SimulationConfig, lake: Lake,
             progress: Callable[[str], None] = lambda _: None,
             runs: list[ChainRun] | None = None) -> dict[str, int]:
    """Write the whole simulated lake, replacing what was there; returns rows per table. Each
    chain's state at the end is added to `runs` when given (the live market goes on from it)."""
    config.validate()
    started = time.perf_counter()
    end = config.end
    book = PriceBook(end - timedelta(days=config.days), end)
    for table in TABLES:
        lake.drop(table)
    counts: dict[str, int] = {}
    chain_rows: list[dict[str, object]] = []
    registry: dict[str, dict[str, object]] = {}
    instances: list[dict[str, object]] = []
    for i, (world, budget, rng) in enumerate(_chains(config)):
        template, role = world.template, world.role
        tables, run = _chain_tables(world, budget, book, rng, end)
        if runs is not None:
            runs.append(ChainRun(world, run, assemble.Clock(world)))
        chain_rows.append(entities.chain_row(world))
        instances += entities.registry_rows(world, registry)
        for name, frame in tables.items():
            lake.write(name, assemble.stamp(frame, template.chain_id))
            counts[name] = counts.get(name, 0) + frame.height
        progress(f"chain {i + 1}/{config.chains} {template.slug} ({role}): "
                 f"{tables['swaps'].height:,} swaps, {len(world.tokens):,} tokens "
                 f"[{time.perf_counter() - started:.1f}s]")
    globals_ = {
        "chains": pl.DataFrame(chain_rows),
        "token_registry": pl.DataFrame(list(registry.values())).with_columns(
            rank=pl.int_range(1, pl.len() + 1)),
        "token_instances": pl.DataFrame(instances),
        "oracle_feeds": book.feeds(),
        "oracle_updates": book.updates(),
    }
    for name, frame in globals_.items():
        lake.write(name, frame)
        counts[name] = frame.height
    progress(f"oracle: {globals_['oracle_updates'].height:,} updates of "
             f"{globals_['oracle_feeds'].height} feeds [{time.perf_counter() - started:.1f}s]")
    lake.mark(end, WRITER, 0, meta=config.identity())
    return counts


def replay(config: SimulationConfig) -> list[ChainRun]:
    """Each chain's state at the end of the history `config` writes, without writing it: the
    same draws in the same order, so the same state."""
    config.validate()
    book = PriceBook(config.end - timedelta(days=config.days), config.end)
    return [ChainRun(world, market.simulate_market(world, budget, rng, book.quote_usd, Events()),
                     assemble.Clock(world))
            for world, budget, rng in _chains(config)]


def _chain_tables(world: ChainWorld, n_swaps: int, book: PriceBook, rng: np.random.Generator,
                  end: datetime) -> tuple[dict[str, pl.DataFrame], market.MarketRun]:
    events = Events()
    perps = derivatives.perp_markets(world) if world.template.perps else []
    market.deployments(world, events)
    run = market.simulate_market(world, n_swaps, rng, book.quote_usd, events)
    pools, locks = run.pools, run.locks
    extra_tables = derivatives.perp_tables(world, book, rng, events) if perps else {}
    first_seen: dict[str, float] = {}
    swaps = events.columns["swaps"]
    for maker, t in zip(swaps["maker"], swaps["t"], strict=True):
        if maker not in first_seen:
            first_seen[maker] = t
    market.funding(world, first_seen, events, rng)
    clock = assemble.Clock(world)
    tables = assemble.event_tables(world, events, clock, rng)
    venue_of = {p.address: (p.venue.router, p.venue.factory) for p in pools}
    tables["swaps"] = assemble.swap_details(tables["swaps"], world, venue_of, rng)
    tables = {name: frame.drop("t", "tx", "sub") for name, frame in tables.items()}
    tables["blocks"] = assemble.blocks_table(tables)
    tables["heads"] = assemble.heads_table(
        world, clock, assemble.grid(world, world.start.timestamp(), end.timestamp(), assemble.HEAD_EVERY_S))
    deploys = tables["transfers"].filter(pl.col("from_address") == market.zero_address(world))
    observed = world.indexed_until.timestamp()
    # A perp market's base is listed, not minted: its listing transaction is its deployment
    # and the market's creation.
    listed = ids.tx_hashes(world.template.address_format, rng, len(perps))
    listings = pl.DataFrame({
        "address": [t.address for _, t in perps], "tx_hash": listed.tolist(),
        "block_number": clock.block(np.array([t.deployed_at.timestamp() for _, t in perps]))
        .tolist(),
        "block_time": [t.deployed_at for _, t in perps]},
        schema={"address": pl.String, "tx_hash": pl.String, "block_number": pl.Int64,
                "block_time": pl.Datetime("us", "UTC")})
    deploys = pl.concat([deploys.select(token="token", tx_hash="tx_hash",
                                        block_number="block_number", block_time="block_time"),
                         listings.rename({"address": "token"})])
    tables["tokens"] = entities.tokens_table(world, [t for _, t in perps], deploys, observed, rng)
    mints = tables["liquidity_events"].filter(pl.col("kind") == "mint")
    tables["pairs"] = entities.pairs_table(world, pools, mints, perps, clock, listings)
    tables["venues"] = entities.venues_table(world)
    tables["token_profiles"] = entities.profiles_table(world, observed, rng)
    rugged = {t.deployer: t.address for t in world.tokens if t.status in (999, 1000)}
    tables["address_labels"] = entities.labels_table(world, rugged,
                                                     derivatives.farm_factories(world))
    tables["lp_locks"] = _locks_table(locks, clock, rng, world)
    tables["farm_pools"] = derivatives.farm_observations(world, pools, rng)
    tables.update(extra_tables)
    return tables, run


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

"""Perpetual markets, their snapshots and liquidations, and yield farms of one chain."""

from datetime import timedelta

import numpy as np
import polars as pl

from core.feeds import FEED_BY_BASE
from sources.simulator import ids
from sources.simulator.assemble import grid, raw_series, with_utc
from sources.simulator.events import EventColumns
from sources.simulator.oracle import PriceBook
from sources.simulator.pools import SimulatedPool
from sources.simulator.world import ChainWorld, TokenSpec

PERP_BASES = ("BTC", "ETH", "SOL", "HYPE", "SUI")
GAPPY_MARKET = "SUI"
SNAPSHOT_S = 300
LIQUIDATION_FEED_STOPS = timedelta(hours=36)
STALE_FARM = timedelta(days=3)


def perp_markets(world: ChainWorld) -> list[tuple[str, TokenSpec]]:
    """(market address, synthetic base token) of every perp market on the venue's chain."""
    fmt, slug = world.template.address_format, world.template.slug
    listed = world.start - timedelta(days=200)
    venue = next(v for v in world.venues if v.category == "perps")
    markets = []
    for base in PERP_BASES:
        token = TokenSpec(ids.named_address(fmt, f"{slug}:perp-asset:{base}"), base,
                          f"{base} perpetual", 8, 0, "perp_base", venue.router, listed,
                          feed=FEED_BY_BASE[base], verified=True, honeypot_test="pass")
        markets.append((ids.named_address(fmt, f"{slug}:perp:{base}-USD"), token))
    return markets


def perp_tables(world: ChainWorld, book: PriceBook, rng: np.random.Generator,
                events: EventColumns) -> dict[str, pl.DataFrame]:
    """Markets, 5-minute snapshots (open interest with gaps), liquidations and heartbeats."""
    start, end = world.start.timestamp(), world.indexed_until.timestamp()
    stop = max(end - LIQUIDATION_FEED_STOPS.total_seconds(), start + (end - start) / 4)
    venue = next(v for v in world.venues if v.category == "perps")
    times = np.arange(start, end, SNAPSHOT_S)
    markets, snaps = [], []
    for market, token in perp_markets(world):
        feed = token.feed
        assert feed is not None
        oracle = np.array([book.usd(feed, t) for t in times])
        premium = np.cumsum(rng.normal(0, 2e-4, len(times))) * 0.1
        oi_base = float(rng.lognormal(np.log(5e7), 0.8))
        oi_long = oi_base * np.exp(np.cumsum(rng.normal(0, 0.01, len(times))))
        oi_short = oi_long * (1 + rng.normal(0, 0.05, len(times)))
        observed = np.ones(len(times), dtype=bool)
        gaps = 6 if token.symbol == GAPPY_MARKET else 1
        for _ in range(gaps):
            a = int(rng.integers(0, len(times) - 72))
            observed[a:a + int(rng.integers(12, 72))] = False
        funding = premium / 8 + 1.25e-5
        markets.append({"market": market, "venue_id": venue.venue_id, "symbol": f"{token.symbol}-USD",
                        "base_feed_id": feed.feed_id, "max_leverage": float(rng.choice([10, 20, 40, 50])),
                        "only_isolated": token.symbol == GAPPY_MARKET,
                        "listed_at": world.start - timedelta(days=200)})
        snaps.append(pl.DataFrame({
            "market": market, "observed_at": times, "mark_price": oracle * (1 + premium),
            "oracle_price": oracle,
            "oi_long_usd": np.where(observed, np.abs(oi_long), np.nan),
            "oi_short_usd": np.where(observed, np.abs(oi_short), np.nan),
            "funding_long_1h": funding, "funding_short_1h": -funding,
            "borrow_long_1h": np.full(len(times), 1e-6), "borrow_short_1h": np.full(len(times), 1e-6),
            "volume_usd": rng.lognormal(np.log(oi_base / 500), 0.7, len(times)),
        }).with_columns(pl.col("oi_long_usd", "oi_short_usd").fill_nan(None)))
        n_liq = int(rng.poisson((stop - start) / 3_600))
        for t in np.sort(rng.uniform(start, stop, n_liq)):
            events.add("liquidations", float(t), events.tx(), 0, market=market,
                       side=str(rng.choice(["long", "short"])),
                       size_usd=float(rng.lognormal(np.log(8_000), 1.3)),
                       price=book.usd(feed, float(t)))
    beats = np.arange(start, stop, SNAPSHOT_S)
    return {
        "perp_markets": pl.DataFrame(markets),
        "perp_snapshots": pl.concat(snaps).with_columns(
            pl.from_epoch("observed_at", time_unit="s").dt.replace_time_zone("UTC")),
        "liquidation_heartbeats": pl.DataFrame({"observed_at": beats}).with_columns(
            pl.from_epoch("observed_at", time_unit="s").dt.replace_time_zone("UTC")),
    }


def farm_factories(world: ChainWorld) -> list[tuple[str, str]]:
    """(address, name) of the chain's two farm factories: the first verified, the second not."""
    fmt, slug = world.template.address_format, world.template.slug
    dex = next(v for v in world.venues if v.category == "dex")
    names = (f"{dex.name} MasterChef", "YieldMax Farms")
    return [(ids.named_address(fmt, f"{slug}:farm-factory:{f}"), name)
            for f, name in enumerate(names)]


def farm_observations(world: ChainWorld, pools: list[SimulatedPool],
                      rng: np.random.Generator) -> pl.DataFrame:
    """Hourly observations of two farm contracts: one verified, one not; one goes stale."""
    fmt, slug = world.template.address_format, world.template.slug
    start, end = world.start.timestamp(), world.indexed_until.timestamp()
    candidates = [p for p in pools if p.story == "established"] or pools[:3]
    rewards = [t for t in world.tokens if t.kind == "established"] or [world.quotes["native"]]
    rows = []
    factories = farm_factories(world)
    for f, verified in enumerate((True, False)):
        farm = ids.named_address(fmt, f"{slug}:farm:{f}")
        factory = factories[f][0]
        reward = rewards[f % len(rewards)]
        stale_for = min(STALE_FARM.total_seconds(), (end - start) / 2)
        last = end - (stale_for if not verified else 0)
        picks = rng.choice(len(candidates), size=min(4, len(candidates)), replace=False)
        for pid, index in enumerate(picks):
            pool = candidates[int(index)]
            stake = 0.0 if pid == 3 else float(rng.uniform(0.05, 0.6))
            rate = int(float(rng.lognormal(0, 1)) * 10**reward.decimals // 100)
            for t in np.arange(start, last, 3_600):
                drift = stake * float(np.exp(rng.normal(0, 0.02)))
                rows.append({"farm_address": farm, "pid": pid, "lp_token": pool.address,
                             "reward_token": reward.address, "reward_per_second_raw": rate,
                             "staked_raw": int(pool.lp_supply * min(drift, 0.95)),
                             "factory": factory, "verified": verified, "observed_at": float(t)})
    raw_names = ("staked_raw", "reward_per_second_raw")
    plain = [{k: v for k, v in r.items() if k not in raw_names} for r in rows]
    frame = pl.DataFrame(plain).with_columns(
        raw_series(name, [r[name] for r in rows]) for name in raw_names)
    return with_utc(frame, "observed_at")


class LiveDerivatives:
    """One chain's perp snapshots and farm observations after its history, from the state its
    history's last rows left: every 5 minutes a snapshot of each perp market (the premium and
    open interest walk on), every hour an observation of each verified farm's pools (the
    unverified farm stays stale, the liquidation feed stays stopped). Each instant's draws come
    from a generator seeded by the seed, the chain and the instant."""

    def __init__(self, world: ChainWorld, pools: list[SimulatedPool], history: dict[str, pl.DataFrame],
                 seed: tuple[int, ...]) -> None:
        self.world, self.seed = world, seed
        self.lp_supply = {p.address: p.lp_supply for p in pools}
        feeds = {f.feed_id: f for f in FEED_BY_BASE.values()}
        markets = history["perp_markets"]
        self.feeds = {r["market"]: feeds[r["base_feed_id"]]
                      for r in markets.iter_rows(named=True)}
        snaps = history["perp_snapshots"].sort("observed_at")
        self.perps: dict[str, dict[str, float]] = {}
        for (market,), rows in snaps.group_by("market", maintain_order=True):
            last = rows.row(-1, named=True)
            seen = rows.drop_nulls("oi_long_usd")
            self.perps[str(market)] = {
                "premium": last["mark_price"] / last["oracle_price"] - 1,
                "oi_long": float(seen["oi_long_usd"][-1]) if seen.height else 5e7,
                "volume_mu": float(np.log(np.median(rows["volume_usd"].to_numpy())))}
        farms = history["farm_pools"].filter(pl.col("verified")).sort("observed_at")
        self.farms = [
            {**rows.row(-1, named=True),
             "stake": int(rows["staked_raw"][-1]) / max(self.lp_supply.get(
                 str(rows["lp_token"][-1]), 1), 1)}
            for _, rows in farms.group_by("farm_address", "pid", maintain_order=True)]

    def rows(self, since: float, until: float, book: PriceBook) -> dict[str, pl.DataFrame]:
        """The snapshots and observations at the grid instants in [since, until)."""
        out: dict[str, pl.DataFrame] = {}
        snaps = [self._snapshot(float(t), book) for t in grid(self.world, since, until, SNAPSHOT_S)]
        if snaps and self.perps:
            out["perp_snapshots"] = pl.DataFrame([r for rows in snaps for r in rows]).with_columns(
                pl.col("oi_long_usd", "oi_short_usd").cast(pl.Float64),
                pl.from_epoch("observed_at", time_unit="s").dt.replace_time_zone("UTC"))
        seen = [self._observation(float(t)) for t in grid(self.world, since, until, 3_600)]
        if seen and self.farms:
            rows = [r for batch in seen for r in batch]
            raw_names = ("staked_raw", "reward_per_second_raw")
            frame = pl.DataFrame([{k: v for k, v in r.items() if k not in raw_names}
                                  for r in rows]).with_columns(
                raw_series(name, [r[name] for r in rows]) for name in raw_names)
            out["farm_pools"] = with_utc(frame, "observed_at")
        return out

    def _snapshot(self, t: float, book: PriceBook) -> list[dict]:
        rng = np.random.default_rng([*self.seed, SNAPSHOT_S, int(t)])
        rows = []
        for market, state in self.perps.items():
            oracle = book.usd(self.feeds[market], t)
            state["premium"] += float(rng.normal(0, 2e-4)) * 0.1
            state["oi_long"] *= float(np.exp(rng.normal(0, 0.01)))
            funding = state["premium"] / 8 + 1.25e-5
            rows.append({
                "market": market, "observed_at": t, "mark_price": oracle * (1 + state["premium"]),
                "oracle_price": oracle, "oi_long_usd": abs(state["oi_long"]),
                "oi_short_usd": abs(state["oi_long"] * (1 + float(rng.normal(0, 0.05)))),
                "funding_long_1h": funding, "funding_short_1h": -funding,
                "borrow_long_1h": 1e-6, "borrow_short_1h": 1e-6,
                "volume_usd": float(rng.lognormal(state["volume_mu"], 0.7))})
        return rows

    def _observation(self, t: float) -> list[dict]:
        rng = np.random.default_rng([*self.seed, 3_600, int(t)])
        rows = []
        for farm in self.farms:
            drift = farm["stake"] * float(np.exp(rng.normal(0, 0.02)))
            supply = self.lp_supply.get(farm["lp_token"], 0)
            rows.append({
                "farm_address": farm["farm_address"], "pid": farm["pid"],
                "lp_token": farm["lp_token"], "reward_token": farm["reward_token"],
                "reward_per_second_raw": int(farm["reward_per_second_raw"]),
                "staked_raw": int(supply * min(drift, 0.95)), "factory": farm["factory"],
                "verified": True, "observed_at": t})
        return rows

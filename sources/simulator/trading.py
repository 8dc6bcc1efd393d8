"""The trading loop: wallets of every archetype swap against each pool in time order."""

from dataclasses import dataclass

import numpy as np

from sources.simulator import amm
from sources.simulator.events import EventColumns
from sources.simulator.pools import SimulatedPool
from sources.simulator.world import Wallets

# Archetype mix of the swaps in a pool, by the pool's story: ordinary, skilled, sniper, bot,
# market_maker, wash.
MIX = {
    "established": (0.6, 0.06, 0.0, 0.1, 0.18, 0.06),
    "fresh": (0.72, 0.07, 0.06, 0.08, 0.0, 0.07),
    "curve": (0.74, 0.06, 0.08, 0.07, 0.0, 0.05),
    "migrated": (0.72, 0.07, 0.06, 0.08, 0.02, 0.05),
    "honeypot": (0.9, 0.0, 0.05, 0.05, 0.0, 0.0),
    "rug": (0.85, 0.02, 0.08, 0.05, 0.0, 0.0),
    "orphan": (0.9, 0.0, 0.0, 0.05, 0.0, 0.05),
}
MEAN_USD = (250.0, 2_500.0, 700.0, 120.0, 1_200.0, 900.0)
KINDS = ("ordinary", "skilled", "sniper", "bot", "market_maker", "wash")
MIGRATION_MULTIPLE = 6
ORPHAN_UNIT_USD = 1e-6


@dataclass
class Regime:
    """Piecewise buy pressure of a pool: segment ends and the buy probability in each."""

    ends: np.ndarray
    p_buy: np.ndarray


def regime_for(pool: SimulatedPool, t0: float, t1: float, rng: np.random.Generator) -> Regime:
    """Random up, flat and down segments; launches pump first, rugs are bought into."""
    n = max(1, int((t1 - t0) / 43_200) + 1)
    ends = t0 + np.cumsum(rng.exponential(43_200, size=n + 1))
    ends[-1] = max(ends[-1], t1 + 1)
    p = rng.choice([0.62, 0.5, 0.4], size=n + 1)
    if pool.story in ("curve", "fresh"):
        p[0] = rng.choice([0.72, 0.45], p=[0.55, 0.45])
    if pool.story in ("honeypot", "rug"):
        p[:] = 0.8
    return Regime(ends, p)


class Trader:
    """Runs swaps in one pool and records them; the state it mutates is the pool's."""

    def __init__(self, pool: SimulatedPool, wallets: Wallets, events: EventColumns, rng: np.random.Generator,
                 quote_usd) -> None:
        self.pool, self.wallets, self.events, self.rng = pool, wallets, events, rng
        self.quote_usd = quote_usd
        # Carried from one call of `run` to the next: the live market trades block by block.
        self.attempted = 0
        self.pending: str | None = None
        # How long after a buy its buyer moves part of it on; the live market moves it in the
        # same block, which it must finish before it commits.
        self.gift_delay_s = 30.0
        self.rugged = False
        self.snipes = int(rng.integers(3, 9)) if pool.story != "established" else 0
        if pool.story == "curve" and pool.curve_target is None:
            pool.curve_target = pool.r_quote * MIGRATION_MULTIPLE
        audience = wallets.by_archetype["ordinary"]
        size = min(len(audience), 40 + int(rng.integers(0, 400)))
        self.audience = [audience[i] for i in rng.choice(len(audience), size, replace=False)]

    def mint(self, t: float, owner: str, base_raw: int, quote_raw: int, liquidity: int) -> None:
        """Record a deposit and the reserves after it."""
        self._liquidity("mint", t, owner, base_raw, quote_raw, liquidity)

    def burn(self, t: float, owner: str, fraction: float) -> None:
        """Withdraw `fraction` of all liquidity for `owner`."""
        p = self.pool
        liquidity = p.lp_supply * round(fraction * 10_000) // 10_000
        base_raw = p.r_base * liquidity // p.lp_supply
        quote_raw = p.r_quote * liquidity // p.lp_supply
        p.r_base -= base_raw
        p.r_quote -= quote_raw
        p.lp_supply -= liquidity
        self._liquidity("burn", t, owner, base_raw, quote_raw, liquidity)

    def _liquidity(self, kind, t, owner, base_raw, quote_raw, liquidity) -> None:
        p, ev = self.pool, self.events
        tx = ev.tx()
        a0, a1 = (base_raw, quote_raw) if p.base_is_0 else (quote_raw, base_raw)
        r0, r1 = p.reserves()
        ev.add("reserves", t, tx, 0, pair=p.address, reserve0=r0, reserve1=r1)
        ev.add("liquidity_events", t, tx, 1, pair=p.address, kind=kind, owner=owner,
               amount0=a0, amount1=a1, liquidity=liquidity)

    def run(self, times: np.ndarray, regime: Regime, rug_at: float | None = None) -> int:
        """Trade through `times`; stops early (returning the index) when a curve completes."""
        p, rng, wallets = self.pool, self.rng, self.wallets
        n = len(times)
        mix = np.cumsum(MIX[p.story])
        draws = rng.random((n, 4))
        sizes = rng.lognormal(0.0, 1.0, n)
        seg = 0
        threshold = p.curve_target if p.story == "curve" else None
        for i in range(n):
            t = float(times[i])
            if rug_at is not None and not self.rugged and t >= rug_at:
                self.rugged = True
                self._rug(t)
            while t > regime.ends[seg]:
                seg += 1
            u_kind, u_dir, u_pick, u_frac = draws[i]
            rugged = self.rugged
            self.attempted += 1
            if self.pending is not None:
                wallet, buy, kind = self.pending, False, 3
                self.pending = None
            elif self.attempted <= self.snipes:
                wallet, buy, kind = wallets.pick("sniper", rng), True, 2
            else:
                kind = int(np.searchsorted(mix, u_kind * mix[-1], side="right"))
                wallet, buy = self._choose(kind, u_dir, u_pick, regime, seg, t, rugged)
            if not buy and p.story == "honeypot" and wallet != p.creator:
                wallet, buy, kind = self.audience[int(u_pick * len(self.audience))], True, 0
            if buy:
                usd = MEAN_USD[kind] * sizes[i] * (0.05 if rugged else 1.0)
                out = self._buy(t, wallet, usd)
                if kind in (3, 5) and out:
                    self.pending = wallet
                elif out and u_frac < 0.015:
                    self._gift(t, wallet, out, u_pick)
            else:
                held = p.holders.get(wallet, 0)
                frac = 1.0 if kind in (3, 5) or u_frac > 0.6 else (0.25 if u_frac < 0.3 else 0.5)
                self._sell(t, wallet, int(held * frac))
            if threshold is not None and p.r_quote >= threshold:
                return i + 1
        return n

    def _choose(self, kind, u_dir, u_pick, regime, seg, t, rugged) -> tuple[str, bool]:
        p, wallets, rng = self.pool, self.wallets, self.rng
        p_buy = 0.15 if rugged else float(regime.p_buy[seg])
        if kind == 1:
            start = regime.ends[seg - 1] if seg else p.created_at
            early = (t - start) < 0.4 * (regime.ends[seg] - start)
            wallet = wallets.pick("skilled", rng)
            if (p_buy > 0.55 and early) or p.holders.get(wallet, 0) == 0:
                return wallet, True
            return wallet, False
        if kind == 2:
            holder = self._holder_of("sniper")
            if holder and p_buy >= 0.5:
                return holder, False
            kind = 0
        if kind == 4:
            wallet = wallets.pick("market_maker", rng)
            return wallet, p.holders.get(wallet, 0) == 0 or u_dir < 0.5
        if kind in (3, 5):
            group = "bot" if kind == 3 else "wash"
            return wallets.pick(group, rng), True
        if u_dir < p_buy or p.story == "honeypot":
            return self.audience[int(u_pick * len(self.audience))], True
        holder = self._any_holder(u_pick)
        if holder is None:
            return self.audience[int(u_pick * len(self.audience))], True
        return holder, False

    def _holder_of(self, archetype: str) -> str | None:
        group = set(self.wallets.by_archetype[archetype])
        for wallet in self.pool.holder_list[:40]:
            if wallet in group and self.pool.holders.get(wallet, 0) > 0:
                return wallet
        return None

    def _any_holder(self, u: float) -> str | None:
        holders, book = self.pool.holder_list, self.pool.holders
        for attempt in range(4):
            if not holders:
                return None
            wallet = holders[int((u * 7919 + attempt * 0.37) % 1 * len(holders))]
            if book.get(wallet, 0) > 0:
                return wallet
        return None

    def _buy(self, t: float, wallet: str, usd: float) -> int:
        p = self.pool
        if p.story == "orphan":
            amount_in = int(usd / ORPHAN_UNIT_USD) * 10**p.quote.decimals // 10**6
        else:
            amount_in = int(usd / self.quote_usd(p.quote, t) * 10**p.quote.decimals)
        out = amm.amount_out(amount_in, p.r_quote, p.r_base, p.fee_bps) if amount_in > 0 else 0
        if out <= 0:
            return 0
        p.r_quote += amount_in
        p.r_base -= out
        if wallet not in p.holders:
            p.holder_list.append(wallet)
        p.holders[wallet] = p.holders.get(wallet, 0) + out
        self._swap(t, wallet, base_in=0, quote_in=amount_in, base_out=out, quote_out=0)
        return out

    def _sell(self, t: float, wallet: str, amount_in: int) -> None:
        p = self.pool
        if amount_in <= 0 or p.r_quote <= 0:
            return
        out = amm.amount_out(amount_in, p.r_base, p.r_quote, p.fee_bps)
        if out <= 0:
            return
        p.r_base += amount_in
        p.r_quote -= out
        p.holders[wallet] -= amount_in
        self._swap(t, wallet, base_in=amount_in, quote_in=0, base_out=0, quote_out=out)

    def _swap(self, t, wallet, base_in, quote_in, base_out, quote_out) -> None:
        p, ev = self.pool, self.events
        tx = ev.tx()
        r0, r1 = p.reserves()
        if p.base_is_0:
            a0i, a1i, a0o, a1o = base_in, quote_in, base_out, quote_out
        else:
            a0i, a1i, a0o, a1o = quote_in, base_in, quote_out, base_out
        ev.add("reserves", t, tx, 0, pair=p.address, reserve0=r0, reserve1=r1)
        ev.add("swaps", t, tx, 1, pair=p.address, maker=wallet, recipient=wallet,
               amount0_in=a0i, amount1_in=a1i, amount0_out=a0o, amount1_out=a1o)

    def _gift(self, t: float, wallet: str, amount: int, u: float) -> None:
        """A buyer moves part of its tokens to another wallet: no price, never a trade."""
        p = self.pool
        group = "transfer_only" if u < 0.7 else "ordinary"
        to = self.wallets.pick(group, self.rng)
        if to == wallet:
            return
        moved = amount // 2
        p.holders[wallet] -= moved
        if to not in p.holders and group == "ordinary":
            p.holder_list.append(to)
        p.holders[to] = p.holders.get(to, 0) + moved
        self.events.add("transfers", t + self.gift_delay_s, self.events.tx(), 0, token=p.base.address,
                        from_address=wallet, to_address=to, amount=moved)

    def _rug(self, t: float) -> None:
        p = self.pool
        if p.story == "rug":
            self.burn(t, p.creator, 0.985)
        else:
            dump = p.base.supply_raw // 3
            p.holders[p.creator] = p.holders.get(p.creator, 0) + dump
            self._sell(t, p.creator, dump)

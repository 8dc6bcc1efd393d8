"""Prices derived through pools, as the market-data anchors derive them: a token with no price
source of its own is priced through its most liquid pool whose other side is priced, hop by
hop (TOKEN/WETH, then WETH by its feed).

Only the tokens another token's pools are priced through get a feed of their own (a bridge):
a pair is priced by its quote side, so a pair of two tokens without a source needs one side
derived. Each token's level is its hops to a token with a source; in a pool without one, the
side with the lower level is the quote (token1 between equals, as the pair's orientation
rule has it), and that side is a bridge. A bridge's price at a block is, among its pools
whose other side has a lower level, the most liquid one's (liquidity = twice the other
side's reserve in USD, at the block's time) at or above the chain's floor: the pool's
reserves ratio times the other side's USD price. A thinner pool never sets a price; with no
pool at or above the floor the bridge's last price stays in force."""

import math
from collections import defaultdict, deque
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

import polars as pl

from core.feeds import feed_id

# A derived feed's exponent puts about this many digits in its integer price.
DIGITS = 12
# Chainlink's and Pyth's feeds trade at every hour of every day; so do pools.
ALWAYS_OPEN = "Etc/UTC;O,O,O,O,O,O,O;"


def derived_feed_id(chain_id: int, token: str) -> str:
    """The feed of a token's price derived through its pools on a chain."""
    return feed_id("derived", f"{chain_id}:{token}")


def levels(pools: Iterable[tuple[str, str]], priced: Iterable[str]) -> dict[str, int]:
    """Each token's hops to a token with a price source of its own (0 for those); a token no
    pool path reaches has none."""
    neighbours: dict[str, set[str]] = defaultdict(set)
    for a, b in pools:
        neighbours[a].add(b)
        neighbours[b].add(a)
    found = {token: 0 for token in priced}
    queue = deque(found)
    while queue:
        token = queue.popleft()
        for other in sorted(neighbours[token]):
            if other not in found:
                found[other] = found[token] + 1
                queue.append(other)
    return found


def bridges(pools: Iterable[tuple[str, str]], level: Mapping[str, int]) -> set[str]:
    """The tokens without a source of their own that are the quote side of a pool without
    one: the lower level, or token1 between equals."""
    out = set()
    for token0, token1 in pools:
        l0, l1 = level.get(token0), level.get(token1)
        if l0 is None or l1 is None or l0 == 0 or l1 == 0:
            continue
        out.add(token0 if l0 < l1 else token1)
    return out


@dataclass
class Derivation:
    """The bridges of one chain and the state their prices come from: every pool's latest
    reserves, the sources' prices in force and each bridge's last price."""

    chain_id: int
    floor_usd: float
    decimals: dict[str, int] = field(default_factory=dict)
    reserves: dict[str, tuple[int, int]] = field(default_factory=dict)
    last: dict[str, tuple[int, float]] = field(default_factory=dict)
    expo: dict[str, int] = field(default_factory=dict)

    def copy(self) -> "Derivation":
        """An independent copy (a batch read again starts from it)."""
        return Derivation(self.chain_id, self.floor_usd, dict(self.decimals),
                          dict(self.reserves), dict(self.last), dict(self.expo))

    def restart(self, reserves: pl.DataFrame | None, expo: Mapping[str, int],
                last: pl.DataFrame | None) -> None:
        """Stand where the lake stands: each pool's last reserves, each derived feed's
        exponent and last update (publish time and price)."""
        self.reserves = {} if reserves is None else _latest(reserves)
        self.expo = dict(expo)
        self.last = {} if last is None else {
            feed: (int(at), int(price) * 10.0 ** int(e))
            for feed, at, price, e in last.select("feed_id", "publish_time", "price",
                                                  "expo").iter_rows()}

    def updates(self, pools: Mapping[str, tuple[str, str]], sources: Mapping[str, str],
                syncs: pl.DataFrame, times: Mapping[int, int],
                usd: "Prices") -> list[dict[str, Any]]:
        """The bridges' updates of a batch: after each block's `Sync`s (`syncs`, in block and
        log order), each bridge's price at the block's time (`times`) when it changed; at
        most one a second, the second's last. `pools` are pair -> (token0, token1) and
        `sources` the tokens with a feed of their own -> the feed."""
        level = levels(pools.values(), sources)
        bridged = bridges(pools.values(), level)
        if not bridged:
            self.reserves.update(_latest(syncs))
            return []
        through: dict[str, list[tuple[str, str]]] = defaultdict(list)
        for pair, (token0, token1) in pools.items():
            for token, other in ((token0, token1), (token1, token0)):
                if token in bridged and level[other] < level[token]:
                    through[token].append((pair, other))
        order = sorted(bridged, key=lambda t: (level[t], t))
        rows: dict[tuple[str, int], dict[str, Any]] = {}
        for (block,), block_syncs in syncs.group_by(["block_number"], maintain_order=True):
            for pair, r0, r1 in block_syncs.select("pair", "reserve0", "reserve1").iter_rows():
                self.reserves[pair] = (int(r0), int(r1))
            second = times[int(block)]
            now: dict[str, float] = {}
            for token in order:
                price = self._through(token, through[token], pools, sources, now, usd, second)
                if price is None:
                    continue
                now[token] = price
                feed = derived_feed_id(self.chain_id, token)
                last = self.last.get(feed)
                # Unchanged, or at a second an earlier batch already holds (blocks share
                # seconds on a fast chain): the price in force stands.
                if last is not None and (last[1] == price or last[0] > second or (
                        last[0] == second and (feed, second) not in rows)):
                    continue
                expo = self.expo.setdefault(feed, _expo(price))
                rows[(feed, second)] = {
                    "feed_id": feed, "publish_time": second,
                    "price": round(price * 10.0 ** -expo), "conf": 0, "expo": expo,
                    "ema_price": round(price * 10.0 ** -expo), "ema_conf": 0,
                    "slot": int(block), "prev_publish_time": last[0] if last else second,
                    "source": "derived"}
                self.last[feed] = (second, price)
        return list(rows.values())

    def _through(self, token: str, candidates: list[tuple[str, str]],
                 pools: Mapping[str, tuple[str, str]], sources: Mapping[str, str],
                 now: dict[str, float], usd: "Prices", second: int) -> float | None:
        """`token`'s price through its most liquid pool at or above the floor (None when no
        pool is)."""
        best: tuple[float, float] | None = None
        for pair, other in candidates:
            held = self.reserves.get(pair)
            if held is None:
                continue
            other_usd = now.get(other) if other not in sources else usd.at(sources[other],
                                                                           second)
            if other_usd is None:
                continue
            mine, theirs = (held[0], held[1]) if pools[pair][0] == token else (held[1], held[0])
            if mine <= 0 or theirs <= 0:
                continue
            theirs_whole = theirs / 10 ** self.decimals[other]
            liquidity = 2.0 * theirs_whole * other_usd
            if liquidity < self.floor_usd:
                continue
            price = theirs_whole / (mine / 10 ** self.decimals[token]) * other_usd
            if best is None or liquidity > best[0]:
                best = (liquidity, price)
        return None if best is None else best[1]

    def catalog(self, symbols: Mapping[str, str]) -> list[dict[str, Any]]:
        """The `oracle_feeds` rows of the bridges priced so far (`symbols`: token -> symbol)."""
        rows = []
        for token, symbol in sorted(symbols.items()):
            feed = derived_feed_id(self.chain_id, token)
            if feed not in self.expo:
                continue
            pair = f"{symbol}/USD"
            rows.append({
                "feed_id": feed, "compatible_id": None, "symbol": f"Derived.{pair}",
                "asset_type": "Crypto", "base": symbol, "quote_currency": "USD",
                "description": f"{token} priced through its most liquid pool of at least "
                               f"{self.floor_usd:,.0f} USD on chain {self.chain_id}",
                "display_symbol": pair, "generic_symbol": f"{symbol}USD",
                "schedule": ALWAYS_OPEN, "min_channel": "real_time",
                "expo": self.expo[feed], "source": "derived"})
        return rows


class Prices:
    """The sources' USD prices in force at any second of a batch: each feed's updates, in
    publish order."""

    def __init__(self, updates: pl.DataFrame) -> None:
        self.by_feed: dict[str, tuple[list[int], list[float]]] = {}
        ordered = updates.sort("feed_id", "publish_time")
        for (feed,), rows in ordered.group_by(["feed_id"], maintain_order=True):
            usd = rows.select(pl.col("price") * pl.lit(10.0).pow(pl.col("expo")))
            self.by_feed[str(feed)] = (rows["publish_time"].to_list(), usd.to_series().to_list())

    def at(self, feed: str, second: int) -> float | None:
        """The feed's price in force at `second` (its latest update at or before it)."""
        found = self.by_feed.get(feed)
        if found is None:
            return None
        times, values = found
        lo, hi = 0, len(times)
        while lo < hi:
            mid = (lo + hi) // 2
            if times[mid] <= second:
                lo = mid + 1
            else:
                hi = mid
        return values[lo - 1] if lo else None


def _expo(price: float) -> int:
    """An exponent that gives `price` about DIGITS digits as an integer."""
    return max(-18, min(0, math.floor(math.log10(price)) - DIGITS))


def _latest(syncs: pl.DataFrame) -> dict[str, tuple[int, int]]:
    return {pair: (int(r0), int(r1)) for pair, r0, r1
            in syncs.select("pair", "reserve0", "reserve1").iter_rows()}

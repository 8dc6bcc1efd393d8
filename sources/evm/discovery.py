"""Pool discovery: the pools the venues file's factories made, their tokens met for the first
time (described, and their transfers read back to their deployment so their holders are
whole), and the LP burned for good, as the chain's `pairs`, `tokens` and `lp_locks` rows."""

from dataclasses import replace
from datetime import UTC, datetime
from typing import Any

import polars as pl

from core.columns import STRINGS
from sources.evm.blocks import Blocks, log_block
from sources.evm.config import NATIVE, IngestConfig, VenueConfig
from sources.evm.families import FAMILIES, Family, Pool, topic
from sources.evm.honeypot import RETEST, call, outcome
from sources.evm.ownership import OWNERSHIP_TRANSFERRED, read
from sources.evm.rpc import quantity
from sources.evm.tokens import TokenFacts, describe, number, text
from sources.lake import LakeWriter, table_frame

TRANSFER = topic("Transfer(address,address,uint256)")
# The lake keeps raw amounts as decimal(38, 0); a larger amount cannot be stored exactly.
MAX_RAW = 10**38 - 1
SYMBOL = "0x95d89b41"
# A pool's `factory()`, `token0()` and `token1()`.
FACTORY, TOKEN0, TOKEN1 = "0xc45a0155", "0x0dfe1681", "0xd21220a7"
# How many unrelated addresses are remembered before they are asked again.
UNRELATED_KEPT = 100_000


class Known:
    """A chain's pools, their tokens and its LP burns, as its follower knows them."""

    def __init__(self, chain_id: int, config: IngestConfig, pairs: pl.DataFrame,
                 tokens: pl.DataFrame, locks: pl.DataFrame) -> None:
        self.chain_id = chain_id
        self.venues: dict[str, VenueConfig] = {v.factory: v for v in config.venues}
        self.launchpads = {v.launchpad: v for v in config.venues if v.launchpad}
        self.feeds = config.feeds(chain_id)
        self.native_symbol = config.chain.native_symbol
        self.pairs, self.tokens, self.locks = pairs, tokens, locks
        self.wrapped = config.chain.native_token.lower()
        # Addresses that swapped under a family's topic and are no venue's pools.
        self.unrelated: set[str] = set()
        # Each token's last honeypot test: its block and time.
        self.tested: dict[str, tuple[int, datetime]] = {}

    @classmethod
    def read(cls, lake: LakeWriter, chain_id: int, config: IngestConfig) -> "Known":
        """What the lake holds of the chain."""
        chain = pl.col("chain_id") == chain_id
        known = cls(chain_id, config, *(lake.scan(name).filter(chain).collect()
                                        for name in ("pairs", "tokens", "lp_locks")))
        last = (lake.scan("honeypot_tests").filter(chain).group_by("token")
                .agg(pl.col("block_number").max(), pl.col("block_time").max()).collect())
        known.tested = {t: (b, at) for t, b, at in last.iter_rows()}
        return known

    def frames(self) -> tuple[pl.DataFrame, pl.DataFrame, pl.DataFrame]:
        """The pools, tokens and LP burns as they stand (to put back with `restore`)."""
        return self.pairs, self.tokens, self.locks

    def restore(self, frames: tuple[pl.DataFrame, pl.DataFrame, pl.DataFrame]) -> None:
        """Put back what `frames` took."""
        self.pairs, self.tokens, self.locks = frames

    @property
    def pools(self) -> dict[str, str]:
        """Every known pool and its factory."""
        return dict(zip(self.pairs["address"], self.pairs["factory"], strict=True))

    def pool_tokens(self, pools: set[str]) -> dict[str, tuple[str, str]]:
        """The two tokens of each of `pools`."""
        held = self.pairs.filter(pl.col("address").is_in(list(pools)))
        return {a: (t0, t1) for a, t0, t1 in zip(held["address"], held["token0"], held["token1"],
                                                   strict=True)}

    def untaxed(self) -> set[str]:
        """The tokens whose taxes are not measured: the quote tokens (priced by a feed) and
        the chain's native currency."""
        return set(self.feeds) | {NATIVE}

    def families(self) -> list[Family]:
        """The venues' pool families."""
        return [FAMILIES[v.family] for v in self.venues.values()]

    def family_of(self, pool: str, pools: dict[str, str]) -> Family:
        """The family of a known pool."""
        return FAMILIES[self.venues[pools[pool]].family]

    def singletons(self) -> set[str]:
        """The venues' singletons: factories that hold their pools' tokens themselves."""
        return {f for f, v in self.venues.items() if FAMILIES[v.family].singleton is not None}

    def pool_logs(self, blocks: Blocks, first: int, last: int) -> list[dict]:
        """Every known pool's logs of [first, last] in chain order, each under its pool's
        address: a singleton's (Uniswap V4's pool manager's) under the pool id it names."""
        pools = self.pools
        singletons = sorted(self.singletons() & set(pools.values()))
        own = [p for p, f in pools.items() if f not in singletons]
        logs = blocks.logs(first, last, own, self.pool_topics())
        if not singletons:
            return logs
        held = [{**log, "address": log["topics"][1]}
                for log in blocks.logs(first, last, singletons, self.pool_topics())
                if len(log["topics"]) > 1 and log["topics"][1] in pools]
        return sorted(logs + held, key=lambda x: (log_block(x), quantity(x["logIndex"])))

    def pool_topics(self) -> list[Any]:
        """The topics of every family's pool events, as one filter position."""
        return [sorted({t for f in self.families() for t in f.pool_topics})]

    def transferred(self) -> list[str]:
        """The tokens whose transfers are read: every pool's tokens, and the pools that are
        their own LP tokens."""
        lp = [a for a, f in self.pools.items()
              if FAMILIES[self.venues[f].family].pool_is_lp_token]
        return sorted((set(self.tokens["address"]) | set(lp)) - {NATIVE})

    def forget(self, first: int) -> None:
        """Drop what the orphaned blocks from `first` on had made known."""
        self.pairs = self.pairs.filter(pl.col("created_block") < first)
        self.locks = self.locks.filter(pl.col("block_number") < first)
        held = set(self.pairs["token0"]) | set(self.pairs["token1"])
        self.tokens = self.tokens.filter(pl.col("address").is_in(held))
        self.tested = {t: kept for t, kept in self.tested.items() if kept[0] < first}

    def honeypot_tests(self, blocks: Blocks, asked: set[str], due: set[str], last: int,
                       at: datetime) -> pl.DataFrame:
        """Test the tokens `asked` (met, or whose owner or code changed), and those of `due`
        (traded) last tested `RETEST` or longer before `at`, at the end of block `last`: the
        test's rows; each tested token's row takes its result."""
        wanted = asked | {t for t in due if t not in self.tested
                          or at - self.tested[t][1] >= RETEST}
        pools = self._probe_pools(wanted - self.untaxed())
        if not pools:
            return table_frame("honeypot_tests", [])
        answers = blocks.calls([call(pair, token, self.wrapped, fee, last)
                                for token, (pair, fee) in pools.items()])
        found = [probe for (token, (pair, _)), answer in zip(pools.items(), answers, strict=True)
                 if (probe := outcome(token, pair, answer)) is not None]
        # A probe that could not run (a node refusing state overrides) waits as a test does.
        for token in pools:
            self.tested[token] = (last, at)
        results = {p.token: p.result for p in found}
        if results:
            self.tokens = self.tokens.with_columns(honeypot_test=pl.when(
                pl.col("address").is_in(list(results))).then(pl.col("address").replace(results))
                .otherwise(pl.col("honeypot_test")))
        return table_frame("honeypot_tests", [
            {"chain_id": self.chain_id, "token": p.token, "pair": p.pair, "block_number": last,
             "block_time": at, "result": p.result, "buy_tax": p.buy_tax,
             "sell_tax": p.sell_tax, "failed_step": p.failed_step} for p in found])

    def _probe_pools(self, tokens: set[str]) -> dict[str, tuple[str, int]]:
        """For each of `tokens` with one, the pool a honeypot test goes through (and its fee):
        its first Uniswap V2-style pool against the wrapped native token."""
        v2 = [f for f, v in self.venues.items() if FAMILIES[v.family].name == "uniswap_v2"]
        pools = (self.pairs.filter(pl.col("factory").is_in(v2)
                                   & ((pl.col("token0") == self.wrapped)
                                      | (pl.col("token1") == self.wrapped)))
                 .with_columns(token=pl.when(pl.col("token0") == self.wrapped)
                               .then("token1").otherwise("token0"))
                 .filter(pl.col("token").is_in(list(tokens)))
                 .sort("created_block").unique("token", keep="first", maintain_order=True))
        return {t: (a, f) for t, a, f in pools.select("token", "address", "fee_bps").iter_rows()}

    def new_pools(self, blocks: Blocks, first: int, last: int) -> list[tuple[Pool, dict]]:
        """The pools the factories made in [first, last], with their creation logs."""
        created = sorted({f.created_topic for f in self.families()})
        logs = blocks.logs(first, last, sorted(self.venues), [created])
        known = self.pools
        pools = []
        for log in logs:
            venue = self.venues[log["address"].lower()]
            pool = FAMILIES[venue.family].created(log)
            if pool.address not in known:
                pools.append((pool, log))
        return self._add(blocks, pools)

    def earlier_pools(self, blocks: Blocks, first: int, last: int) -> list[tuple[Pool, dict]]:
        """The pools the factories made before the follower's first block that swap in
        [first, last] for the first time since, with their creation logs: an unknown address
        swapping under a family's topic is asked its factory and tokens, and a venue's factory
        its creation log (the factory's own log is the proof, whatever the address says)."""
        swaps = sorted({f.pool_topics[0] for f in self.families()})
        known = self.pools
        singletons = {f: FAMILIES[self.venues[f].family] for f in self.singletons()}
        swapped = blocks.logs(first, last, None, [swaps])
        pools = self._singletons_earlier(blocks, singletons, first, {
            (log["address"].lower(), log["topics"][1]) for log in swapped
            if log["address"].lower() in singletons and log["topics"][1] not in known})
        unknown = sorted({log["address"].lower() for log in swapped}
                         - known.keys() - self.unrelated - singletons.keys())
        if not unknown:
            return self._add(blocks, pools)
        if len(self.unrelated) > UNRELATED_KEPT:
            self.unrelated.clear()
        answers = blocks.calls([("eth_call", [{"to": address, "data": data}, hex(last)])
                                for address in unknown for data in (FACTORY, TOKEN0, TOKEN1)])
        for i, address in enumerate(unknown):
            factory, token0, token1 = (_address(a) for a in answers[3 * i:3 * i + 3])
            venue = self.venues.get(factory or "")
            if venue is None or token0 is None or token1 is None:
                self.unrelated.add(address)
                continue
            family = FAMILIES[venue.family]
            logs = blocks.logs(0, first - 1, [venue.factory], [
                [family.created_topic], ["0x" + token0[2:].rjust(64, "0")],
                ["0x" + token1[2:].rjust(64, "0")]])
            found = [(pool, log) for log in logs if (pool := family.created(log)).address
                     == address]
            if found:
                pools.append(found[0])
            else:
                self.unrelated.add(address)
        return self._add(blocks, pools)

    @staticmethod
    def _singletons_earlier(blocks: Blocks, singletons: dict[str, Family], first: int,
                            ids: set[tuple[str, str]]) -> list[tuple[Pool, dict]]:
        """The singleton's pools of `ids` (manager, pool id), from each one's `Initialize`
        before `first` (the creation topic's first topic is the id)."""
        pools = []
        for manager, pool in sorted(ids):
            family = singletons[manager]
            logs = blocks.logs(0, first - 1, [manager], [[family.created_topic], [pool]])
            pools += [(family.created(log), log) for log in logs[:1]]
        return pools

    def _add(self, blocks: Blocks, pools: list[tuple[Pool, dict]]) -> list[tuple[Pool, dict]]:
        """Add new pools, from their creation logs, to the pairs; returns them."""
        if not pools:
            return []
        pools = self._fees(blocks, pools)
        receipts = blocks.receipts({log["transactionHash"] for _, log in pools})
        # A singleton's pool is an id, not a contract: it has no symbol to ask.
        contracts = [p.address for p, log in pools
                     if FAMILIES[self.venues[log["address"].lower()].family].singleton is None]
        answered = dict(zip(contracts, blocks.rpc.batch(
            [("eth_call", [{"to": a, "data": SYMBOL}, "latest"]) for a in contracts],
            errors=True) if contracts else [], strict=True))
        symbols = [answered.get(p.address) for p, _ in pools]
        times = blocks.times({log_block(log) for _, log in pools})
        rows = []
        for (pool, log), symbol in zip(pools, symbols, strict=True):
            venue = self.venues[log["address"].lower()]
            receipt = receipts[log["transactionHash"]]
            launchpad = self.launchpads.get((receipt.get("to") or "").lower())
            at = times[log_block(log)]
            rows.append({
                "chain_id": self.chain_id, "address": pool.address, "factory": venue.factory,
                "factory_type": pool.factory_type or FAMILIES[venue.family].factory_type,
                "token0": pool.token0,
                "token1": pool.token1, "fee_bps": pool.fee_bps, "created_block": log_block(log),
                "created_log_index": quantity(log["logIndex"]),
                "created_tx": log["transactionHash"], "created_at": at,
                "creator": receipt["from"].lower(),
                "launchpad": launchpad_id(launchpad) if launchpad else None,
                "launchpad_stage": "migrated" if launchpad else None,
                "launchpad_completed_at": at if launchpad else None, "migrated_pool": None,
                "graduation_quote_raw": None,
                "lp_token_symbol": text(symbol) or "LP", "is_perp": False})
        self.pairs = pl.concat([self.pairs, table_frame("pairs", rows)])
        return pools

    def _fees(self, blocks: Blocks, pools: list[tuple[Pool, dict]]) -> list[tuple[Pool, dict]]:
        """The pools with their fees, asked of their factories at their creation block where
        the creation log does not say it (a pool whose factory does not answer keeps 0)."""
        asked: list[tuple[int, Family, list[Any]]] = []
        for i, (pool, log) in enumerate(pools):
            family = FAMILIES[self.venues[log["address"].lower()].family]
            if family.fee_call is not None:
                asked.append((i, family, [{"to": log["address"], "data": family.fee_call(pool)},
                                          hex(log_block(log))]))
        if not asked:
            return pools
        answers = blocks.calls([("eth_call", params) for _, _, params in asked])
        out = list(pools)
        for (i, family, _), answer in zip(asked, answers, strict=True):
            fee = number(answer)
            if fee is not None:
                out[i] = (replace(pools[i][0], fee_bps=family.fee_bps(fee)), pools[i][1])
        return out

    def new_tokens(self, blocks: Blocks, pools: list[tuple[Pool, dict]]) -> list[TokenFacts]:
        """Describe the tokens of new pools not met before, and add them."""
        seen: dict[str, tuple[int, str]] = {}
        known = set(self.tokens["address"])
        for pool, log in pools:
            for token in (pool.token0, pool.token1):
                if token not in known and token not in seen:
                    seen[token] = (log_block(log), log["transactionHash"])
        if not seen:
            return []
        facts = describe(blocks.rpc, sorted(set(seen) - {NATIVE}), seen)
        if NATIVE in seen:
            # The chain's native currency: 18 decimals, no contract, first met with its pool.
            block, tx = seen[NATIVE]
            facts[NATIVE] = TokenFacts(NATIVE, self.native_symbol, self.native_symbol, 18, 0,
                                       block, tx, "")
        times = blocks.times({f.deploy_block for f in facts.values()})
        now = datetime.now(UTC)
        rows: list[dict[str, Any]] = [{
            "chain_id": self.chain_id, "address": f.address, "symbol": f.symbol,
            "name": f.name, "decimals": f.decimals,
            "total_supply_raw": min(f.total_supply, MAX_RAW), "max_supply_raw": None,
            "circulating_supply_raw": None, "deployer": f.deployer, "deploy_tx": f.deploy_tx,
            "deploy_block": max(1, f.deploy_block), "deployed_at": times[f.deploy_block],
            "contract_verified": None, "buy_tax": None, "sell_tax": None,
            "honeypot_test": "untested", "status": 0, "is_quote": f.address in self.feeds,
            "price_feed_id": self.feeds.get(f.address), "categories": [], "owner_powers": None,
            "observed_at": now,
        } for f in facts.values()]
        self.tokens = pl.concat([self.tokens, table_frame("tokens", rows)])
        return list(facts.values())

    def backfill(self, blocks: Blocks, tokens: list[TokenFacts], first: int,
                 first_read: int) -> list[dict]:
        """New tokens' transfers before this batch, from their deployment (or the first
        block the follower reads, `first_read`), so that their holders are whole."""
        found: list[dict] = []
        for facts in tokens:
            start = max(facts.deploy_block, first_read)
            if start < first:
                found += blocks.logs(start, first - 1, [facts.address],
                                     [[TRANSFER, OWNERSHIP_TRANSFERRED]])
        return found

    def owners(self, blocks: Blocks, tokens: list[TokenFacts], last: int,
               at: datetime) -> pl.DataFrame:
        """New tokens' owners read at the end of the batch (`last`, at `at`), their powers
        given to their rows."""
        rows, held = read(blocks, [f.address for f in tokens if f.address != NATIVE], last, at,
                          self.chain_id)
        if held:
            given = pl.DataFrame({"address": list(held), "owner_powers": list(held.values())},
                                 schema={"address": pl.String, "owner_powers": STRINGS})
            self.tokens = self.tokens.update(given, on="address")
        return table_frame("ownership", rows)

    def burned(self, pool: str, owner: str, to: str, amount: int, log: dict,
               times: dict[int, datetime]) -> None:
        """An LP holder's transfer to the zero or dead address: liquidity burnt for good."""
        tx = log["transactionHash"]
        before = self.locks.filter(pl.col("tx_hash") == tx)
        total = amount + (int(before["amount"][0]) if before.height else 0)
        if total > MAX_RAW:
            return
        row = {"chain_id": self.chain_id, "pair": pool, "kind": "burn", "provider": None,
               "locker_address": to, "owner": owner, "amount": total,
               "locked_at": times[log_block(log)], "unlock_at": None, "tx_hash": tx,
               "block_number": log_block(log)}
        self.locks = pl.concat([self.locks.filter(pl.col("tx_hash") != tx),
                                table_frame("lp_locks", [row])])

    def set_fees(self, fees: dict[str, int]) -> None:
        """Give pools whose swaps say their fee (a V4 pool's, a hook's dynamic fee among them)
        their last swap's fee, in basis points."""
        held = dict(zip(self.pairs["address"], self.pairs["fee_bps"], strict=True))
        changed = {p: f for p, f in fees.items() if held.get(p) != f}
        if changed:
            self.pairs = self.pairs.with_columns(pl.col("address").replace_strict(
                changed, default=pl.col("fee_bps")).cast(self.pairs["fee_bps"].dtype)
                .alias("fee_bps"))

    def set_feeds(self, priced: dict[str, str]) -> None:
        """Give the tokens priced through their pools (feed id by token) their feed, where
        they have none of their own."""
        if priced:
            self.tokens = self.tokens.with_columns(price_feed_id=pl.when(
                pl.col("address").is_in(list(priced)) & pl.col("price_feed_id").is_null())
                .then(pl.col("address").replace(priced)).otherwise(pl.col("price_feed_id")))


def launchpad_id(venue: VenueConfig) -> str:
    """The venue id of a venue's launchpad."""
    return f"{venue.venue_id}-launchpad"


def _address(answer: object) -> str | None:
    """An address answer, or None when the call reverted or answered nothing."""
    if not isinstance(answer, str) or len(answer) < 66:
        return None
    return "0x" + answer[26:66].lower()

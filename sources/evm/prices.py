"""A real chain's USD prices into the lake's oracle tables: each quote token's Chainlink
aggregator or its peg, as the venues file names them. Never the simulator's price process.

An aggregator is read by its rounds, not its events: with each batch of blocks, the round in
force before the batch's first block and the one at its last (`latestRoundData()` at those
blocks), and every round between them (`getRoundData()`). A proxy, the address Chainlink
publishes, answers both itself (its aggregators emit the events, and change), and the round
history is the chain's own, so a batch read again after a reorg reads the rounds as the
canonical chain holds them. An update is a round at its `updatedAt`; its `slot` is the block
that set it (the first block whose `latestRoundData()` answers it), so that a range read
again or rolled back removes exactly the rounds its blocks set, as it does their swaps; the
round in force before the first block a follower reads is recorded at the block before it."""

import re
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

import polars as pl

from sources.evm.config import ConfigError, QuoteConfig
from sources.evm.families import decoded
from sources.evm.rpc import Rpc
from sources.evm.tokens import text
from sources.lake import table_frame

DECIMALS = "0x313ce567"
DESCRIPTION = "0x7284e416"
SYMBOL = "0x95d89b41"
LATEST_ROUND_DATA = "0xfeaf968c"
GET_ROUND_DATA = "0x9a6fc8f5"
# An aggregator's description naming its pair, as Chainlink's do ("ETH / USD").
PAIR = re.compile(r"^\s*([A-Za-z0-9.]+)\s*/\s*([A-Za-z0-9.]+)\s*$")
# Chainlink's feeds and pegs trade at every hour of every day.
ALWAYS_OPEN = "Etc/UTC;O,O,O,O,O,O,O;"
# A peg's price in units of 10^-8 USD, as Chainlink's USD feeds answer.
PEG_EXPO = -8
# A proxy's round id is its aggregator's phase above its round within the phase.
PHASE_BITS = 64
# Rounds read in one batch at most (a first batch on a feed that never answered before it
# reads from its first round): the newest are kept.
MAX_ROUNDS = 5_000


@dataclass(frozen=True)
class Round:
    """One round of an aggregator: its id, answer and the time it was updated."""

    round_id: int
    answer: int
    updated_at: int

    @classmethod
    def of(cls, answer: object) -> "Round | None":
        """A `latestRoundData()` or `getRoundData()` answer; None when the call failed or the
        round never answered."""
        if not isinstance(answer, str) or len(answer) < 2 + 64 * 5:
            return None
        round_id, value, _, updated, _ = decoded(
            ["uint80", "int256", "uint256", "uint256", "uint80"], answer[:2 + 64 * 5])
        return cls(round_id, value, updated) if updated else None


class PriceSources:
    """The quote tokens' price sources of one chain: their feeds and their updates."""

    def __init__(self, chain_id: int, quotes: Iterable[QuoteConfig]) -> None:
        self.chain_id = chain_id
        self.quotes = list(quotes)
        self.by_aggregator = {q.aggregator: q for q in self.quotes if q.aggregator}
        self.expo: dict[str, int] = {}

    @property
    def aggregators(self) -> list[str]:
        """The aggregators named in the venues file, in address order."""
        return sorted(self.by_aggregator)

    @property
    def chainlink_feeds(self) -> list[str]:
        """The feed ids of the chain's aggregators."""
        return [self.by_aggregator[a].feed_id(self.chain_id) for a in self.aggregators]

    def feeds(self, rpc: Rpc) -> pl.DataFrame:
        """The `oracle_feeds` rows: each aggregator's (its `decimals()` and `description()`,
        asked once) and each peg's."""
        rows = []
        calls = [("eth_call", [{"to": a, "data": data}, "latest"])
                 for a in self.aggregators for data in (DECIMALS, DESCRIPTION)]
        calls += [("eth_call", [{"to": q.token, "data": SYMBOL}, "latest"]) for q in self.quotes]
        answers = rpc.batch(calls, errors=True) if calls else []
        named_by = answers[2 * len(self.aggregators):]
        symbols = {q.token: text(a) or q.token[:10]
                   for q, a in zip(self.quotes, named_by, strict=True)}
        for i, aggregator in enumerate(self.aggregators):
            decimals, description = answers[2 * i], text(answers[2 * i + 1])
            quote = self.by_aggregator[aggregator]
            if not isinstance(decimals, str) or len(decimals) < 66:
                raise ConfigError(f"quotes[{self.quotes.index(quote)}].chainlink: {aggregator} "
                                  f"answers no decimals() on chain {self.chain_id}: not an "
                                  "aggregator (no contract there, or another kind)")
            self.expo[aggregator] = -decoded(["uint8"], decimals[:66])[0]
            named = PAIR.match(description)
            pair = f"{named[1]}/{named[2]}" if named else f"{symbols[quote.token]}/USD"
            rows.append(_feed(quote.feed_id(self.chain_id), f"Chainlink.{pair}", pair,
                              f"{description or pair} (Chainlink aggregator {aggregator} "
                              f"on chain {self.chain_id})", self.expo[aggregator], "chainlink"))
        for quote in self.quotes:
            if quote.peg_usd is not None:
                pair = f"{symbols[quote.token]}/USD"
                rows.append(_feed(quote.feed_id(self.chain_id), f"Peg.{pair}", pair,
                                  f"{quote.token} held at {quote.peg_usd:g} USD on chain "
                                  f"{self.chain_id} (a depeg is not seen)", PEG_EXPO, "peg"))
        return table_frame("oracle_feeds", rows)

    def rounds(self, rpc: Rpc, first: int, last: int, stored: dict[str, int],
               times: dict[int, int]) -> pl.DataFrame:
        """The aggregators' rounds of blocks [first, last] as `oracle_updates` rows: every
        round from the one in force before `first` to the one at `last`, but those at or
        before each feed's latest publish time `stored` before `first`; `times` holds each
        block's second."""
        latest = [Round.of(a) for a in rpc.batch(
            [("eth_call", [{"to": a, "data": LATEST_ROUND_DATA}, hex(block)])
             for a in self.aggregators for block in (max(first - 1, 0), last)], errors=True)]
        wanted: list[tuple[str, int]] = []
        before: dict[str, int] = {}
        for i, aggregator in enumerate(self.aggregators):
            was, now = latest[2 * i], latest[2 * i + 1]
            if now is None:
                continue
            phase, upto = now.round_id >> PHASE_BITS, now.round_id & ((1 << PHASE_BITS) - 1)
            since = 1
            if first > 0 and was is not None:
                before[aggregator] = was.round_id
                if was.round_id >> PHASE_BITS == phase:
                    since = was.round_id & ((1 << PHASE_BITS) - 1)
            since = max(since, upto - MAX_ROUNDS + 1)
            wanted += [(aggregator, phase << PHASE_BITS | n) for n in range(since, upto + 1)]
        answers = rpc.batch([("eth_call", [{"to": a, "data": GET_ROUND_DATA + r.to_bytes(32).hex()},
                                           hex(last)]) for a, r in wanted], errors=True)
        found: list[tuple[str, Round]] = []
        for (aggregator, _), answer in zip(wanted, answers, strict=True):
            read = Round.of(answer)
            feed = self.by_aggregator[aggregator].feed_id(self.chain_id)
            if read is not None and read.updated_at > stored.get(feed, 0):
                found.append((aggregator, read))
        setting = [(a, r) for a, r in found if r.round_id != before.get(a)]
        blocks = dict(zip(setting, _blocks_setting(rpc, setting, first, last, times),
                          strict=True))
        rows: dict[tuple[str, int], dict[str, Any]] = {}
        previous = dict(stored)
        for aggregator, read in found:
            feed = self.by_aggregator[aggregator].feed_id(self.chain_id)
            # Two rounds in one second: the later one holds that second.
            rows[(feed, read.updated_at)] = _update(
                feed, read.updated_at, read.answer, self.expo[aggregator],
                blocks.get((aggregator, read), first - 1),
                previous.get(feed, read.updated_at), "chainlink")
            previous[feed] = read.updated_at
        return table_frame("oracle_updates", list(rows.values()))

    def pegs(self, second: int, block: int) -> pl.DataFrame:
        """Each peg's one update, in force from `second`, the time of the first block the
        follower read (`block`)."""
        return table_frame("oracle_updates", [
            _update(q.feed_id(self.chain_id), second, round(q.peg_usd * 10 ** -PEG_EXPO),
                    PEG_EXPO, block, second, "peg")
            for q in self.quotes if q.peg_usd is not None])


def _feed(feed: str, symbol: str, pair: str, description: str, expo: int,
          source: str) -> dict[str, Any]:
    base, _, currency = pair.partition("/")
    return {"feed_id": feed, "compatible_id": None, "symbol": symbol, "asset_type": "Crypto",
            "base": base, "quote_currency": currency, "description": description,
            "display_symbol": pair, "generic_symbol": pair.replace("/", ""),
            "schedule": ALWAYS_OPEN, "min_channel": "real_time", "expo": expo, "source": source}


def _update(feed: str, published: int, price: int, expo: int, block: int, previous: int,
            source: str) -> dict[str, Any]:
    return {"feed_id": feed, "publish_time": published, "price": price, "conf": 0,
            "expo": expo, "ema_price": price, "ema_conf": 0, "slot": block,
            "prev_publish_time": min(previous, published), "source": source}


def _blocks_setting(rpc: Rpc, rounds: list[tuple[str, Round]], first: int, last: int,
                    times: dict[int, int]) -> list[int]:
    """The block of [first, last] that set each round: the first whose `latestRoundData()`
    answers it or a later round. A Chainlink round's `updatedAt` is its block's time, so the
    first block at or after that second is asked first, with the block before it; a round
    those two do not place is found by bisection over the range."""
    if not rounds:
        return []
    numbers = sorted(times)

    def hinted(at: int) -> int:
        return next((n for n in numbers if n >= first and times[n] >= at), last)

    guess = [hinted(r.updated_at) for _, r in rounds]
    asked = [(a, block) for (a, _), g in zip(rounds, guess, strict=True)
             for block in (g - 1, g)]
    answered = _round_ids(rpc, asked)
    low = [first] * len(rounds)
    high = [last] * len(rounds)
    for i, ((_, r), g) in enumerate(zip(rounds, guess, strict=True)):
        below, at = answered[2 * i], answered[2 * i + 1]
        if at >= r.round_id and (g == first or below < r.round_id):
            low[i] = high[i] = g
    while True:
        open_ = [i for i in range(len(rounds)) if low[i] < high[i]]
        if not open_:
            return high
        middles = [(low[i] + high[i]) // 2 for i in open_]
        ids = _round_ids(rpc, [(rounds[i][0], m) for i, m in zip(open_, middles, strict=True)])
        for i, middle, seen in zip(open_, middles, ids, strict=True):
            if seen >= rounds[i][1].round_id:
                high[i] = middle
            else:
                low[i] = middle + 1


def _round_ids(rpc: Rpc, asked: list[tuple[str, int]]) -> list[int]:
    """Each aggregator's latest round id at each block (-1 where it answered none)."""
    answers = rpc.batch([("eth_call", [{"to": a, "data": LATEST_ROUND_DATA}, hex(max(block, 0))])
                         for a, block in asked], errors=True)
    return [-1 if (read := Round.of(answer)) is None else read.round_id for answer in answers]

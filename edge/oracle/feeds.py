"""The feed catalog of a snapshot: ids to feeds, feed documents, and the published history."""

from dataclasses import dataclass, field
from datetime import UTC, datetime
from functools import cached_property
from typing import Any

import numpy as np
import polars as pl

from core.market_hours import MarketHours
from core.vocabulary import ORACLE_HISTORY_S, WIRE_TIME
from edge.memo import per_snapshot
from edge.oracle.hub import PriceHub, Update
from edge.snapshots import as_of_seconds, table
from publish.reader import Snapshot

ATTRIBUTES = ("asset_type", "base", "description", "display_symbol", "generic_symbol",
              "quote_currency", "schedule", "symbol", "min_channel")
# A Hermes feed whose market is open and that has had no update for this long stands on a
# stalled upstream (Pyth publishes a live feed several times a second): its price is stale.
STALLED_AFTER_S = 60.0
HISTORY_COLUMNS = ("publish_time", "price", "conf", "expo", "ema_price", "ema_conf", "slot",
                   "prev_publish_time")


def canonical(feed_id: str) -> str:
    """A feed id as the oracle writes it: lower-case hex without 0x."""
    return feed_id.lower().removeprefix("0x")


@dataclass(frozen=True)
class Feed:
    """One feed of the catalog: its own id, its compatible id, attributes and schedule."""

    feed_id: str
    compatible_id: str | None
    expo: int
    attributes: dict[str, str]
    hours: MarketHours = field(compare=False)
    source: str = "simulator"

    @property
    def primary_id(self) -> str:
        """The id the feed is listed under: its compatible id when it has one."""
        return self.compatible_id or self.feed_id

    def keys(self) -> tuple[str, ...]:
        """The ids an upstream may name the feed by, own id first."""
        return (self.feed_id,) if self.compatible_id is None else (self.feed_id,
                                                                   self.compatible_id)

    def latest(self, hub: PriceHub) -> Update | None:
        """The feed's latest update in the hub, under whichever id its upstream uses."""
        key = self.hub_key(hub)
        return None if key is None else hub.latest[key]

    def hub_key(self, hub: PriceHub) -> str | None:
        """The id the hub keeps the feed's updates under (None while it has none)."""
        return next((k for k in self.keys() if k in hub.latest), None)

    def market_hours(self, at: float) -> dict[str, Any]:
        """Whether the market is open at `at`, and when it next opens or closes."""
        return {"is_open": self.hours.is_open(at),
                "next_open": _iso(self.hours.next_open(at)),
                "next_close": _iso(self.hours.next_close(at))}

    def stale(self, hub: PriceHub, at: float) -> bool:
        """Whether the feed is a Hermes feed whose market is open at `at` and whose latest
        update is older than STALLED_AFTER_S (or missing)."""
        if self.source != "hermes" or not self.hours.is_open(at):
            return False
        latest = self.latest(hub)
        return latest is None or at - latest.publish_time > STALLED_AFTER_S

    def document(self, asked: str, at: float) -> dict[str, Any]:
        """The Hermes feed document, under the id it was asked by."""
        return {"id": asked, "attributes": {**self.attributes, "oracle_id": self.feed_id},
                "market_hours": self.market_hours(at)}


def wire(seconds: float) -> str:
    """Unix seconds as the wire's ISO 8601 UTC text."""
    return datetime.fromtimestamp(int(seconds), UTC).strftime(WIRE_TIME)


def _iso(at: float | None) -> str | None:
    return None if at is None else wire(at)


class History:
    """A feed's published updates in publish order, searchable by time."""

    def __init__(self, rows: pl.DataFrame) -> None:
        self.columns = {c: rows[c].to_numpy() for c in HISTORY_COLUMNS}
        self.times = self.columns["publish_time"]

    def __len__(self) -> int:
        return len(self.times)

    def row(self, i: int, key: str) -> Update:
        """Row `i` as an update."""
        c = self.columns
        return Update(key, int(c["price"][i]), int(c["conf"][i]), int(c["expo"][i]),
                      int(c["ema_price"][i]), int(c["ema_conf"][i]), int(c["publish_time"][i]),
                      int(c["prev_publish_time"][i]), int(c["slot"][i]), int(c["publish_time"][i]))

    def first_at_or_after(self, ts: int, key: str) -> Update | None:
        """The first published update at or after `ts` (None past the last one)."""
        i = int(np.searchsorted(self.times, ts, side="left"))
        return self.row(i, key) if i < len(self.times) else None


@dataclass
class Catalog:
    """Every feed of a snapshot by each of its ids, and the published history window."""

    feeds: list[Feed]
    by_id: dict[str, Feed]
    history_rows: pl.DataFrame
    window: tuple[int, int]

    @cached_property
    def _histories(self) -> dict[str, History]:
        # The table starts at the day the window opens in (its parts are whole days).
        rows = self.history_rows.filter(pl.col("publish_time") >= self.window[0])
        parts = rows.partition_by("feed_id", as_dict=True, maintain_order=True)
        return {key[0]: History(rows) for key, rows in parts.items()}

    @property
    def updates(self) -> int:
        """How many published updates the window holds."""
        return sum(len(history) for history in self._histories.values())

    def history(self, feed: Feed) -> History | None:
        """The feed's published history (None when the window holds none of it)."""
        return self._histories.get(feed.feed_id)

    def stale(self, hub: PriceHub, at: float) -> list[dict[str, Any]]:
        """The feeds whose upstream stalled: each one's id, symbol and latest publish time."""
        out = []
        for feed in self.feeds:
            if feed.stale(hub, at):
                latest = feed.latest(hub)
                out.append({"id": feed.primary_id, "symbol": feed.attributes["symbol"],
                            "publish_time": None if latest is None else latest.publish_time})
        return out

    def find(self, feed_id: str) -> Feed | None:
        """The feed an id (own or compatible, any case, 0x optional) names."""
        return self.by_id.get(canonical(feed_id))

    def first_at_or_after(self, feed: Feed, ts: int, hub: PriceHub) -> Update | None:
        """The feed's first update at or after `ts` in the history window: the published
        history up to the watermark, then what the hub has seen live without a gap."""
        low, high = self.window
        if ts < low:
            return None
        history = self.history(feed)
        if ts <= high and history is not None:
            found = history.first_at_or_after(ts, feed.primary_id)
            if found is not None:
                return found
        key = feed.hub_key(hub)
        return None if key is None else hub.first_at_or_after(key, ts)


@per_snapshot(kept=2)
def catalog(snapshot: Snapshot) -> Catalog:
    """The snapshot's feed catalog and history."""
    feeds = []
    for row in table(snapshot, "feed_catalog").iter_rows(named=True):
        feeds.append(Feed(row["feed_id"], row["compatible_id"], row["expo"],
                          {a: str(row[a]) for a in ATTRIBUTES}, MarketHours(row["schedule"]),
                          row["source"]))
    by_id = {}
    for feed in feeds:
        by_id[feed.feed_id] = feed
        if feed.compatible_id:
            by_id[feed.compatible_id] = feed
    history = table(snapshot, "oracle_history")
    high = as_of_seconds(snapshot)
    return Catalog(feeds, by_id, history, (high - ORACLE_HISTORY_S, high))

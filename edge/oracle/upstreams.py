"""What the hub follows: the simulator's price process, or a Hermes-compatible SSE stream."""

import asyncio
import logging
import time
from urllib.parse import urlsplit

import httpx
import orjson
import polars as pl

from core.feeds import FEEDS
from core.prices import PricePath, SlotUpdate, slot_at, slot_time
from edge.oracle.hub import PriceHub, Update

log = logging.getLogger("chaintape.oracle")
# Waits between reconnections to a failing upstream, longest last.
BACKOFF_S = (0.5, 1.0, 2.0, 5.0, 10.0, 30.0)
MAX_UPSTREAM_IDS = 500


class SimulatedUpstream:
    """The simulator's price process, one update per feed at every slot its market is open.

    The process is a function of time, so every edge instance computes the same updates."""

    kind = "simulator"
    url = None

    def __init__(self) -> None:
        self.paths = {feed.feed_id: PricePath(feed) for feed in FEEDS}
        self.connected = True

    def at(self, slot: int) -> list[Update]:
        """Every open feed's update at `slot`."""
        at = slot_time(slot)
        return [_update(key, path, path.update(slot), int(at))
                for key, path in self.paths.items() if path.hours.is_open(at)]

    def last_known(self, slot: int) -> list[Update]:
        """Each feed's latest update as of `slot`, also for markets closed now."""
        out = []
        for key, path in self.paths.items():
            last = slot if path.hours.is_open(slot_time(slot)) else path.previous_slot(slot)
            if last is not None:
                out.append(_update(key, path, path.update(last), int(slot_time(last))))
        return out

    def prime(self, hub: PriceHub) -> None:
        """Give the hub every feed's latest update before the first slot boundary."""
        hub.receive(self.last_known(slot_at(time.time())))

    async def follow(self, hub: PriceHub) -> None:
        """Feed the hub at every slot boundary, forever."""
        slot = slot_at(time.time())
        while True:
            slot += 1
            await asyncio.sleep(max(0.0, slot_time(slot) - time.time()))
            hub.receive(self.at(slot))


def _update(key: str, path: PricePath, u: SlotUpdate, available: int) -> Update:
    return Update(key, u.price, u.conf, path.feed.expo, u.ema_price, u.ema_conf, u.publish_time,
                  u.prev_publish_time, u.slot, available)


class HermesUpstream:
    """A Hermes-compatible SSE stream: every feed its `/v2/price_feeds` lists, followed with
    reconnection. `url` is the stream's URL, query included (e.g. `...?channel=real_time`)."""

    kind = "hermes"

    def __init__(self, url: str, timeout_s: float = 10.0) -> None:
        self.url = url
        parts = urlsplit(url)
        prefix = parts.path.split("/v2/")[0]
        self.origin = f"{parts.scheme}://{parts.netloc}{prefix}"
        self.timeout_s = timeout_s
        self.connected = False

    def prime(self, hub: PriceHub) -> None:
        """Nothing to give before the stream answers."""

    async def _ids(self, client: httpx.AsyncClient) -> list[str]:
        response = await client.get(f"{self.origin}/v2/price_feeds")
        response.raise_for_status()
        return [feed["id"] for feed in response.json()][:MAX_UPSTREAM_IDS]

    async def follow(self, hub: PriceHub) -> None:
        """Stream updates into the hub forever, reconnecting after failures."""
        failures = 0
        timeout = httpx.Timeout(self.timeout_s, read=None)
        async with httpx.AsyncClient(timeout=timeout) as client:
            while True:
                try:
                    ids = await self._ids(client)
                    joiner = "&" if "?" in self.url else "?"
                    query = "&".join(f"ids[]={i}" for i in ids)
                    async with client.stream("GET", f"{self.url}{joiner}{query}") as response:
                        response.raise_for_status()
                        self.connected, failures = True, 0
                        log.info("following %s (%d feeds)", self.url, len(ids))
                        async for line in response.aiter_lines():
                            if line.startswith("data:"):
                                hub.receive(parse_event(line[5:]))
                except (httpx.HTTPError, ValueError, KeyError) as err:
                    log.warning("oracle upstream %s failed: %s", self.url, err)
                self.connected = False
                await asyncio.sleep(BACKOFF_S[min(failures, len(BACKOFF_S) - 1)])
                failures += 1


def parse_event(data: str) -> list[Update]:
    """The updates of one SSE event of a Hermes-compatible stream."""
    received = int(time.time())
    out = []
    for item in orjson.loads(data).get("parsed") or []:
        price, ema, meta = item["price"], item["ema_price"], item.get("metadata") or {}
        out.append(Update(
            item["id"].lower().removeprefix("0x"), int(price["price"]), int(price["conf"]),
            int(price["expo"]), int(ema["price"]), int(ema["conf"]), int(price["publish_time"]),
            int(meta.get("prev_publish_time", price["publish_time"])),
            int(meta.get("slot", price["publish_time"])),
            int(meta.get("proof_available_time", received))))
    return out


class LakeUpstream:
    """A real chain's lake: its feeds' updates arrive with each live tail (`tail_updates`), as
    its follower writes them; nothing to follow of its own."""

    kind = "lake"
    url = None
    connected = True

    def prime(self, hub: PriceHub) -> None:
        """Nothing before the first tail."""

    async def follow(self, hub: PriceHub) -> None:
        """The tails feed the hub: wait for ever."""
        await asyncio.Event().wait()


# The upstream setting that names a real chain's lake.
LAKE = "lake"


def tail_updates(rows: pl.DataFrame) -> list[Update]:
    """A tail's price updates (a real lake's) as the hub's."""
    now = int(time.time())
    return [Update(r["feed_id"], r["price"], r["conf"], r["expo"], r["ema_price"],
                   r["ema_conf"], r["publish_time"], r["prev_publish_time"], r["slot"],
                   max(now, r["publish_time"])) for r in rows.iter_rows(named=True)]


def upstream_for(url: str | None) -> SimulatedUpstream | HermesUpstream | LakeUpstream:
    """The configured upstream: a real chain's lake (`lake`), a Hermes-compatible stream when
    a URL is set, else the simulator."""
    if url == LAKE:
        return LakeUpstream()
    return HermesUpstream(url) if url else SimulatedUpstream()

"""A Hermes-compatible upstream's prices into a real lake: the real Pyth Hermes API, or any
server that speaks it (another chaintape edge).

A feed's price at a second is its first update published in that second, Pyth's benchmark:
the stream is asked for benchmarks only (`benchmarks_only=true`), and a second the stream did
not cover is asked of `/v2/updates/price/{second}` (the first update at or after it), so both
paths store the same update for the same second. The stream runs in a thread of its own and
keeps what it received until the follower's mark holds it."""

import logging
import threading
import time
from collections.abc import Iterable
from concurrent.futures import ThreadPoolExecutor
from typing import Any
from urllib.parse import urlsplit

import httpx
import orjson
import polars as pl

from core.feeds import feed_id
from sources.lake import table_frame

log = logging.getLogger("chaintape.hermes")
# Waits between reconnections to a failing stream, longest last.
BACKOFF_S = (0.5, 1.0, 2.0, 5.0, 10.0, 30.0)
# A stream silent this long is dropped and opened again (a Hermes stream sends a keep-alive
# comment at least every 15 s, and a live feed several updates a second).
SILENT_S = 30.0
# Seconds kept per feed while nothing takes them (a follower stopped for long): the newest.
KEPT_SECONDS = 3_600
# The most feeds Hermes answers in one historical request.
IDS_PER_REQUEST = 100
# Historical requests in flight at once (a backfill asks one per priced second).
ASKED_AT_ONCE = 4


def own_id(upstream_id: str) -> str:
    """The service's own id of an upstream feed (its compatible id is the upstream's)."""
    return feed_id("hermes-feed", canonical(upstream_id))


def canonical(upstream_id: str) -> str:
    """A feed id as Hermes answers it: lower-case hex without 0x."""
    return upstream_id.lower().removeprefix("0x")


class HermesError(RuntimeError):
    """The upstream cannot be read: names the URL and what went wrong."""


class Hermes:
    """One upstream and the feeds the venues file names on it."""

    def __init__(self, url: str, upstream_ids: Iterable[str], timeout_s: float = 10.0) -> None:
        parts = urlsplit(url)
        self.url = url
        self.origin = f"{parts.scheme}://{parts.netloc}{parts.path.rstrip('/')}"
        # A query on the URL is passed on to the stream (`?channel=real_time` on a chaintape
        # edge, whose default channel ticks once a second).
        self.stream_query = parts.query
        self.ids = sorted({canonical(i) for i in upstream_ids})
        self.own = {i: own_id(i) for i in self.ids}
        self.client = httpx.Client(timeout=timeout_s)
        self.timeout_s = timeout_s
        self._lock = threading.Lock()
        self._kept: dict[str, dict[int, dict[str, Any]]] = {f: {} for f in self.own.values()}
        # Per own feed: the first and the newest second the open stream has received.
        self._covered: dict[str, tuple[int, int]] = {}
        self.connected = False
        self.received_at: float | None = None
        self.arrived = threading.Event()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    @property
    def feeds(self) -> list[str]:
        """The own ids of the upstream's feeds, in upstream id order."""
        return [self.own[i] for i in self.ids]

    def _get(self, path: str, ids: list[str]) -> httpx.Response:
        try:
            return self.client.get(self.origin + path, params=[("ids[]", i) for i in ids])
        except httpx.HTTPError as err:
            raise HermesError(f"the Hermes upstream {self.origin} cannot be reached: {err}") \
                from None

    def catalog(self) -> pl.DataFrame:
        """The `oracle_feeds` rows of the named feeds: each feed's attributes as the upstream
        lists it, and its exponent as its latest update gives it. A feed it does not have is
        an error naming it."""
        latest = self._get("/v2/updates/price/latest", self.ids)
        if latest.status_code != 200:
            raise HermesError(f"{self.origin} has no latest update of a named feed: "
                              f"{latest.status_code} {latest.text.strip()[:200]}")
        expo = {canonical(p["id"]): int(p["price"]["expo"])
                for p in latest.json().get("parsed") or []}
        rows = []
        for upstream in self.ids:
            answer = self._get(f"/v2/price_feeds/{upstream}", [])
            if answer.status_code != 200 or upstream not in expo:
                raise HermesError(f"{self.origin} does not list feed {upstream}")
            a = {k: str(v) for k, v in (answer.json().get("attributes") or {}).items()}
            pair = a.get("display_symbol") or a.get("symbol", upstream[:10])
            base, _, currency = pair.partition("/")
            rows.append({
                "feed_id": self.own[upstream], "compatible_id": upstream,
                "symbol": a.get("symbol", pair), "asset_type": a.get("asset_type", "Crypto"),
                "base": a.get("base", base), "quote_currency": a.get("quote_currency", currency),
                "description": f"{a.get('description', pair)} (Hermes {self.origin})",
                "display_symbol": pair, "generic_symbol": a.get("generic_symbol",
                                                                pair.replace("/", "")),
                "schedule": a.get("schedule") or "Etc/UTC;O,O,O,O,O,O,O;",
                "min_channel": a.get("min_channel", "real_time"), "expo": expo[upstream],
                "source": "hermes"})
        return table_frame("oracle_feeds", rows)

    def at(self, seconds: Iterable[int]) -> list[dict[str, Any]]:
        """Each feed's benchmark at each of `seconds` (its first update at or after it), as
        `oracle_updates` rows; a feed the upstream has nothing for then has no row. Up to
        ASKED_AT_ONCE requests are in flight."""
        asked = [(second, self.ids[i:i + IDS_PER_REQUEST]) for second in sorted(set(seconds))
                 for i in range(0, len(self.ids), IDS_PER_REQUEST)]
        if len(asked) < 2:
            return [row for second, ids in asked for row in self._at(second, ids)]
        with ThreadPoolExecutor(ASKED_AT_ONCE, thread_name_prefix="hermes-at") as pool:
            found = pool.map(lambda a: self._at(*a), asked)
            return [row for rows in found for row in rows]

    def _at(self, second: int, ids: list[str]) -> list[dict[str, Any]]:
        answer = self._get(f"/v2/updates/price/{second}", ids)
        if answer.status_code == 404 and len(ids) > 1:
            # Hermes answers 404 for all when one feed has nothing then: ask each alone.
            return [row for i in ids for row in self._at(second, [i])]
        if answer.status_code == 404:
            return []
        if answer.status_code != 200:
            raise HermesError(f"{self.origin}/v2/updates/price/{second}: "
                              f"{answer.status_code} {answer.text.strip()[:200]}")
        return self.rows(answer.content)

    def rows(self, document: bytes | str) -> list[dict[str, Any]]:
        """A Hermes update document's parsed updates of the named feeds as `oracle_updates`
        rows."""
        out = []
        for item in orjson.loads(document).get("parsed") or []:
            own = self.own.get(canonical(item["id"]))
            if own is None:
                continue
            price, ema, meta = item["price"], item["ema_price"], item.get("metadata") or {}
            published = int(price["publish_time"])
            out.append({"feed_id": own, "publish_time": published, "price": int(price["price"]),
                        "conf": int(price["conf"]), "expo": int(price["expo"]),
                        "ema_price": int(ema["price"]), "ema_conf": int(ema["conf"]),
                        "slot": int(meta.get("slot") or published),
                        "prev_publish_time": min(published,
                                                 int(meta.get("prev_publish_time", published))),
                        "source": "hermes"})
        return out

    def start(self) -> None:
        """Follow the upstream's stream in a thread of its own, reconnecting after failures."""
        if self._thread is None and self.ids:
            self._thread = threading.Thread(target=self._follow, name="hermes", daemon=True)
            self._thread.start()

    def stop(self) -> None:
        """Stop following the stream."""
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=self.timeout_s)
        self.client.close()

    def _follow(self) -> None:
        failures = 0
        query = [("ids[]", i) for i in self.ids] + [("parsed", "true"),
                                                     ("benchmarks_only", "true")]
        extra = "&" + self.stream_query if self.stream_query else ""
        url = str(httpx.URL(self.origin + "/v2/updates/price/stream", params=query)) + extra
        timeout = httpx.Timeout(self.timeout_s, read=SILENT_S)
        while not self._stop.is_set():
            try:
                with httpx.Client(timeout=timeout) as client, \
                        client.stream("GET", url) as response:
                    response.raise_for_status()
                    self.connected, failures = True, 0
                    log.info("streaming %d feeds from %s", len(self.ids), self.origin)
                    for line in response.iter_lines():
                        if self._stop.is_set():
                            return
                        if line.startswith("data:"):
                            self.receive(self.rows(line[5:]))
            except (httpx.HTTPError, ValueError, KeyError) as err:
                log.warning("the Hermes stream of %s failed: %s", self.origin, err)
            with self._lock:
                self.connected = False
                self._covered.clear()
            self._stop.wait(BACKOFF_S[min(failures, len(BACKOFF_S) - 1)])
            failures += 1

    def receive(self, rows: list[dict[str, Any]]) -> None:
        """Keep the stream's updates until a mark holds them; the open stream covers each
        feed from its first update on."""
        if not rows:
            return
        with self._lock:
            for row in rows:
                feed, second = row["feed_id"], row["publish_time"]
                kept = self._kept[feed]
                # The benchmark of a second is its first update.
                kept.setdefault(second, row)
                first, newest = self._covered.get(feed, (second, second))
                self._covered[feed] = (first, max(newest, second))
                if len(kept) > KEPT_SECONDS:
                    del kept[min(kept)]
            self.received_at = time.time()
        self.arrived.set()

    def covered(self, feed: str, second: int) -> bool:
        """Whether the open stream has received `feed`'s benchmark of `second` (or knows it
        had none)."""
        with self._lock:
            span = self._covered.get(feed)
            return span is not None and span[0] <= second <= span[1]

    def pending(self, upto: int) -> bool:
        """Whether any update up to second `upto` waits to be taken."""
        with self._lock:
            return any(s <= upto for kept in self._kept.values() for s in kept)

    def updates(self, upto: int) -> list[dict[str, Any]]:
        """The stream's updates up to second `upto` not yet forgotten."""
        with self._lock:
            return [kept[s] for kept in self._kept.values() for s in sorted(kept) if s <= upto]

    def forget(self, upto: int) -> None:
        """Drop the updates up to second `upto`: the lake holds them now."""
        with self._lock:
            for feed, kept in self._kept.items():
                self._kept[feed] = {s: row for s, row in kept.items() if s > upto}

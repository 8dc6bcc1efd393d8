"""The oracle's streams: Server-Sent Events on a channel, and the Hermes WebSocket protocol."""

import asyncio
import contextlib
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass
from typing import Any

import orjson

from core.caches import LruCache
from edge.oracle.hub import Channel, PriceHub, Tick

KEEPALIVE = b": keepalive\n\n"
# Wormhole's id of Pythnet: Hermes clients read it in a verbose update's metadata.
EMITTER_CHAIN = 26
SELECTIONS_KEPT = 1024


class Selection:
    """The feeds a stream sends, as (hub key, id to answer with) pairs; identical requests share
    one selection, so a tick renders each distinct message once."""

    __slots__ = ("keys", "pairs")

    def __init__(self, pairs: tuple[tuple[str, str], ...]) -> None:
        self.pairs = pairs
        self.keys = frozenset(k for k, _ in pairs)


_selections: LruCache[Selection] = LruCache(SELECTIONS_KEPT)


def selection(pairs: list[tuple[str, str]]) -> Selection:
    """The shared selection of these (hub key, answer id) pairs."""
    key = tuple(dict.fromkeys(pairs))
    found = _selections.get(key)
    return found if found is not None else _selections.put(key, Selection(key))


@dataclass(frozen=True, slots=True)
class Rendering:
    """How a stream writes its updates."""

    encoding: str = "hex"
    parsed: bool = True
    benchmarks_only: bool = False


def price_update(hub_updates: list[tuple[str, dict[str, Any]]], rendering: Rendering) -> dict[str, Any]:
    """The v2 update document: binary (always empty) and, when asked, the parsed updates."""
    doc: dict[str, Any] = {"binary": {"encoding": rendering.encoding, "data": []}}
    if rendering.parsed:
        doc["parsed"] = [{"id": asked, **body} for asked, body in hub_updates]
    return doc


def _event(tick: Tick, chosen: Selection, rendering: Rendering) -> bytes:
    key = (chosen, rendering)
    found = tick.cache.get(key)
    if found is not None:
        return found
    source = tick.firsts if rendering.benchmarks_only else tick.updates
    items = [(asked, u.body()) for k, asked in chosen.pairs if (u := source.get(k)) is not None]
    body = b"data: " + orjson.dumps(price_update(items, rendering)) + b"\n\n" if items else b""
    tick.cache[key] = body
    return body


async def sse_events(channel: Channel, chosen: Selection,
                     rendering: Rendering) -> AsyncIterator[bytes]:
    """Every tick of the channel that changes a chosen feed, as one SSE event; a comment on the
    hub's heartbeat keeps idle connections open."""
    channel.subscribers += 1
    try:
        tick = channel.current
        while True:
            tick = await asyncio.shield(tick.next)
            if not tick.updates:
                yield KEEPALIVE
                continue
            body = _event(tick, chosen, rendering)
            if body:
                yield body
    finally:
        channel.subscribers -= 1


@dataclass
class Subscription:
    """One feed a WebSocket client follows, and how it asked for it."""

    asked: str
    verbose: bool
    binary: bool


def feed_message(asked: str, update_body: dict[str, Any], subscription: Subscription) -> str:
    """A Hermes WebSocket `price_update` message."""
    feed: dict[str, Any] = {"id": asked, "price": update_body["price"],
                  "ema_price": update_body["ema_price"]}
    if subscription.verbose:
        meta = update_body["metadata"]
        feed["metadata"] = {"slot": meta["slot"], "emitter_chain": EMITTER_CHAIN,
                            "price_service_receive_time": meta["proof_available_time"],
                            "prev_publish_time": meta["prev_publish_time"]}
    if subscription.binary:
        feed["vaa"] = ""
    return orjson.dumps({"type": "price_update", "price_feed": feed}).decode()


def _response(error: str | None = None) -> str:
    if error is None:
        return '{"type":"response","status":"success"}'
    return orjson.dumps({"type": "response", "status": "error", "error": error}).decode()


# Resolves requested ids to (hub key, answer id) pairs, and names those it cannot serve.
Resolver = Callable[[list[str]], tuple[list[tuple[str, str]], list[str]]]


class WebSocketSession:
    """One client of the Hermes WebSocket: subscribe and unsubscribe messages in, a
    `price_update` message per feed update out, on the real-time channel."""

    def __init__(self, hub: PriceHub, resolve: Resolver,
                 send: Callable[[str], Awaitable[None]]) -> None:
        self.hub = hub
        self.resolve = resolve
        self.send = send
        self.subscriptions: dict[str, Subscription] = {}

    async def handle(self, text: str) -> None:
        """Answer one client message."""
        try:
            message = orjson.loads(text)
            kind = message["type"]
            ids = message["ids"]
            if kind not in ("subscribe", "unsubscribe") or not isinstance(ids, list) or not all(
                    isinstance(i, str) for i in ids):
                raise ValueError("expected {\"type\": \"subscribe\" | \"unsubscribe\", "
                                 "\"ids\": [...]}")
        except (orjson.JSONDecodeError, KeyError, TypeError, ValueError) as err:
            await self.send(_response(f"invalid message: {err}"))
            return
        found, missing = self.resolve(ids)
        if kind == "unsubscribe":
            for key, _ in found:
                self.subscriptions.pop(key, None)
        elif missing and not message.get("ignore_invalid_price_ids", False):
            await self.send(_response(
                f"Price feed(s) with id(s) [{', '.join(missing)}] not found"))
            return
        else:
            for key, asked in found:
                self.subscriptions[key] = Subscription(asked, bool(message.get("verbose")),
                                                       bool(message.get("binary")))
        await self.send(_response())

    async def forward(self) -> None:
        """Send every real-time update of a subscribed feed, forever."""
        channel = self.hub.channels["real_time"]
        channel.subscribers += 1
        try:
            tick = channel.current
            while True:
                tick = await asyncio.shield(tick.next)
                for key, update in tick.updates.items():
                    subscription = self.subscriptions.get(key)
                    if subscription is not None:
                        await self.send(feed_message(subscription.asked, update.body(),
                                                     subscription))
        finally:
            channel.subscribers -= 1

    async def run(self, receive: Callable[[], Awaitable[str | None]]) -> None:
        """Serve the client until it closes."""
        forwarder = asyncio.ensure_future(self.forward())
        try:
            while (text := await receive()) is not None:
                await self.handle(text)
        finally:
            forwarder.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await forwarder

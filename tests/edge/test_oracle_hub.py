"""The price hub and its channels, on hand-made updates."""

import asyncio

import orjson

from edge.oracle.hub import PriceHub, Update
from edge.oracle.streams import Rendering, WebSocketSession, selection, sse_events


def up(key: str, slot: int, publish: int, prev: int, price: int = 100) -> Update:
    return Update(key, price, 1, -2, price, 1, publish, prev, slot, publish)


def run(coroutine):
    return asyncio.run(coroutine)


def test_the_hub_keeps_each_feed_in_order_and_drops_what_is_not_newer() -> None:
    async def scenario():
        hub = PriceHub()
        assert hub.receive([up("a", 10, 4, 3), up("b", 10, 4, 3)]) == 2
        assert hub.receive([up("a", 10, 4, 3), up("a", 9, 3, 3), up("a", 11, 4, 4)]) == 1
        return hub

    hub = run(scenario())
    assert hub.latest["a"].slot == 11 and [u.slot for u in hub.recent["a"]] == [10, 11]


def test_a_fixed_rate_tick_sends_each_changed_feed_once_with_its_first_benchmark() -> None:
    async def scenario():
        hub = PriceHub()
        channel = hub.channels["fixed_rate@200ms"]
        start = channel.current
        hub.receive([up("a", 10, 4, 3, 100)])
        hub.receive([up("a", 11, 4, 4, 101), up("b", 11, 4, 3, 50)])
        hub.receive([up("a", 12, 5, 4, 102)])
        channel.flush()
        first = await start.next
        channel.flush()  # nothing changed since: no tick
        hub.receive([up("b", 13, 5, 4, 51)])
        channel.flush()
        second = await first.next
        return first, second

    first, second = run(scenario())
    assert {k: u.price for k, u in first.updates.items()} == {"a": 102, "b": 50}
    # a's first update of a new second within the tick is slot 10 (prev 3 != 4).
    assert {k: u.slot for k, u in first.firsts.items()} == {"a": 10, "b": 11}
    assert set(second.updates) == {"b"}


def test_real_time_sends_every_batch_and_streams_render_only_chosen_feeds() -> None:
    async def scenario():
        hub = PriceHub()
        chosen = selection([("a", "aa")])
        stream = sse_events(hub.channels["real_time"], chosen, Rendering(benchmarks_only=True))
        pending = asyncio.ensure_future(anext(stream))
        await asyncio.sleep(0)
        hub.receive([up("b", 10, 4, 3)])          # not chosen: nothing sent
        hub.receive([up("a", 10, 4, 4)])          # not a benchmark: nothing sent
        hub.receive([up("a", 11, 5, 4, 7)])       # sent
        event = await asyncio.wait_for(pending, 1)
        await stream.aclose()
        return event, hub.channels["real_time"].subscribers

    event, subscribers = run(scenario())
    assert event.startswith(b"data: ") and event.endswith(b"\n\n")
    doc = orjson.loads(event[6:])
    assert doc["binary"] == {"encoding": "hex", "data": []}
    assert [(p["id"], p["price"]["price"], p["metadata"]["prev_publish_time"])
            for p in doc["parsed"]] == [("aa", "7", 4)]
    assert subscribers == 0


def test_the_hub_answers_recent_times_only_without_a_gap() -> None:
    async def scenario():
        hub = PriceHub()
        hub.receive([up("a", 10, 100, 95), up("a", 11, 101, 100), up("a", 12, 103, 101)])
        return hub

    hub = run(scenario())
    assert hub.first_at_or_after("a", 96).slot == 10
    assert hub.first_at_or_after("a", 102).slot == 12
    assert hub.first_at_or_after("a", 95) is None      # an unseen update was published at 95
    assert hub.first_at_or_after("a", 104) is None


def test_websocket_session_subscribes_answers_and_forwards() -> None:
    sent: list[str] = []

    async def send(text: str) -> None:
        sent.append(text)

    def resolve(ids):
        known = {"aa": "a"}
        return ([(known[i], i) for i in ids if i in known], [i for i in ids if i not in known])

    async def scenario():
        hub = PriceHub()
        session = WebSocketSession(hub, resolve, send)
        forwarding = asyncio.ensure_future(session.forward())
        await asyncio.sleep(0)
        await session.handle('{"type":"subscribe","ids":["aa","zz"]}')
        await session.handle('{"type":"subscribe","ids":["aa"],"verbose":true}')
        await session.handle("not json")
        hub.receive([up("a", 10, 4, 3, 9)])
        await asyncio.sleep(0.01)
        await session.handle('{"type":"unsubscribe","ids":["aa"]}')
        hub.receive([up("a", 11, 5, 4, 10)])
        await asyncio.sleep(0.01)
        forwarding.cancel()

    run(scenario())
    messages = [orjson.loads(m) for m in sent]
    assert messages[0] == {"type": "response", "status": "error",
                           "error": "Price feed(s) with id(s) [zz] not found"}
    assert messages[1] == {"type": "response", "status": "success"}
    assert messages[2]["status"] == "error" and messages[2]["error"].startswith("invalid message")
    update = messages[3]
    assert update["type"] == "price_update" and update["price_feed"]["id"] == "aa"
    assert update["price_feed"]["metadata"]["prev_publish_time"] == 3
    assert messages[4] == {"type": "response", "status": "success"}
    assert len(messages) == 5  # nothing after unsubscribing


def test_a_subscriber_leaving_does_not_stop_the_others() -> None:
    async def scenario():
        hub = PriceHub()
        chosen = selection([("a", "a")])
        leaving = sse_events(hub.channels["real_time"], chosen, Rendering())
        staying = sse_events(hub.channels["real_time"], chosen, Rendering())
        gone = asyncio.ensure_future(anext(leaving))
        kept = asyncio.ensure_future(anext(staying))
        await asyncio.sleep(0)
        gone.cancel()
        await asyncio.sleep(0)
        hub.receive([up("a", 10, 4, 3, 5)])
        return await asyncio.wait_for(kept, 1)

    assert b'"price":"5"' in run(scenario())

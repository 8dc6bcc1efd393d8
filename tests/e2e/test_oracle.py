"""The oracle over a real socket: Hermes routes, /prices, streams, the WebSocket, history read
back from the lake, and one edge following another as its upstream."""

import asyncio
import calendar
import itertools
import time

import httpx
import orjson
import polars as pl
import pytest
import websockets

from core.feeds import FEEDS
from core.market_hours import MarketHours
from tests.conftest import edge_process, until

BTC = next(f for f in FEEDS if f.symbol == "Crypto.BTC/USD")
ETH = next(f for f in FEEDS if f.symbol == "Crypto.ETH/USD")
HYPE = next(f for f in FEEDS if f.compatible_id is None)
AAPL = next(f for f in FEEDS if f.symbol == "Equity.US.AAPL/USD")


def test_feeds_are_listed_once_under_their_primary_id(edge) -> None:
    feeds = httpx.get(edge + "/v2/price_feeds").json()
    assert sorted(f["id"] for f in feeds) == sorted(f.compatible_id or f.feed_id for f in FEEDS)
    by_symbol = {f["attributes"]["symbol"]: f for f in feeds}
    assert by_symbol[HYPE.symbol]["id"] == HYPE.feed_id
    assert by_symbol[BTC.symbol]["attributes"]["oracle_id"] == BTC.feed_id
    assert by_symbol[BTC.symbol]["market_hours"] == {"is_open": True, "next_open": None,
                                                     "next_close": None}
    assert [f["attributes"]["symbol"] for f in httpx.get(
        edge + "/v2/price_feeds", params={"query": "btc/"}).json()] == [BTC.symbol]
    assert {f["attributes"]["asset_type"] for f in httpx.get(
        edge + "/v2/price_feeds", params={"asset_type": "fx"}).json()} == {"FX"}
    asked = "0X" + BTC.feed_id.upper()
    one = httpx.get(edge + f"/v2/price_feeds/{asked}").json()
    assert one["id"] == BTC.feed_id and one["attributes"]["oracle_id"] == BTC.feed_id
    assert httpx.get(edge + f"/v2/price_feeds/{BTC.compatible_id}").json()["id"] == \
        BTC.compatible_id


def test_latest_takes_both_id_parameters_and_answers_hermes_errors_in_text(edge) -> None:
    url = edge + "/v2/updates/price/latest"
    answer = httpx.get(url, params=[("ids[]", BTC.compatible_id), ("ids", "0x" + ETH.feed_id),
                                    ("ids", BTC.feed_id)])
    assert answer.status_code == 200 and "x-ratelimit-limit" not in answer.headers
    doc = answer.json()
    assert doc["binary"] == {"encoding": "hex", "data": []}
    assert [p["id"] for p in doc["parsed"]] == [BTC.compatible_id, ETH.feed_id]
    parsed = doc["parsed"][0]
    assert parsed["price"]["expo"] == -8 and int(parsed["price"]["price"]) > 0
    assert set(parsed["metadata"]) == {"slot", "proof_available_time", "prev_publish_time"}
    unknown = "ab" * 32
    missing = httpx.get(url, params=[("ids[]", BTC.feed_id), ("ids[]", unknown)])
    assert missing.status_code == 404
    assert missing.headers["content-type"].startswith("text/plain")
    assert missing.text == f"Price ids not found: {unknown}"
    kept = httpx.get(url, params=[("ids[]", BTC.feed_id), ("ids[]", unknown),
                                  ("ignore_invalid_price_ids", "true"), ("parsed", "false"),
                                  ("encoding", "base64")]).json()
    assert kept == {"binary": {"encoding": "base64", "data": []}}
    too_many = httpx.get(url, params=[("ids[]", BTC.feed_id)] * 300 + [("ids", ETH.feed_id)] * 201)
    assert too_many.status_code == 400 and too_many.text.startswith("Failed to deserialize")
    refused = httpx.get(url, params={"ids[]": BTC.feed_id, "channel": "fixed_rate@50ms"})
    assert refused.status_code == 400 and "channel" in refused.text
    assert httpx.get(url).status_code == 400
    assert httpx.get(url, params={"ids[]": "xyz"}).status_code == 400


def test_history_answers_the_first_update_at_or_after_a_time(edge, lake) -> None:
    rows = lake.read("oracle_updates").filter(pl.col("feed_id") == BTC.feed_id).sort(
        "publish_time")
    row = rows.row(rows.height // 2, named=True)
    ts = row["publish_time"] - 7
    hermes = httpx.get(edge + f"/v2/updates/price/{ts}",
                       params={"ids[]": BTC.compatible_id}).json()["parsed"][0]
    assert hermes["id"] == BTC.compatible_id
    assert (int(hermes["price"]["price"]), int(hermes["price"]["conf"]),
            int(hermes["ema_price"]["price"]), hermes["price"]["publish_time"],
            hermes["metadata"]["prev_publish_time"], hermes["metadata"]["slot"]) == (
        row["price"], row["conf"], row["ema_price"], row["publish_time"],
        row["prev_publish_time"], row["slot"])
    native = httpx.get(edge + "/api/v1/prices/at", params={"ids": BTC.feed_id, "ts": ts})
    assert native.status_code == 200 and "x-ratelimit-limit" in native.headers
    item = native.json()["items"][0]
    whole, fraction = divmod(row["price"], 10 ** 8)
    assert item["price"] == f"{whole}.{fraction:08d}".rstrip("0")
    assert item["id"] == "0x" + BTC.feed_id
    too_early = httpx.get(edge + "/api/v1/prices/at", params={"ids": BTC.feed_id, "ts": 1})
    assert too_early.status_code == 404 and too_early.json()["code"] == "not_found"
    assert httpx.get(edge + "/v2/updates/price/1", params={"ids[]": BTC.feed_id}).text == \
        "Update data not found"
    distinct = [("ids[]", f"{i:064x}") for i in range(101)]
    assert httpx.get(edge + f"/v2/updates/price/{ts}", params=distinct).status_code == 400


def test_prices_are_metered_and_validated(edge) -> None:
    answer = httpx.get(edge + "/api/v1/prices", params={"ids": f"{BTC.feed_id},{ETH.feed_id}"})
    assert answer.status_code == 200 and "x-ratelimit-remaining" in answer.headers
    items = answer.json()["items"]
    assert [i["id"] for i in items] == ["0x" + BTC.feed_id, "0x" + ETH.feed_id]
    assert all(isinstance(i[k], str) for i in items for k in i)
    unknown = httpx.get(edge + "/api/v1/prices", params={"ids": "cd" * 32})
    assert unknown.status_code == 404 and unknown.json()["param"] == "ids"
    many = httpx.get(edge + "/api/v1/prices", params={"ids": ",".join(["cd" * 32] * 101)})
    assert many.status_code == 400 and many.json()["code"] == "invalid_param"


def test_native_feeds_status_and_candles(edge, lake) -> None:
    feeds = httpx.get(edge + "/v1/feeds").json()["items"]
    assert len(feeds) == len(FEEDS) and all(f["price"] is not None for f in feeds)
    status = httpx.get(edge + "/v1/status").json()
    assert status["upstream"]["kind"] == "simulator" and status["catalog"]["live"] == len(FEEDS)
    rows = lake.read("oracle_updates").filter(pl.col("feed_id") == BTC.feed_id)
    assert_hour_candle(edge, lake, BTC, int(rows["publish_time"].max()) // 3600 * 3600 - 3600)


def assert_hour_candle(edge: str, lake, feed, hour: int) -> None:
    """The feed's 1h candle of `hour` is the lake's updates in it, worked out here."""
    rows = lake.read("oracle_updates").filter(pl.col("feed_id") == feed.feed_id)
    candles = httpx.get(edge + "/v1/candles", params={"id": feed.feed_id, "resolution": "1h",
                                                      "from": hour, "to": hour + 3599}).json()
    one = rows.filter(pl.col("publish_time").is_between(hour, hour + 3599)).sort("publish_time")
    places = -feed.expo
    prices = one["price"] / 10**places
    assert candles["items"] == [{"timestamp": time.strftime("%Y-%m-%dT%H:%M:%SZ",
                                                            time.gmtime(hour)),
                                 "open": round(prices[0], places),
                                 "high": round(prices.max(), places),
                                 "low": round(prices.min(), places),
                                 "close": round(prices[-1], places), "updates": one.height}]


def test_a_past_hour_candle_comes_from_the_published_history_alone(edge, lake) -> None:
    """An equity feed's last hour with updates that closed before the history's watermark: the
    hub has seen updates since, which the history does not hold, and which are not that hour's.
    (While its market is open, the watermark's own hour is still being filled by the hub.)"""
    watermark = calendar.timegm(time.strptime(
        httpx.get(edge + "/v1/status").json()["history"]["to"], "%Y-%m-%dT%H:%M:%SZ"))
    closed = lake.read("oracle_updates").filter(
        (pl.col("feed_id") == AAPL.feed_id) & (pl.col("publish_time") < watermark // 3600 * 3600))
    if closed.height:
        assert_hour_candle(edge, lake, AAPL, int(closed["publish_time"].max()) // 3600 * 3600)
        return
    # The home's two days held no closed hour of its market's sessions (a weekend, or the first
    # hour of a Monday's session): then the last whole hour before the watermark of a feed that
    # trades around the clock, which the hub has seen updates since as well.
    assert_hour_candle(edge, lake, BTC, watermark // 3600 * 3600 - 3600)


async def _events(base: str, query: str, seconds: float) -> list[tuple[float, dict]]:
    out = []
    async with httpx.AsyncClient(timeout=httpx.Timeout(5, read=seconds + 5)) as client, \
            client.stream("GET", f"{base}/v2/updates/price/stream?{query}") as response:
        assert response.headers["content-type"] == "text/event-stream"
        deadline = time.monotonic() + seconds
        async for line in response.aiter_lines():
            if line.startswith("data:"):
                out.append((time.monotonic(), orjson.loads(line[5:])))
            if time.monotonic() > deadline:
                break
    return out


def _slots(events, feed_id: str) -> list[int]:
    return [p["metadata"]["slot"] for _, e in events for p in e["parsed"] if p["id"] == feed_id]


def test_stream_channels_keep_their_cadence(edge) -> None:
    ids = f"ids[]={BTC.feed_id}&ids[]={ETH.feed_id}"

    async def all_channels():
        return await asyncio.gather(
            _events(edge, ids + "&channel=real_time", 3.2),
            _events(edge, ids + "&channel=fixed_rate@200ms", 3.2),
            _events(edge, ids + "&channel=fixed_rate@1000ms", 3.2),
            _events(edge, ids + "&channel=real_time&benchmarks_only=true", 3.2))

    real, fast, slow, bench = asyncio.run(all_channels())
    # Real time: every slot (400 ms) of each feed, in order.
    slots = _slots(real, BTC.feed_id)
    assert len(slots) >= 6 and all(b - a == 1 for a, b in itertools.pairwise(slots))
    for events, period in ((fast, 0.2), (slow, 1.0)):
        gaps = [b[0] - a[0] for a, b in itertools.pairwise(events)]
        assert gaps and min(gaps) > period * 0.6
        for event in events:  # each feed at most once per tick
            named = [p["id"] for p in event[1]["parsed"]]
            assert len(named) == len(set(named))
        sent = _slots(events, BTC.feed_id)  # only when changed: never the same update twice
        assert sent == sorted(set(sent))
    assert len(_slots(slow, BTC.feed_id)) <= 5
    # Benchmarks only: the first update of each second, one a second.
    updates = [p for _, e in bench for p in e["parsed"] if p["id"] == BTC.feed_id]
    assert len(updates) >= 2
    assert all(p["metadata"]["prev_publish_time"] != p["price"]["publish_time"] for p in updates)
    seconds = [p["price"]["publish_time"] for p in updates]
    assert all(b - a == 1 for a, b in itertools.pairwise(seconds))


def test_the_websocket_speaks_hermes_subscribe_and_unsubscribe(edge) -> None:
    async def session():
        async with websockets.connect(edge.replace("http", "ws") + "/ws") as socket:
            await socket.send(orjson.dumps({"type": "subscribe", "ids": ["ef" * 32]}).decode())
            refused = orjson.loads(await socket.recv())
            await socket.send(orjson.dumps({"type": "subscribe", "ids": [BTC.compatible_id],
                                            "verbose": True}).decode())
            accepted = orjson.loads(await socket.recv())
            update = orjson.loads(await asyncio.wait_for(socket.recv(), 3))
            await socket.send(orjson.dumps({"type": "unsubscribe",
                                            "ids": [BTC.compatible_id]}).decode())
            while (message := orjson.loads(await socket.recv()))["type"] != "response":
                pass
            with pytest.raises(TimeoutError):
                await asyncio.wait_for(socket.recv(), 1.2)
            return refused, accepted, update, message

    refused, accepted, update, unsubscribed = asyncio.run(session())
    assert refused["status"] == "error" and "ef" * 32 in refused["error"]
    assert accepted == {"type": "response", "status": "success"}
    assert update["type"] == "price_update"
    feed = update["price_feed"]
    assert feed["id"] == BTC.compatible_id and set(feed) == {"id", "price", "ema_price",
                                                              "metadata"}
    assert feed["metadata"]["emitter_chain"] == 26
    assert unsubscribed == {"type": "response", "status": "success"}


def test_an_edge_follows_another_as_its_hermes_upstream(home, edge) -> None:
    upstream = edge + "/v2/updates/price/stream?channel=real_time"
    # Every feed whose market is open now (the equity's opens at 09:30 New York time).
    open_now = sum(MarketHours(feed.schedule).is_open(time.time()) for feed in FEEDS)
    with edge_process(home, CHAINTAPE_ORACLE_UPSTREAM=upstream) as follower:
        status = until(lambda: (found := httpx.get(follower + "/v1/status").json())["catalog"][
            "live"] == open_now and found, 10, "every feed live", every=0.2)
        assert status["upstream"]["kind"] == "hermes" and status["upstream"]["connected"]
        params = {"ids[]": BTC.feed_id}
        theirs = httpx.get(follower + "/v2/updates/price/latest", params=params).json()
        ours = httpx.get(edge + "/v2/updates/price/latest", params=params).json()
        assert abs(theirs["parsed"][0]["metadata"]["slot"]
                   - ours["parsed"][0]["metadata"]["slot"]) <= 3

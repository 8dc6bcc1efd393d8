"""Pair trades and candles over a real socket, on hand-made trades: position cursors both ways,
catching up with a trade published later, and candles worked out by hand."""


import httpx
import orjson
import polars as pl
import pytest

from edge.routes.market.trades import candles
from publish.writer import ServingTable
from tests.conftest import edge_process, until
from tests.edge.conftest import issue_key, publish_chains

PAIR = "0x" + "cd" * 20
MAKER = "0x" + "11" * 20
OTHER = "0x" + "22" * 20
T0 = 1_795_000_000


def trade(n: int, tx_type: str = "buy", maker: str = MAKER, price: float = 1.0) -> dict:
    """Trade number n: block 100 + n, one minute after the one before."""
    return {"chain_id": 1000, "pair": PAIR, "block_number": 100 + n, "log_index": 0,
            "ts": T0 + 60 * n, "hash": f"0x{n:064x}", "maker": maker, "from_address": maker,
            "to_address": PAIR, "tx_type": tx_type, "gas_used": 21_000, "fee_usd": 0.1,
            "amount0": 10.0, "amount1": 10.0 * price, "price0": price, "price1": 1 / price,
            "price_usd0": price, "price_usd1": 1.0, "price_usd": price,
            "volume_usd": 10.0 * price}


def publish(home, trades: list[dict]) -> str:
    pairs = pl.DataFrame({"chain_id": [1000], "pair": [PAIR],
                          "item": [orjson.dumps({"pair_address": PAIR}).decode()]})
    return publish_chains(home, count=2, config=False, tables=[
        ServingTable("pairs", pairs, ("chain_id", "pair")),
        ServingTable("trades", pl.DataFrame(trades), ("chain_id", "pair", "block_number",
                                                      "log_index"))])


@pytest.fixture(scope="module")
def served(tmp_path_factory):
    """Five trades published and an edge over them, for the module's tests that only read."""
    yield from _served(tmp_path_factory.mktemp("trades"))


@pytest.fixture
def served_alone(tmp_path):
    """The same, for a test that publishes again."""
    yield from _served(tmp_path)


def _served(home):
    with pytest.MonkeyPatch.context() as monkeypatch:
        monkeypatch.setenv("CHAINTAPE_HOME", str(home))
        publish(home, [trade(n, "sell" if n % 2 else "buy", OTHER if n == 3 else MAKER)
                       for n in range(1, 6)])
        key = issue_key(home, "internal")
        with edge_process(home, CHAINTAPE_POLL_SECONDS="0.2") as base, httpx.Client(
                base_url=f"{base}/api/v1/chains/chain-00/pairs/{PAIR}",
                headers={"X-API-Key": key}) as client:
            yield home, client


def blocks(body: dict) -> list[int]:
    return [t["block_info"]["block_number"] for t in body["items"]]


def test_cursors_page_away_from_the_newest_and_back(served) -> None:
    _, api = served
    first = api.get("/trades", params={"limit": 2}).json()
    assert blocks(first) == [105, 104]
    second = api.get("/trades", params={"limit": 2, "cursor": first["next_cursor"]}).json()
    assert blocks(second) == [103, 102]
    third = api.get("/trades", params={"limit": 2, "cursor": second["next_cursor"]}).json()
    assert blocks(third) == [101] and third["next_cursor"] is None
    back = api.get("/trades", params={"limit": 2, "cursor": third["prev_cursor"]}).json()
    assert blocks(back) == [103, 102]
    oldest_first = api.get("/trades", params={"limit": 3, "order": "asc"}).json()
    assert blocks(oldest_first) == [101, 102, 103] and oldest_first["prev_cursor"] is None
    rest = api.get("/trades", params={"limit": 3, "order": "asc",
                                      "cursor": oldest_first["next_cursor"]}).json()
    assert blocks(rest) == [104, 105] and rest["next_cursor"] is None


def test_filters_by_type_maker_and_time(served) -> None:
    _, api = served
    assert blocks(api.get("/trades", params={"tx_type": "sell"}).json()) == [105, 103, 101]
    assert blocks(api.get("/trades", params={"maker": OTHER.upper().replace("0X", "0x")})
                  .json()) == [103]
    window = api.get("/trades", params={"from": T0 + 120, "to": T0 + 240}).json()
    assert blocks(window) == [104, 103, 102]
    assert api.get("/trades", params={"from": 10, "to": 5}).status_code == 400
    assert api.get("/trades", params={"tx_type": "swap"}).json()["param"] == "tx_type"


def test_the_newest_page_catches_up_with_trades_published_later(served_alone) -> None:
    home, api = served_alone
    first = api.get("/trades", params={"limit": 2}).json()
    assert api.get("/trades", params={"cursor": first["prev_cursor"]}).json()["items"] == []
    before = api.get("/trades").headers["x-snapshot-id"]
    publish(home, [trade(n) for n in range(1, 8)])
    until(lambda: api.get("/trades").headers["x-snapshot-id"] != before, 10,
          "the new snapshot served", every=0.2)
    caught = api.get("/trades", params={"cursor": first["prev_cursor"]}).json()
    assert blocks(caught) == [107, 106]
    assert api.get("/trades", params={"cursor": first["next_cursor"], "tx_type": "buy"}).json()[
        "param"] == "cursor"


def test_an_unknown_pair_is_404(served) -> None:
    _, api = served
    other = str(api.base_url).rstrip("/").replace(PAIR, "0x" + "ef" * 20)
    answer = httpx.get(f"{other}/trades", headers=api.headers)
    assert answer.status_code == 404 and answer.json()["param"] == "address"


def test_candles_by_hand() -> None:
    # Three swaps in the first five-minute candle, one in the next; a liquidity event and a
    # swap outside the window do not count.
    start = 1_795_000_200  # a multiple of 300
    rows = pl.DataFrame([
        {"ts": start + 10, "tx_type": "buy", "price_usd": 2.0, "volume_usd": 20.0},
        {"ts": start + 20, "tx_type": "sell", "price_usd": 1.0, "volume_usd": 5.0},
        {"ts": start + 30, "tx_type": "add", "price_usd": 9.0, "volume_usd": 100.0},
        {"ts": start + 40, "tx_type": "buy", "price_usd": 3.0, "volume_usd": 6.0},
        {"ts": start + 310, "tx_type": "sell", "price_usd": 2.5, "volume_usd": 1.0},
        {"ts": start + 900, "tx_type": "buy", "price_usd": 7.0, "volume_usd": 1.0},
    ])
    bars = candles(rows, 300, start, start + 600)
    assert [b["time"] for b in bars] == [start, start + 300]
    first, second = bars
    assert (first["open"], first["high"], first["low"], first["close"]) == (2.0, 3.0, 1.0, 3.0)
    assert (first["volume_usd"], first["trades"], first["buys"], first["sells"]) == (31.0, 3, 2, 1)
    assert (second["open"], second["close"], second["trades"], second["sells"]) == (2.5, 2.5, 1, 1)
    assert first["timestamp"] == "2026-11-18T11:10:00.000Z"

"""The market streams over a real socket, fed by a real chain (the `evm_live` fixture): swaps
and a new pool mined after the snapshot reach the streams' clients; and the page at `/` in a
real headless Chromium (Debian's), which loads with no console errors and shows a swap mined
after the snapshot through the lake, the live tail and its stream."""

import json
import socket
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

import httpx
import pytest
from selenium import webdriver
from selenium.webdriver.common.by import By

from sources.evm.rpc import quantity
from tests.conftest import edge_process, until
from tests.e2e.conftest import E18, swap_id
from tests.edge.conftest import issue_key

pytestmark = pytest.mark.cost(seconds=36)


@dataclass
class Client:
    """An SSE client on its own thread: every event it read, as parsed fields, and every
    comment line."""

    url: str
    headers: dict = field(default_factory=dict)
    events: list[dict] = field(default_factory=list)
    comments: list[str] = field(default_factory=list)
    status: int | None = None
    ended: bool = False

    def __post_init__(self) -> None:
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        try:
            with httpx.stream("GET", self.url, headers=self.headers, timeout=60) as answer:
                self.status = answer.status_code
                event: dict = {}
                for line in answer.iter_lines():
                    if line.startswith(":"):
                        self.comments.append(line)
                    elif not line:
                        if event:
                            self.events.append(event)
                        event = {}
                    else:
                        name, _, value = line.partition(": ")
                        event[name] = value
        except httpx.HTTPError:
            # The edge stopped under an open stream (the module's end): the stream ends.
            pass
        self.ended = True

    def wait(self, predicate, timeout: float = 20.0):
        """The first event that satisfies `predicate`, waiting for it."""
        return until(lambda: next((e for e in list(self.events) if predicate(e)), None),
                     timeout, f"{self.url}: an event among {self.events}")

    def trades(self) -> list[str]:
        return [e["id"] for e in self.events if e.get("event") == "trade"]



def test_swaps_reach_the_pair_stream_and_a_reconnect_resumes_exactly_after_its_last_event(evm_live):
    market, pair = evm_live["market"], evm_live["pair"]
    chain_id = quantity(evm_live["chain_id"])
    url = f"{evm_live['base']}/chains/{chain_id}/pairs/{pair}/stream"
    lookup = f"{evm_live['base']}/chains/{chain_id}/pairs/{pair}/trades"

    def newest(count: int) -> list[str]:
        items = httpx.get(lookup, params={"limit": count}, headers=evm_live["key"]).json()["items"]
        return [f"{t['block_info']['block_number']}:{t['block_info']['log_index']}"
                for t in items]

    latest = newest(1)[0]
    client = Client(url)
    opened = client.wait(lambda e: e.get("event") == "window")
    assert client.status == 200
    # A new client starts from now: its opening window block is as of the newest trade, and
    # it is sent no trade before it.
    assert opened["id"] == latest and client.trades() == []
    buy = market.swap(pair, market.quote, 2 * E18, 1)
    sell = market.swap(pair, evm_live["pepe"], 100 * E18, 1)
    client.wait(lambda e: e.get("id") == swap_id(sell) and e.get("event") == "trade")
    assert client.trades() == [swap_id(buy), swap_id(sell)]
    window = client.wait(lambda e: e.get("event") == "window" and e.get("id") == swap_id(sell))
    before, after = (json.loads(e["data"])["txn"]["h24"] for e in (opened, window))
    assert (after["buys"], after["sells"]) == (before["buys"] + 1, before["sells"] + 1)
    # Reconnecting after the buy: the sell alone, once; after the newest before them: both.
    again = Client(url, {"Last-Event-ID": swap_id(buy)})
    again.wait(lambda e: e.get("event") == "window")
    assert again.trades() == [swap_id(sell)]
    whole = Client(url, {"Last-Event-ID": latest})
    whole.wait(lambda e: e.get("event") == "window")
    assert whole.trades() == [swap_id(buy), swap_id(sell)]
    # The same swaps are what the trades lookup serves, live.
    assert newest(2) == [swap_id(sell), swap_id(buy)]


def test_a_new_pool_reaches_the_new_pairs_stream_and_trades_live(evm_live):
    market = evm_live["market"]
    chain_id = quantity(evm_live["chain_id"])
    client = Client(f"{evm_live['base']}/pairs/new/stream?chain={chain_id}")
    until(lambda: client.status == 200, 20, "the stream open")
    doge = market.token("Doge", "DOGE", 10**9 * E18)
    fresh = market.pair(doge).lower()
    market.approve(0, doge)
    weth_is_0 = sorted([doge, market.quote])[0] == market.quote
    amounts = (10 * E18, 10_000 * E18)
    market.add_liquidity(fresh, *(amounts if weth_is_0 else amounts[::-1]))
    event = client.wait(lambda e: e.get("event") == "pair", timeout=30)
    assert fresh in event["data"] and doge.lower() in event["data"]
    assert [e["event"] for e in client.events if e.get("event") == "pair"] == ["pair"]
    market.approve(1, doge)
    bought = market.swap(fresh, market.quote, E18 // 10, 1)
    def served() -> list[str]:
        answer = httpx.get(f"{evm_live['base']}/chains/{chain_id}/pairs/{fresh}/trades",
                           headers=evm_live["key"])
        return [] if answer.status_code != 200 else [
            f"{t['block_info']['block_number']}:{t['block_info']['log_index']}"
            for t in answer.json()["items"]]

    until(lambda: swap_id(bought) in served(), 20, "the new pair's swap served")


def test_a_reader_that_stops_reading_does_not_stall_the_others(evm_live):
    market, pair = evm_live["market"], evm_live["pair"]
    chain_id = quantity(evm_live["chain_id"])
    host, port = evm_live["base"].split("//")[1].split("/")[0].split(":")
    path = f"/api/v1/chains/{chain_id}/pairs/{pair}/stream"
    stuck = []
    for _ in range(3):
        sock = socket.socket()
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 1024)
        sock.connect((host, int(port)))
        sock.sendall(f"GET {path} HTTP/1.1\r\nHost: {host}\r\n\r\n".encode())
        stuck.append(sock)
    key = issue_key(evm_live["home"], "internal")
    client = Client(evm_live["base"].removesuffix("/api/v1") + path, {"X-API-Key": key})
    client.wait(lambda e: e.get("event") == "window")
    swaps = [market.swap(pair, market.quote, E18 // 100, 1) for _ in range(5)]
    client.wait(lambda e: e.get("id") == swap_id(swaps[-1]) and e.get("event") == "trade")
    assert client.trades() == [swap_id(s) for s in swaps]
    assert httpx.get(evm_live["base"] + "/status", timeout=5).status_code == 200
    for sock in stuck:
        sock.close()


def test_streams_are_bounded_per_client_and_idle_ones_get_heartbeats(evm_live):
    chain_id = quantity(evm_live["chain_id"])
    key = issue_key(evm_live["home"], "internal")
    url = f"{evm_live['base']}/chains/{chain_id}/pairs/{evm_live['pair']}/stream"
    held = [Client(url, {"X-API-Key": key}) for _ in range(8)]
    for client in held:
        client.wait(lambda e: e.get("event") == "window")
    refused = httpx.get(url, headers={"X-API-Key": key}, timeout=10)
    assert refused.status_code == 429
    assert refused.headers["content-type"] == "application/problem+json"
    assert refused.json()["code"] == "rate_limited"
    until(lambda: held[0].comments, 5, "a heartbeat")
    assert held[0].comments[0] == ": heartbeat"


def test_a_stream_ends_after_the_longest_duration_and_says_so(evm_live):
    chain_id = quantity(evm_live["chain_id"])
    with edge_process(evm_live["home"], CHAINTAPE_STREAM_MAX_SECONDS="1.5",
                      CHAINTAPE_STREAM_HEARTBEAT_SECONDS="0.3") as base:
        client = Client(f"{base}/api/v1/chains/{chain_id}/pairs/{evm_live['pair']}/stream")
        end = client.wait(lambda e: e.get("event") == "end", timeout=10)
        assert '"max_duration"' in end["data"]
        until(lambda: client.ended, 5, "the stream's end")


def test_paging_live_trades_never_skips_or_repeats_and_prev_cursor_catches_up(evm_live):
    market, pair = evm_live["market"], evm_live["pair"]
    chain_id = quantity(evm_live["chain_id"])
    lookup = f"{evm_live['base']}/chains/{chain_id}/pairs/{pair}/trades"

    def ids(page: dict) -> list[str]:
        return [f"{t['block_info']['block_number']}:{t['block_info']['log_index']}"
                for t in page["items"]]

    def served(receipt: dict) -> None:
        until(lambda: swap_id(receipt) in ids(httpx.get(lookup, params={"limit": 5},
                                                        headers=evm_live["key"]).json()),
              20, "the swap served")

    made = [market.swap(pair, market.quote, E18 // 100, 1) for _ in range(3)]
    served(made[-1])
    everything = ids(httpx.get(lookup, params={"limit": 100}, headers=evm_live["key"]).json())
    first = httpx.get(lookup, params={"limit": 2}, headers=evm_live["key"]).json()
    assert ids(first) == [swap_id(made[2]), swap_id(made[1])]
    later = [market.swap(pair, market.quote, E18 // 100, 1) for _ in range(2)]
    served(later[-1])
    # Older pages go on exactly after the first page, though two trades arrived since.
    older = httpx.get(lookup, params={"limit": 2, "cursor": first["next_cursor"]},
                      headers=evm_live["key"]).json()
    assert ids(older) == everything[2:4]
    # The newer cursor catches up with what arrived, newest first.
    newer = httpx.get(lookup, params={"limit": 10, "cursor": first["prev_cursor"]},
                      headers=evm_live["key"]).json()
    assert ids(newer) == [swap_id(later[1]), swap_id(later[0])]


def test_the_brief_etag_changes_exactly_when_its_content_does(evm_live):
    market, pair = evm_live["market"], evm_live["pair"]
    chain_id = quantity(evm_live["chain_id"])
    brief = f"{evm_live['base']}/chains/{chain_id}/tokens/{evm_live['pepe']}/brief"
    headers = evm_live["key"]
    first = httpx.get(brief, headers=headers)
    assert first.status_code == 200
    tag = first.headers["etag"]
    # Asked again with nothing new (no block mined, so no new tail): the same brief, the same
    # tag, 304.
    again = httpx.get(brief, headers={**headers, "If-None-Match": tag})
    assert again.status_code == 304 and again.headers["etag"] == tag
    receipt = market.swap(pair, market.quote, E18 // 100, 1)
    now = until(lambda: (answer := httpx.get(brief, headers={**headers, "If-None-Match": tag}))
                .status_code == 200 and answer, 20, "the brief showing the swap")
    assert now.headers["etag"] != tag
    assert swap_id(receipt) in {f"{t['block_info']['block_number']}:"
                                f"{t['block_info']['log_index']}" for t in now.json()["trades"]}


def test_a_wallets_trades_are_live_and_paged_by_place(evm_live):
    market, pair = evm_live["market"], evm_live["pair"]
    chain_id = quantity(evm_live["chain_id"])
    wallet = evm_live["net"].accounts[1].lower()
    lookup = f"{evm_live['base']}/chains/{chain_id}/wallets/{wallet}/trades"
    receipt = market.swap(pair, market.quote, E18 // 100, 1)
    block, log = (int(part) for part in swap_id(receipt).split(":"))
    uid = f"{receipt['transactionHash']}:{log}:buy"
    items = until(lambda: (found := httpx.get(lookup, params={"limit": 5},
                                              headers=evm_live["key"]).json()["items"])
                  and found[0]["trade_uid"] == uid and found, 20, "the trade served")
    assert items[0]["block_number"] == block and items[0]["side"] == "buy"
    assert items[0]["pair_address"] == pair and items[0]["qty"] > 0
    everything = [t["trade_uid"] for t in httpx.get(lookup, params={"limit": 100},
                                                    headers=evm_live["key"]).json()["items"]]
    first = httpx.get(lookup, params={"limit": 2}, headers=evm_live["key"]).json()
    arrived = market.swap(pair, market.quote, E18 // 100, 1)
    until(lambda: httpx.get(lookup, params={"limit": 1}, headers=evm_live["key"]).json()[
        "items"][0]["trade_uid"].startswith(arrived["transactionHash"]), 20, "the new trade")
    # A trade arrived: the next page still goes on exactly after the first.
    second = httpx.get(lookup, params={"limit": 2, "cursor": first["next_cursor"]},
                       headers=evm_live["key"]).json()
    assert [t["trade_uid"] for t in first["items"] + second["items"]] == everything[:4]


# The freshness target of a swap committed to the lake, served (p99).
FRESH_S = 10.0


@pytest.fixture
def browser(tmp_path: Path):
    options = webdriver.ChromeOptions()
    options.binary_location = "/usr/bin/chromium"
    for flag in ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-quic",
                 "--no-first-run", "--disable-background-networking",
                 "--disable-component-update", "--disable-sync", "--window-size=1400,900",
                 f"--user-data-dir={tmp_path / 'profile'}"):
        options.add_argument(flag)
    options.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    driver = webdriver.Chrome(options=options,
                              service=webdriver.ChromeService("/usr/bin/chromedriver"))
    try:
        yield driver
    finally:
        driver.quit()


def test_the_page_shows_the_market_and_a_new_swap_within_the_freshness_target(evm_live, browser,
                                                                             tmp_path):
    browser.get(evm_live["base"].removesuffix("/api/v1") + "/")
    until(lambda: browser.find_elements(By.CSS_SELECTOR, "#chains tbody tr"), 20, "chains")
    until(lambda: browser.find_elements(By.CSS_SELECTOR, "#trades tbody tr"), 20, "trades")
    chains = [row.text for row in browser.find_elements(By.CSS_SELECTOR, "#chains tbody tr")]
    assert any(text.startswith("devnet") for text in chains), chains
    chosen = browser.find_element(By.ID, "pair-title").text
    assert chosen.startswith("PEPE/") or "PEPE" in chosen, chosen
    # The page's stream is open: mine a swap and time it to the page.
    market = evm_live["market"]
    receipt = market.swap(evm_live["pair"], market.quote, E18 // 50, 1)
    mined = time.monotonic()
    wanted = f'#trades tbody tr[data-id="{swap_id(receipt)}"]'
    until(lambda: browser.find_elements(By.CSS_SELECTOR, wanted), FRESH_S,
          "the swap on the page")
    assert time.monotonic() - mined <= FRESH_S
    browser.save_screenshot(str(tmp_path / "page.png"))
    errors = [entry for entry in browser.get_log("browser") if entry["level"] == "SEVERE"]
    assert errors == []


def test_a_real_lakes_oracle_serves_its_aggregators_answers_as_they_land(evm_live):
    """On a real chain's lake the Hermes-compatible routes list and serve the chain's own feed
    (its Chainlink aggregator, read by the follower), never the simulator's; a new answer is
    served once the follower and the tail have it."""
    import hashlib

    market, net = evm_live["market"], evm_live["net"]
    root = evm_live["base"].removesuffix("/api/v1")
    feed = hashlib.sha256(f"chainlink:31337:{market.aggregator}".encode()).hexdigest()
    listed = httpx.get(root + "/v2/price_feeds", timeout=30).json()
    assert [f["id"] for f in listed] == [feed]
    assert listed[0]["attributes"]["display_symbol"] == "WETH/USD"

    def latest() -> dict | None:
        answer = httpx.get(root + "/v2/updates/price/latest", params={"ids[]": feed},
                           timeout=30)
        return answer.json()["parsed"][0]["price"] if answer.status_code == 200 else None

    # The aggregator's first answer, 3,000 USD in 10^-8.
    assert until(latest, 30, "the first answer served")["price"] == str(3_000 * 10**8)
    net.rpc.call("evm_increaseTime", 5)
    answered = market.answer(3_210 * 10**8)
    at = quantity(net.rpc.call("eth_getBlockByNumber", answered["blockNumber"], False)[
        "timestamp"])
    served = until(lambda: (p := latest()) and p["price"] == str(3_210 * 10**8) and p, 30,
                   "the new answer served")
    assert (served["expo"], served["publish_time"]) == (-8, at)
    status = httpx.get(root + "/v1/status", timeout=30).json()
    assert status["upstream"]["kind"] == "lake"

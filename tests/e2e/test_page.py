"""The page at `/` in a real headless Chromium (Debian's): it loads with no console errors,
shows the chains and the trending pairs, and a swap mined after the snapshot reaches the chosen
pair's trades on the page, through the lake, the live tail and the stream."""

import time
from pathlib import Path

import pytest
from selenium import webdriver
from selenium.webdriver.common.by import By

from tests.e2e.conftest import E18, swap_id

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


def _wait(predicate, timeout: float, what: str):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        found = predicate()
        if found:
            return found
        time.sleep(0.05)
    raise TimeoutError(what)


def test_the_page_shows_the_market_and_a_new_swap_within_the_freshness_target(evm_live, browser,
                                                                             tmp_path):
    browser.get(evm_live["base"].removesuffix("/api/v1") + "/")
    _wait(lambda: browser.find_elements(By.CSS_SELECTOR, "#chains tbody tr"), 20, "chains")
    _wait(lambda: browser.find_elements(By.CSS_SELECTOR, "#trades tbody tr"), 20, "trades")
    chains = [row.text for row in browser.find_elements(By.CSS_SELECTOR, "#chains tbody tr")]
    assert any(text.startswith("devnet") for text in chains), chains
    chosen = browser.find_element(By.ID, "pair-title").text
    assert chosen.startswith("PEPE/") or "PEPE" in chosen, chosen
    # The page's stream is open: mine a swap and time it to the page.
    market = evm_live["market"]
    receipt = market.swap(evm_live["pair"], market.quote, E18 // 50, 1)
    mined = time.monotonic()
    wanted = f'#trades tbody tr[data-id="{swap_id(receipt)}"]'
    _wait(lambda: browser.find_elements(By.CSS_SELECTOR, wanted), FRESH_S,
          "the swap on the page")
    assert time.monotonic() - mined <= FRESH_S
    browser.save_screenshot(str(tmp_path / "page.png"))
    errors = [entry for entry in browser.get_log("browser") if entry["level"] == "SEVERE"]
    assert errors == []

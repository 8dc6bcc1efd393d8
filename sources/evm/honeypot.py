"""The honeypot test (docs/market.md, "Honeypot test"): a small buy and sell of a token
simulated on the node, as public honeypot checkers do: one `eth_call` creating the probe
(`contracts/HoneypotProbe.sol`, shipped compiled beside it) from an account the call's state
override funds, through the token's deepest constant-product pool against the wrapped native
token. Nothing is sent to the chain."""

import functools
from dataclasses import dataclass
from datetime import timedelta
from pathlib import Path
from typing import Any

from eth_abi import encode

from sources.evm.families import decoded, topic

# The probe's creation code, as `compiled()` makes it from its source (a test holds them equal).
PROBE_CODE = Path(__file__).resolve().parent / "contracts" / "HoneypotProbe.bin"
# An ERC-1967 proxy's new implementation: the token's code changed.
UPGRADED = topic("Upgraded(address)")
# The account the probe's call comes from, and what the call's state override gives it.
PROBER = "0x00000000000000000000000000000000c0ffee00"
FUNDS = 10**30
# A token is tested again when this much chain time passed since its last test and it traded,
# or at once when its owner or its code changes.
RETEST = timedelta(hours=6)
# A sell that loses this share or more of what was sold fails the test, as a blocked one does.
FAILING_SELL_TAX = 0.9
# The probe's failed steps, by the number it returns.
STEPS = {1: "buy", 2: "sell transfer", 3: "sell swap"}


@dataclass(frozen=True)
class Probe:
    """What a test found: `result` `pass` or `fail`, the taxes the simulated buy and sell paid
    (null past a failed step) and the step that failed."""

    token: str
    pair: str
    result: str
    buy_tax: float | None
    sell_tax: float | None
    failed_step: str | None


@functools.cache
def probe_code() -> str:
    """The probe's creation code (hex), read once."""
    return PROBE_CODE.read_text().strip()


def call(pair: str, token: str, wrapped: str, fee_bps: int, block: int) -> tuple[str, list[Any]]:
    """The `eth_call` that tests `token` through `pair` at `block`."""
    data = "0x" + probe_code() + encode(["address", "address", "address", "uint256"],
                                [pair, token, wrapped, fee_bps]).hex()
    return ("eth_call", [{"from": PROBER, "data": data, "value": hex(FUNDS // 2),
                          "gas": hex(3_000_000)}, hex(block),
                         {PROBER: {"balance": hex(FUNDS)}}])


def outcome(token: str, pair: str, answer: object) -> Probe | None:
    """The test's finding from the call's answer; None when the probe could not run (the call
    failed as a whole: no state override on the node, a pool that is not constant-product)."""
    if not isinstance(answer, str) or len(answer) < 2 + 5 * 64:
        return None
    owed, got, arrived, back, step = decoded(["uint256"] * 5, answer)
    buy = 1 - got / owed if owed and step != 1 else None
    sell = 1 - arrived / got if got and step not in (1, 2) else None
    failed = step != 0 or not back or (sell is not None and sell >= FAILING_SELL_TAX)
    return Probe(token, pair, "fail" if failed else "pass",
                 None if buy is None else round(buy, 9), None if sell is None else round(sell, 9),
                 STEPS.get(step))

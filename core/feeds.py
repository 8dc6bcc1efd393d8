"""The oracle's feed catalog: the symbols the price process moves and their stable ids, shared
by the simulator that writes the lake and the edge's simulated upstream."""

import hashlib
from dataclasses import dataclass


def feed_id(namespace: str, symbol: str) -> str:
    """A 32-byte hex feed id, stable for a namespace and symbol."""
    return hashlib.sha256(f"{namespace}:{symbol}".encode()).hexdigest()


ORACLE_NAMESPACE = "chaintape"
COMPATIBLE_NAMESPACE = "hermes"


@dataclass(frozen=True)
class FeedSpec:
    """An oracle feed of the simulated price process."""

    symbol: str
    asset_type: str
    price: float
    annual_vol: float
    expo: int = -8
    compatible: bool = True
    schedule: str = "America/New_York;O,O,O,O,O,O,O;"

    @property
    def base(self) -> str:
        return self.symbol.split("/")[0].split(".")[-1]

    @property
    def feed_id(self) -> str:
        return feed_id(ORACLE_NAMESPACE, self.symbol)

    @property
    def compatible_id(self) -> str | None:
        return feed_id(COMPATIBLE_NAMESPACE, self.symbol) if self.compatible else None


EQUITY_HOURS = "America/New_York;0930-1600,0930-1600,0930-1600,0930-1600,0930-1600,C,C;"

FEEDS = [
    FeedSpec("Crypto.BTC/USD", "Crypto", 95_000.0, 0.5),
    FeedSpec("Crypto.ETH/USD", "Crypto", 3_200.0, 0.65),
    FeedSpec("Crypto.SOL/USD", "Crypto", 180.0, 0.8),
    FeedSpec("Crypto.HYPE/USD", "Crypto", 30.0, 1.0, compatible=False),
    FeedSpec("Crypto.TRX/USD", "Crypto", 0.25, 0.5),
    FeedSpec("Crypto.SUI/USD", "Crypto", 3.5, 0.9),
    FeedSpec("Crypto.BNB/USD", "Crypto", 650.0, 0.5),
    FeedSpec("Crypto.ARB/USD", "Crypto", 0.6, 0.9),
    FeedSpec("Crypto.USDC/USD", "Crypto", 1.0, 0.004),
    FeedSpec("Crypto.USDT/USD", "Crypto", 1.0, 0.004),
    FeedSpec("FX.EUR/USD", "FX", 1.08, 0.07, expo=-5),
    FeedSpec("Equity.US.AAPL/USD", "Equity", 230.0, 0.25, expo=-5, schedule=EQUITY_HOURS),
]
FEED_BY_BASE = {f.base: f for f in FEEDS}

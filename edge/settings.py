"""The edge's configuration, read once from the environment (every value has a default)."""

import os
from dataclasses import dataclass, field
from pathlib import Path

from core.home import home as default_home
from edge.clients import Network, trusted_networks
from edge.payments import Offer


def offer_from_env() -> Offer:
    """The x402 offer: CHAINTAPE_X402_* variables over the defaults."""
    env = os.environ.get
    base = Offer()
    return Offer(network=env("CHAINTAPE_X402_NETWORK", base.network),
                 asset=env("CHAINTAPE_X402_ASSET", base.asset),
                 asset_name=env("CHAINTAPE_X402_ASSET_NAME", base.asset_name),
                 asset_version=env("CHAINTAPE_X402_ASSET_VERSION", base.asset_version),
                 pay_to=env("CHAINTAPE_X402_PAY_TO", base.pay_to),
                 atomic_per_cu=int(env("CHAINTAPE_X402_ATOMIC_PER_CU", str(base.atomic_per_cu))),
                 facilitator_url=env("CHAINTAPE_X402_FACILITATOR") or None)


@dataclass(frozen=True)
class Settings:
    """Where state lives, which upstreams to use and how long to wait for them."""

    home: Path = field(default_factory=default_home)
    poll_s: float = 2.0
    # The live tail changes about every second: it is read more often than LATEST.
    live_poll_s: float = 0.2
    upstream_timeout_s: float = 5.0
    redis_url: str | None = None
    trusted_proxies: tuple[Network, ...] = ()
    offer: Offer = field(default_factory=Offer)
    oracle_upstream: str | None = None
    # Data older than this is stale: the market products' cadence is a minute, and a refresh
    # (sensor poll, materialise, publish) takes up to another.
    stale_after_s: float = 120.0

    @classmethod
    def from_env(cls) -> "Settings":
        """CHAINTAPE_* variables over the defaults."""
        env = os.environ.get
        return cls(home=default_home(), poll_s=float(env("CHAINTAPE_POLL_SECONDS", "2")),
                   live_poll_s=float(env("CHAINTAPE_LIVE_POLL_SECONDS", "0.2")),
                   upstream_timeout_s=float(env("CHAINTAPE_UPSTREAM_TIMEOUT_SECONDS", "5")),
                   redis_url=env("CHAINTAPE_REDIS_URL") or None,
                   trusted_proxies=trusted_networks(env("CHAINTAPE_TRUSTED_PROXIES")),
                   offer=offer_from_env(),
                   oracle_upstream=env("CHAINTAPE_ORACLE_UPSTREAM") or None,
                   stale_after_s=float(env("CHAINTAPE_STALE_AFTER_SECONDS", "120")))

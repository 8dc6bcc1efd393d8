"""The edge's configuration, read once from the environment (every value has a default)."""

import os
from dataclasses import dataclass, field
from pathlib import Path

from core.home import home as default_home
from core.settings import whole_number
from edge.billing.payments import Offer
from edge.clients import Network, trusted_networks
from publish.reader import HELD_BLOCKS_BYTES


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
    # A market stream ends after this long (clients reconnect with Last-Event-ID), as Hermes
    # ends its streams after a day; a client holds at most this many streams at once.
    stream_max_s: float = 86_400.0
    streams_per_client: int = 8
    # An idle stream sends a comment this often, so that proxies keep it open.
    stream_heartbeat_s: float = 15.0
    upstream_timeout_s: float = 5.0
    redis_url: str | None = None
    trusted_proxies: tuple[Network, ...] = ()
    offer: Offer = field(default_factory=Offer)
    oracle_upstream: str | None = None
    # Data older than this is stale: the market products' cadence is a minute, and a refresh
    # (sensor poll, materialise, publish) takes up to another.
    stale_after_s: float = 120.0
    # The most a worker keeps on disk of the parts it reads by key (fetched when first read).
    blocks_mb: int = HELD_BLOCKS_BYTES >> 20

    @classmethod
    def from_env(cls) -> "Settings":
        """CHAINTAPE_* variables over the defaults."""
        env = os.environ.get
        return cls(home=default_home(), poll_s=float(env("CHAINTAPE_POLL_SECONDS", "2")),
                   live_poll_s=float(env("CHAINTAPE_LIVE_POLL_SECONDS", "0.2")),
                   stream_max_s=float(env("CHAINTAPE_STREAM_MAX_SECONDS", "86400")),
                   streams_per_client=int(env("CHAINTAPE_STREAMS_PER_CLIENT", "8")),
                   stream_heartbeat_s=float(env("CHAINTAPE_STREAM_HEARTBEAT_SECONDS", "15")),
                   upstream_timeout_s=float(env("CHAINTAPE_UPSTREAM_TIMEOUT_SECONDS", "5")),
                   redis_url=env("CHAINTAPE_REDIS_URL") or None,
                   trusted_proxies=trusted_networks(env("CHAINTAPE_TRUSTED_PROXIES")),
                   offer=offer_from_env(),
                   oracle_upstream=env("CHAINTAPE_ORACLE_UPSTREAM") or None,
                   stale_after_s=float(env("CHAINTAPE_STALE_AFTER_SECONDS", "120")),
                   blocks_mb=whole_number("CHAINTAPE_EDGE_BLOCKS_MB", HELD_BLOCKS_BYTES >> 20, "MB"))


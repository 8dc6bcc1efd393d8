"""Token buckets per client, in process or shared through Redis, and the rate-limit headers."""

import logging
import math
import time
from collections.abc import Callable
from dataclasses import dataclass

import redis
import redis.asyncio

from edge.billing.plans import Plan

log = logging.getLogger("chaintape.edge")

TAKE = """
local capacity = tonumber(ARGV[1])
local rate = tonumber(ARGV[2])
local cost = tonumber(ARGV[3])
local clock = redis.call('TIME')
local now = tonumber(clock[1]) + tonumber(clock[2]) / 1000000
local state = redis.call('HMGET', KEYS[1], 'tokens', 'ts')
local tokens = tonumber(state[1]) or capacity
local ts = tonumber(state[2]) or now
tokens = math.min(capacity, tokens + math.max(0, now - ts) * rate)
local allowed = 0
if tokens >= cost then
  tokens = tokens - cost
  allowed = 1
end
redis.call('HSET', KEYS[1], 'tokens', tostring(tokens), 'ts', tostring(now))
redis.call('PEXPIRE', KEYS[1], math.ceil(capacity / rate * 1000) + 1000)
return {allowed, tostring(tokens)}
"""


@dataclass(slots=True)
class Verdict:
    """The outcome of spending `cost` units: allowed or not, and what is left."""

    allowed: bool
    tokens: float
    plan: Plan
    cost: int

    @property
    def remaining(self) -> int:
        """Whole units left."""
        return math.floor(self.tokens)

    @property
    def retry_after(self) -> int:
        """Seconds until the call could be afforded (at least 1)."""
        return max(1, math.ceil((self.cost - self.tokens) * 60 / self.plan.calls_per_minute))

    @property
    def reset(self) -> int:
        """Seconds until the bucket is full again."""
        return math.ceil((self.plan.burst - self.tokens) * 60 / self.plan.calls_per_minute)

    def headers(self) -> list[tuple[str, str]]:
        """RateLimit-Policy, RateLimit, X-RateLimit-Limit and X-RateLimit-Remaining."""
        plan = self.plan
        remaining = str(self.remaining)
        return [("ratelimit-policy", plan.policy),
                ("ratelimit", f'"{plan.name}";r={remaining};t={self.reset}'),
                ("x-ratelimit-limit", str(plan.calls_per_minute)),
                ("x-ratelimit-remaining", remaining)]


class LocalMeter:
    """Buckets held in this process: the embedded default."""

    backend = "in-process"

    def __init__(self, clock: Callable[[], float] = time.monotonic) -> None:
        self.clock = clock
        # Only the event loop's thread spends, so the buckets need no lock.
        self.buckets: dict[str, tuple[float, float]] = {}

    async def take(self, client: str, plan: Plan, cost: int) -> Verdict:
        """Spend `cost` units of `client`'s bucket if it holds them."""
        return self.take_now(client, plan, cost)

    def take_now(self, client: str, plan: Plan, cost: int) -> Verdict:
        """The same, synchronously."""
        name = plan.name + ":" + client
        now = self.clock()
        found = self.buckets.get(name)
        tokens = plan.burst if found is None else min(
            plan.burst, found[0] + (now - found[1]) * plan.calls_per_minute / 60)
        allowed = tokens >= cost
        if allowed:
            tokens -= cost
        self.buckets[name] = (tokens, now)
        return Verdict(allowed, tokens, plan, cost)

    def healthy(self) -> bool:
        """Always: nothing outside the process."""
        return True


class RedisMeter:
    """Buckets in Redis, so that every edge instance spends one shared budget.

    When Redis cannot be reached the edge falls back to its own buckets rather than stop serving.
    """

    backend = "redis"

    def __init__(self, url: str, prefix: str = "chaintape:meter:") -> None:
        self.client = redis.asyncio.Redis.from_url(url, socket_timeout=0.5, socket_connect_timeout=0.5)
        self.script = self.client.register_script(TAKE)
        self.prefix = prefix
        self.fallback = LocalMeter()
        self.ok = True

    async def take(self, client: str, plan: Plan, cost: int) -> Verdict:
        """Spend `cost` units atomically in Redis (Redis's clock, so instances agree)."""
        try:
            allowed, tokens = await self.script(keys=[f"{self.prefix}{plan.name}:{client}"],
                                          args=[plan.burst, plan.calls_per_minute / 60, cost])
        except (redis.RedisError, OSError) as err:
            if self.ok:
                log.warning("metering falls back to this instance: %s", err)
            self.ok = False
            return self.fallback.take_now(client, plan, cost)
        self.ok = True
        return Verdict(bool(allowed), float(tokens), plan, cost)

    def healthy(self) -> bool:
        """Whether the last call reached Redis."""
        return self.ok


def open_meter(redis_url: str | None) -> "LocalMeter | RedisMeter":
    """Redis buckets when a URL is configured, else in-process ones."""
    return RedisMeter(redis_url) if redis_url else LocalMeter()

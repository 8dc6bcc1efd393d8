"""Plans: the keyless tier and the keyed plans, with their budgets, page ceilings and coverage."""

import functools
from dataclasses import dataclass
from typing import Any

UNIT_CU = 10
BASE_CEILING = 50


@dataclass(frozen=True)
class Plan:
    """A budget (calls of 10 CU per minute, burst), the page ceilings, and what it covers."""

    name: str
    calls_per_minute: int
    burst: int
    raises_ceiling: bool = False
    domains: frozenset[str] | None = None

    @functools.cached_property
    def policy(self) -> str:
        """The RateLimit-Policy header's value."""
        return f'"{self.name}";q={self.calls_per_minute};w=60;burst={self.burst}'

    def covers(self, domain: str) -> bool:
        """Whether calls to an operation of `domain` may use this plan."""
        return self.domains is None or domain in self.domains or domain == "platform"

    def ceiling(self, declared_max: int) -> int:
        """The largest page this plan may ask for where `limit` is declared up to
        `declared_max`: all of it on plans that raise the ceiling, else at most 50 rows."""
        return declared_max if self.raises_ceiling else min(declared_max, BASE_CEILING)

    def describe(self) -> dict[str, Any]:
        """The plan as GET /key reports it."""
        return {"plan": self.name, "calls_per_minute": self.calls_per_minute, "burst": self.burst,
                "unit_cu": UNIT_CU, "window_seconds": 60, "max_page_size": self.ceiling(100),
                "max_leaderboard_page_size": self.ceiling(200),
                "covers": "all" if self.domains is None else sorted(self.domains | {"platform"})}


KEYLESS = Plan("keyless", 300, 20)
PLANS = {plan.name: plan for plan in (
    Plan("starter", 600, 40),
    Plan("pro", 3000, 200, raises_ceiling=True),
    Plan("internal", 6_000_000, 100_000, raises_ceiling=True),
    Plan("oracle", 6000, 400, raises_ceiling=True, domains=frozenset({"prices", "oracle"})),
)}


def units(cost_cu: int) -> int:
    """Budget units a call spends: its cost in tens of CU, never less than one."""
    return max(1, -(-cost_cu // UNIT_CU))

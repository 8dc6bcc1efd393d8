"""Plans: the keyless tier and the keyed plans, with their budgets, page ceilings and coverage."""

from dataclasses import dataclass

UNIT_CU = 10


@dataclass(frozen=True)
class Plan:
    """A budget (calls of 10 CU per minute, burst), the page ceilings, and what it covers."""

    name: str
    calls_per_minute: int
    burst: int
    max_limit: int
    max_board_limit: int
    domains: frozenset[str] | None = None

    @property
    def capacity_cu(self) -> int:
        """The bucket's size in CU."""
        return self.burst * UNIT_CU

    @property
    def refill_cu_per_s(self) -> float:
        """CU the bucket regains per second."""
        return self.calls_per_minute * UNIT_CU / 60

    def covers(self, domain: str) -> bool:
        """Whether calls to an operation of `domain` may use this plan."""
        return self.domains is None or domain in self.domains or domain == "platform"

    def ceiling(self, path: str) -> int:
        """The largest page this plan may ask for on `path`."""
        return self.max_board_limit if path == "/leaderboard" else self.max_limit

    def describe(self) -> dict:
        """The plan as GET /key reports it."""
        return {"plan": self.name, "calls_per_minute": self.calls_per_minute, "burst": self.burst,
                "unit_cu": UNIT_CU, "window_seconds": 60, "max_page_size": self.max_limit,
                "max_leaderboard_page_size": self.max_board_limit,
                "covers": "all" if self.domains is None else sorted(self.domains | {"platform"})}


KEYLESS = Plan("keyless", 300, 20, 50, 50)
PLANS = {plan.name: plan for plan in (
    Plan("starter", 600, 40, 50, 50),
    Plan("pro", 3000, 200, 100, 200),
    Plan("internal", 6_000_000, 100_000, 100, 200),
    Plan("oracle", 6000, 400, 100, 100, frozenset({"prices", "oracle"})),
)}


def units(cost_cu: int) -> int:
    """Budget units a call spends: its cost in tens of CU, never less than one."""
    return max(1, -(-cost_cu // UNIT_CU))

"""Column buffers for one chain's events, later given blocks, log indexes and tx hashes."""

from collections import defaultdict


class EventColumns:
    """Appends events as rows of plain columns; `t` is unix seconds, `tx` a transaction number."""

    def __init__(self) -> None:
        self.columns: dict[str, dict[str, list]] = defaultdict(lambda: defaultdict(list))
        self.next_tx = 0

    def tx(self) -> int:
        """A new transaction number."""
        self.next_tx += 1
        return self.next_tx

    def add(self, table: str, t: float, tx: int, sub: int, **fields) -> None:
        """One event of `table` at time `t`, position `sub` inside transaction `tx`."""
        cols = self.columns[table]
        cols["t"].append(t)
        cols["tx"].append(tx)
        cols["sub"].append(sub)
        for name, value in fields.items():
            cols[name].append(value)

    def count(self, table: str) -> int:
        """How many events of `table` were added."""
        return len(self.columns[table]["t"]) if table in self.columns else 0

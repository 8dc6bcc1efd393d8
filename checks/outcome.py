"""Running a pandera model over a product: the outcome and a sample of failing rows."""

from dataclasses import dataclass

import pandera.polars as pa
import polars as pl

SAMPLE_ROWS = 20


@dataclass(frozen=True)
class Outcome:
    """Whether a product passed, and what failed (a sample of pandera's failure cases)."""

    product: str
    passed: bool
    failures: pl.DataFrame
    failure_count: int

    def summary(self) -> str:
        """One line for logs and errors."""
        if self.passed:
            return f"{self.product}: passed"
        checks = ", ".join(sorted(set(self.failures["check"].cast(pl.String).to_list())))
        return f"{self.product}: {self.failure_count} failure(s) in {checks}"


def validate(product: str, model: type[pa.DataFrameModel], frame: pl.DataFrame) -> Outcome:
    """Validate every rule at once (lazy) and keep a sample of failing cases."""
    try:
        model.validate(frame, lazy=True)
    except pa.errors.SchemaErrors as err:
        cases = err.failure_cases
        return Outcome(product, False, cases.head(SAMPLE_ROWS), cases.height)
    return Outcome(product, True, pl.DataFrame(), 0)


def combined(product: str, outcomes: list[Outcome]) -> Outcome:
    """One outcome of a product checked in pieces that no rule spans (a chain at a time)."""
    failing = [o for o in outcomes if not o.passed]
    if not failing:
        return Outcome(product, True, pl.DataFrame(), 0)
    cases = pl.concat([o.failures for o in failing], how="diagonal_relaxed")
    return Outcome(product, False, cases.head(SAMPLE_ROWS), sum(o.failure_count for o in failing))


def failed(product: str, check: str, rows: pl.DataFrame) -> Outcome:
    """An outcome from a rule checked outside pandera (`rows` are the offending rows)."""
    if rows.is_empty():
        return Outcome(product, True, pl.DataFrame(), 0)
    cases = pl.DataFrame({"check": [check] * min(rows.height, SAMPLE_ROWS),
                          "failure_case": [str(r) for r in rows.head(SAMPLE_ROWS).iter_rows()]})
    return Outcome(product, False, cases, rows.height)

"""A step's progress through long work, as log records of a level of their own: the terminal's
step lines show them beside the steps' outcomes, the Dagster UI shows them in the run's log."""

import dagster as dg

# Between INFO and WARNING: shown on the terminal where INFO (a publish's every table) is not.
PROGRESS = 25


def progress(message: str) -> None:
    """Tell the running step's log how far its long work has come."""
    dg.AssetExecutionContext.get().log.log(PROGRESS, message)

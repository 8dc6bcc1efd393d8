"""Settings read from the environment, each validated where it is read: a bad value is a
clear error naming its variable, never a default taken in silence."""

import os


def whole_number(name: str, default: int, unit: str) -> int:
    """A count of `unit` from the variable `name` (`default` when it is not set): a whole
    number, at least 1."""
    said = os.environ.get(name)
    if said is None:
        return default
    if not said.isdigit() or int(said) < 1:
        raise ValueError(f"{name}={said!r}: expected a whole number of {unit}, at least 1")
    return int(said)

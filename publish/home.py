"""Where chaintape keeps its files by default: the lake, warehouse, store and keys live under it."""

import os
from pathlib import Path


def home() -> Path:
    """$CHAINTAPE_HOME, else ./var."""
    return Path(os.environ.get("CHAINTAPE_HOME", "var"))

"""Resources from the environment; with nothing set, everything lives under ./var/."""

from pathlib import Path

from assets.snapshot.assets import Store
from assets.warehouse import Warehouse
from assets.warehouse import default_root as warehouse_root
from publish.store import default_url
from sources.lake import Lake


def resources() -> dict:
    """The resources every asset and check may ask for."""
    return {
        "warehouse": Warehouse(lake_root=Lake().root,
                               root=str(Path(warehouse_root()).absolute())),
        "store": Store(url=_absolute(default_url())),
    }


def _absolute(url: str) -> str:
    return url if "://" in url else str(Path(url).absolute())

"""What a publish wrote: read off the snapshots' manifests in a local store."""

import json
from pathlib import Path
from typing import Any

from publish.reader import OBJECTS
from publish.writer import PAGES


def _manifests(store: Path) -> list[dict[str, Any]]:
    paths = sorted((store / "snapshots").glob("*/manifest.json"))
    return [json.loads(path.read_bytes()) for path in paths[-2:]]


def written(store: Path) -> tuple[int, int]:
    """Bytes the newest snapshot wrote (its objects but the parts it shares with the snapshot
    before it), and the bytes it is made of."""
    *before, newest = _manifests(store)
    shared = before[0]["objects"] if before else {}
    total = sum(meta["bytes"] for meta in newest["objects"].values())
    kept = sum(meta["bytes"] for key, meta in newest["objects"].items()
               if key.startswith(OBJECTS) and key in shared)
    return total - kept, total


def written_by_product(store: Path) -> dict[str, Any]:
    """What the newest snapshot wrote: by serving table, the bytes of its parts the snapshot
    before did not hold; of its list pages, how many it names, how many (and bytes) it wrote,
    and how many it shares with the snapshot before (pages whose items did not change)."""
    *before, newest = _manifests(store)
    shared = before[0]["objects"] if before else {}
    objects = newest["objects"]
    tables = {name: sum(objects[part["object"]]["bytes"] for part in table["parts"]
                        if part["object"] not in shared)
              for name, table in {**newest["lists"], **newest["tables"]}.items()
              if "parts" in table}
    pages = [key for key in objects if key.startswith(PAGES)]
    fresh = [key for key in pages if key not in shared]
    return {"tables": {name: size for name, size in sorted(tables.items()) if size},
            "list_pages": len(pages), "pages_written": len(fresh),
            "page_bytes_written": sum(objects[key]["bytes"] for key in fresh),
            "pages_shared": len(pages) - len(fresh)}

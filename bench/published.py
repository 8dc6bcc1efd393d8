"""What a publish wrote: read off the snapshots' manifests in a local store."""

import json
from pathlib import Path
from typing import Any

import orjson

from publish.snapshot import OBJECTS


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
    """What the newest snapshot wrote, by serving table (bytes of its parts the snapshot before
    did not hold) and for its list pages together, with how many of those pages hold the same
    items as the same page of the snapshot before (`pages_unchanged`): pages a format sharing
    pages by their items would not write again."""
    *before, newest = _manifests(store)
    shared = before[0]["objects"] if before else {}
    objects = newest["objects"]
    tables = {name: sum(objects[part["object"]]["bytes"] for part in table["parts"]
                        if part["object"] not in shared)
              for name, table in newest["tables"].items()}
    pages = [key for key in objects if key.startswith("lists/")]
    root = store / "snapshots"
    unchanged = [key for key in pages if before and key in shared and _items(
        root / newest["snapshot_id"] / key) == _items(root / before[0]["snapshot_id"] / key)]
    return {"tables": {name: size for name, size in sorted(tables.items()) if size},
            "list_pages": len(pages),
            "list_page_bytes": sum(objects[key]["bytes"] for key in pages),
            "pages_unchanged": len(unchanged),
            "pages_unchanged_bytes": sum(objects[key]["bytes"] for key in unchanged)}


def _items(path: Path) -> bytes:
    return orjson.dumps(orjson.loads(path.read_bytes())["items"])

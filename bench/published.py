"""What a publish wrote: read off the snapshots' manifests in a local store."""

import json
from pathlib import Path

from publish.snapshot import OBJECTS


def written(store: Path) -> tuple[int, int]:
    """Bytes the newest snapshot wrote (its objects but the parts it shares with the snapshot
    before it), and the bytes it is made of."""
    manifests = sorted((store / "snapshots").glob("*/manifest.json"))
    newest = json.loads(manifests[-1].read_bytes())["objects"]
    before = json.loads(manifests[-2].read_bytes())["objects"] if len(manifests) > 1 else {}
    total = sum(meta["bytes"] for meta in newest.values())
    shared = sum(meta["bytes"] for key, meta in newest.items()
                 if key.startswith(OBJECTS) and key in before)
    return total - shared, total

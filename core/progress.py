"""The lake's progress mark, readable without the lake's table machinery: where the lake is,
and the last complete batch its writers marked (`_progress.json` beside its tables)."""

import json
import os
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from core.home import home
from core.store import NotFound, ObjectStore

# The lake's record of its last complete batch: a writer commits a batch's tables one by one,
# then replaces this object, naming the version each table reached, so a reader pins a state in
# which every table holds the same batches.
PROGRESS = "_progress.json"


# The writer name a chain follower marks its batches with (the simulator's are its own).
FOLLOWER = "evm"


def default_root() -> str:
    """The lake: $CHAINTAPE_LAKE (a directory or s3://bucket/prefix), else $CHAINTAPE_HOME/lake."""
    return os.environ.get("CHAINTAPE_LAKE") or str(home() / "lake")


@dataclass(frozen=True)
class Progress:
    """The last complete batch a writer committed: its watermark and every table's version."""

    watermark: datetime
    writer: str
    step: int
    versions: dict[str, int]
    meta: dict[str, Any]

    def nodes(self) -> dict[int, dict[str, str]]:
        """How each chain followed from a node answers, by chain id: `answering`, or, as its
        follower recorded it beside its cursor, `unreachable` with the last error and since
        when (none for a lake no follower writes)."""
        # A follower's mark keeps a cursor per chain there; the simulator's, its chain count.
        chains = self.meta.get("chains")
        if not isinstance(chains, dict):
            return {}
        return {int(c): dict(own.get("node") or {"state": "answering"})
                for c, own in chains.items()}


def read_progress(objects: ObjectStore) -> Progress | None:
    """The last complete batch marked in a lake's objects, or None when none was."""
    try:
        body = objects.get(PROGRESS).body
    except NotFound:
        return None
    fields = json.loads(body)
    return Progress(datetime.fromisoformat(fields["watermark"]), fields["writer"],
                    int(fields["step"]), fields["versions"], fields["meta"])

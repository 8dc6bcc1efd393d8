"""A token's row live (spec 2.2): the row the tail's writer made at the tail's watermark with
the batch's own `token_market` (tail/rows.py), and a registry token's instances
as the snapshot's token basis lists them."""

from collections import defaultdict
from typing import Any

import polars as pl

from edge.live.tail import LiveView
from edge.memo import per_snapshot
from publish.reader import Snapshot

TokenKey = tuple[int, str]


@per_snapshot(kept=4, ahead=True)
def registry_instances(snapshot: Snapshot) -> dict[str, list[TokenKey]]:
    """Each registry token's instances, as the snapshot's token basis lists them (none for a
    snapshot without it)."""
    basis = snapshot.tables.get("token_basis")
    if basis is None:
        return {}
    instances: dict[str, list[TokenKey]] = defaultdict(list)
    for token_id, chain_id, address in (basis.filter(pl.col("token_id").is_not_null())
                                        .sort("chain_id", "address")
                                        .select("token_id", "chain_id", "address").iter_rows()):
        instances[token_id].append((chain_id, address))
    return dict(instances)


def instances_of(snapshot: Snapshot, token_id: str) -> list[TokenKey]:
    """A registry token's instances the snapshot's basis lists."""
    return registry_instances(snapshot).get(token_id, [])


def live_token_rows(view: LiveView | None,
                    keys: list[TokenKey]) -> dict[TokenKey, dict[str, Any]]:
    """The tokens' live rows (`item`, `market`, `instances`, as of the tail's watermark); a
    token is left out when the tail carries no row of it (its row is the snapshot's)."""
    if view is None:
        return {}
    return {key: row for key in keys if (row := view.tokens.row(key)) is not None}

"""The edge's interpreter favours its requests: loading threads give it up every 0.5 ms, and
what a snapshot derives is kept out of the collector's scans."""

import asyncio
import gc
import sys

from core.store import LocalStore
from edge.app import create_app
from edge.live.tail import pair_rows
from edge.services import SWITCH_INTERVAL_S
from tests.edge.conftest import publish_chains


def test_a_snapshot_prepared_is_frozen_and_loading_threads_switch_often(home) -> None:
    before = sys.getswitchinterval()
    gc.unfreeze()
    app = create_app(LocalStore(home / "store"))

    async def started_then_republished() -> tuple[float, int, int, bool]:
        await app.services.start()
        try:
            first = gc.get_freeze_count()
            publish_chains(home, count=3)
            assert await asyncio.to_thread(app.services.holder.refresh)
            derived = pair_rows(app.services.holder.current)
            # A frozen object is in no generation the collector scans.
            scanned = any(o is derived for o in gc.get_objects())
            return sys.getswitchinterval(), first, gc.get_freeze_count(), scanned
        finally:
            await app.services.stop()

    try:
        interval, first, second, scanned = asyncio.run(started_then_republished())
    finally:
        sys.setswitchinterval(before)
        gc.unfreeze()
    assert interval == SWITCH_INTERVAL_S
    assert first > 0
    # The second snapshot's derivations are frozen too (its pair rows' lookup).
    assert second > first
    assert not scanned

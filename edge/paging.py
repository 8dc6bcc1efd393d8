"""Cursor paging over a snapshot's serving table, pinned to the snapshot that issued it."""

import polars as pl

from edge.http import Response
from edge.memo import Kept
from edge.problems import ApiError
from edge.snapshots import SnapshotHolder, snapshot_headers
from publish.cursor import Cursor, CursorError, CursorSigner
from publish.snapshot import Snapshot, page_body

# Pages are immutable within a snapshot, so a rendered page is kept for the next caller.
_rendered = Kept(2048)


async def page(holder: SnapshotHolder, signer: CursorSigner, list_name: str, limit: int,
               cursor: str | None, snapshot: Snapshot) -> Response:
    """One page of `list_name`: from the start, or where `cursor` says, in its own snapshot."""
    offset = 0
    if cursor is not None:
        try:
            decoded = signer.decode(cursor)
        except CursorError as err:
            raise ApiError("invalid_param", str(err), "cursor") from None
        if decoded.list_name != list_name:
            raise ApiError("invalid_param", "cursor belongs to another list", "cursor")
        pinned = await holder.pinned(decoded.snapshot_id)
        if pinned is None:
            raise ApiError("invalid_param", "cursor has expired; start from the first page",
                           "cursor")
        snapshot, offset = pinned, decoded.offset
    key = (snapshot.snapshot_id, list_name, offset, limit)
    body = _rendered.get(key)
    if body is None:
        body = _rendered.keep(key, _render(snapshot, signer, list_name, offset, limit))
    return Response(body, headers=snapshot_headers(snapshot))


def _render(snapshot: Snapshot, signer: CursorSigner, list_name: str, offset: int,
            limit: int) -> bytes:
    table: pl.DataFrame = snapshot.tables[list_name]
    items = table["item"].slice(offset, limit).to_list()
    sid = snapshot.snapshot_id
    after = offset + limit
    next_cursor = signer.encode(Cursor(sid, list_name, after)) if after < table.height else None
    prev_cursor = (signer.encode(Cursor(sid, list_name, max(0, offset - limit)))
                   if offset > 0 else None)
    return page_body(items, next_cursor, prev_cursor)

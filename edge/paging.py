"""Cursor paging over an ordering of a snapshot's rows, pinned to the snapshot that issued it."""

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import polars as pl

from core.caches import ByteCache
from edge.snapshots import snapshot_headers, table
from edge.web.http import Request, Response
from edge.web.problems import ApiError
from publish.cursor import Cursor, CursorError
from publish.reader import Snapshot
from publish.writer import page_body

# Orderings and pages are immutable within a snapshot, so they are kept for the next caller;
# both by their bytes, since a new snapshot a minute makes new ones of every list asked for.
_orderings: ByteCache[pl.DataFrame] = ByteCache(64 << 20)
_rendered: ByteCache[bytes] = ByteCache(32 << 20)
# The row numbers an order of a serving table's rows is kept as (`numbered`, `gather_rows`).
ROW = "_row"


@dataclass(frozen=True)
class Listing:
    """A list the edge pages: its name, the query it answers (`scope`), how to order a
    snapshot's rows for it, how to render a slice, and what every page adds."""

    name: str
    order: Callable[[Snapshot], pl.DataFrame]
    scope: str = ""
    render: Callable[[pl.DataFrame], list[str]] = lambda rows: rows["item"].to_list()
    variant: str = ""
    envelope: Callable[[Snapshot], dict[str, Any]] | None = None
    backward: bool = True
    # For an order kept as row numbers: a page's rows from them, in the order's snapshot.
    gather: Callable[[Snapshot, pl.DataFrame], pl.DataFrame] | None = None
    # The watermark a page is as of, when not its snapshot's (a ranking's own cadence).
    as_of: Callable[[Snapshot], str] | None = None


async def page(request: Request, listing: Listing, limit: int, cursor: str | None) -> Response:
    """One page of `listing`: from the start, or where `cursor` says, in its own snapshot."""
    state = request.state
    snapshot, offset = state.snapshot, 0
    if cursor is not None:
        decoded = decode(request, cursor, listing.name, listing.scope)
        pinned = await state.holder.pinned(decoded.snapshot_id)
        if pinned is None:
            raise ApiError("invalid_param", "cursor has expired; start from the first page",
                           "cursor")
        snapshot, offset = pinned, decoded.offset
    key = (snapshot.snapshot_id, listing.name, listing.scope, listing.variant, offset, limit)
    body = _rendered.get(key)
    if body is None:
        body = _render(request, snapshot, listing, offset, limit)
        _rendered.put(key, body, len(body))
    return Response(body, headers=snapshot_headers(
        snapshot, listing.as_of(snapshot) if listing.as_of else None))


def decode(request: Request, cursor: str, name: str, scope: str,
           places: int | None = None) -> Cursor:
    """The cursor, checked to continue this list and this query (and, for a list paged by
    place, to hold `places` integers); 400 otherwise."""
    try:
        decoded = request.state.signer.decode(cursor)
    except CursorError as err:
        raise ApiError("invalid_param", str(err), "cursor") from None
    if decoded.list_name != name:
        raise ApiError("invalid_param", "cursor belongs to another list", "cursor")
    if decoded.scope != scope:
        raise ApiError("invalid_param",
                       "cursor belongs to another query; repeat the parameters that issued it",
                       "cursor")
    if places is not None and (len(decoded.position) != places or not all(
            isinstance(value, int) for value in decoded.position)):
        raise ApiError("invalid_param", "cursor belongs to another list", "cursor")
    checked: Cursor = decoded
    return checked


def ordering(snapshot: Snapshot, listing: Listing) -> pl.DataFrame:
    """The listing's rows in order for `snapshot`, derived once."""
    key = (snapshot.snapshot_id, listing.name, listing.scope)
    rows = _orderings.get(key)
    if rows is None:
        rows = listing.order(snapshot)
        _orderings.put(key, rows, int(rows.estimated_size()))
    return rows


def numbered(rows: pl.DataFrame) -> pl.DataFrame:
    """A serving table's rows with their row numbers, for an order kept as them alone."""
    return rows.with_row_index(ROW)


def gather_rows(name: str) -> Callable[[Snapshot, pl.DataFrame], pl.DataFrame]:
    """A page's rows of the snapshot's `name` table, from an order kept as row numbers."""
    return lambda snapshot, rows: table(snapshot, name)[rows[ROW]]


def _render(request: Request, snapshot: Snapshot, listing: Listing, offset: int,
            limit: int) -> bytes:
    rows = ordering(snapshot, listing)
    shown = rows.slice(offset, limit)
    items = listing.render(shown if listing.gather is None else listing.gather(snapshot, shown))
    sid, signer = snapshot.snapshot_id, request.state.signer
    after = offset + limit

    def cursor(at: int) -> str:
        encoded: str = signer.encode(Cursor(sid, listing.name, at, listing.scope))
        return encoded

    return page_body(items, cursor(after) if after < rows.height else None,
                     cursor(max(0, offset - limit)) if offset > 0 else None,
                     extra=listing.envelope(snapshot) if listing.envelope else None,
                     backward=listing.backward)


def table_listing(name: str) -> Listing:
    """A list published with its table, paged in its published order."""
    return Listing(name, lambda snapshot: snapshot.tables[name])

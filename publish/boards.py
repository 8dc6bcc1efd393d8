"""Leaderboard documents (spec 2.8): one whole response per view, live and per season, for both
scopes; the edge answers GET /leaderboard from them without computing anything."""

from datetime import datetime
from typing import Any

import orjson
import polars as pl

from core.vocabulary import WIRE_TIME


def view_name(scope: str, board: str | None, season: int | None) -> str:
    """Where a view's document is named: boards/<scope>[/<chain>]/<live | season/N>."""
    where = f"boards/{scope}" + (f"/{board}" if board else "")
    return f"{where}/live" if season is None else f"{where}/season/{season}"


def season_block(number: int, starts: datetime, ends: datetime, live: bool, length_days: int,
                 latest: int) -> dict[str, Any]:
    """The response's season block."""
    return {"number": number, "starts_at": starts.strftime(WIRE_TIME),
            "ends_at": ends.strftime(WIRE_TIME), "live": live, "length_days": length_days,
            "latest": latest}


def board_document(scope: str, rows: list[dict[str, Any]], snapshot_at: str, methodology_version: int,
                   season: dict[str, Any]) -> dict[str, Any]:
    """One view: ranked rows in rank order under `items`, refused rows under `excluded`."""
    items = sorted((r for r in rows if r["rank"]), key=lambda r: r["rank"])
    return {"scope": scope, "snapshot_at": snapshot_at,
            "methodology_version": methodology_version, "population": len(items),
            "season": season, "items": items,
            "excluded": [r for r in rows if not r["rank"]]}


def board_documents(live: pl.DataFrame, seasons: pl.DataFrame, snapshot_at: str,
                    length_days: int) -> tuple[dict[str, dict[str, Any]], dict[str, dict[str, Any]]]:
    """Every view's document: (the live board and the running season's, for the snapshot;
    each closed season's, to be published once and never again)."""
    running = seasons.filter(~pl.col("closed"))
    latest: int = seasons["season"].cast(pl.Int64).max() or 0  # type: ignore[assignment]
    season_rows = {(r["scope"], r["board"], r["key"]): r for r in running.iter_rows(named=True)}
    current: dict[str, dict[str, Any]] = {}
    frozen: dict[str, dict[str, Any]] = {}
    first = running.row(0, named=True)
    block = season_block(latest, first["starts_at"], first["ends_at"], True, length_days, latest)
    version: int = live["methodology_version"].cast(pl.Int64).max() or 0  # type: ignore[assignment]
    for (scope, board), rows in live.group_by("scope", "board", maintain_order=True):
        items = []
        for row in rows.iter_rows(named=True):
            item = orjson.loads(row["item"])
            season = orjson.loads(season_rows[(scope, board, row["key"])]["item"])
            items.append({**item, "season_metrics": season["season_metrics"]})
        current[view_name(scope, board, None)] = board_document(scope, items, snapshot_at,
                                                                version, block)
    for (number, scope, board), rows in seasons.group_by("season", "scope", "board",
                                                         maintain_order=True):
        first = rows.row(0, named=True)
        closed = first["closed"]
        block = season_block(number, first["starts_at"], first["ends_at"], not closed,
                             length_days, latest)
        at = first["computed_at"].strftime(WIRE_TIME) if closed else snapshot_at
        doc = board_document(scope, [orjson.loads(i) for i in rows["item"]], at, version, block)
        (frozen if closed else current)[view_name(scope, board, number)] = doc
    return current, frozen

"""The wallet rounds in spans by their close: closed rounds shared between snapshots, the open
ones (held to the watermark) in the watermark's hour, by hand."""

from datetime import UTC, datetime

import orjson
import polars as pl

from publish.cursor import CursorSigner
from publish.snapshot import OBJECTS, Publisher, load_snapshot
from publish.store import LocalStore
from publish.wallets import ROUND_FIELDS, wallet_rounds

DAY, HOUR = 86_400, 3_600
SYMBOLS = pl.DataFrame({"chain_id": [1], "token": ["0xt"], "token_symbol": ["T"]})


def rounds(*rows: tuple[str, int, int | None], as_of: int) -> pl.DataFrame:
    """(wallet, opened_at, closed_at) each, one token, each wallet's rounds numbered in order."""
    made: list[dict] = []
    for wallet, opened, closed in rows:
        number = [r["wallet"] for r in made].count(wallet)
        made.append({**dict.fromkeys(ROUND_FIELDS, 0), "chain_id": 1, "wallet": wallet,
                     "token": "0xt", "round": number, "is_open": closed is None,
                     "opened_at": opened, "closed_at": closed,
                     "hold_seconds": (as_of if closed is None else closed) - opened})
    return pl.DataFrame(made, schema_overrides={"closed_at": pl.Int64})


def test_closed_rounds_keep_their_parts_and_open_ones_go_with_the_watermark_hour(tmp_path):
    store = LocalStore(tmp_path / "store")
    publisher = Publisher(store, CursorSigner(b"k"))
    # The watermark is 02:30 on day 2: w0's round closed on day 0, w1's on day 2 before 02:00,
    # w2's is open.
    as_of = 2 * DAY + 2 * HOUR + 1800
    book = [("w0", 100, 200), ("w1", DAY, 2 * DAY + 60), ("w2", 2 * DAY, None)]
    first = publisher.publish(datetime(2026, 11, 20, tzinfo=UTC), [], {}, tables=[
        wallet_rounds(rounds(*book, as_of=as_of), SYMBOLS, as_of)])
    parts = first.tables["wallet_rounds"]["parts"]
    assert [(p["span"], p["rows"]) for p in parts] == [(0, 1), (2 * DAY, 1),
                                                        (2 * DAY + 2 * HOUR, 1)]
    written = set(store.keys(OBJECTS))
    # A minute on: w2's open round has been held a minute longer (2 h 31 min), and w0 opened and closed a
    # round within the watermark's hour. Only the hour's part is new.
    later = as_of + 60
    book += [("w0", 2 * DAY + 2 * HOUR + 1810, 2 * DAY + 2 * HOUR + 1820)]
    second = publisher.publish(datetime(2026, 11, 20, 0, 1, tzinfo=UTC), [], {}, tables=[
        wallet_rounds(rounds(*book, as_of=later), SYMBOLS, later)])
    after = second.tables["wallet_rounds"]["parts"]
    assert [(p["span"], p["rows"]) for p in after] == [(0, 1), (2 * DAY, 1),
                                                        (2 * DAY + 2 * HOUR, 2)]
    assert [p["object"] for p in after[:2]] == [p["object"] for p in parts[:2]]
    assert set(store.keys(OBJECTS)) - written == {after[2]["object"]}
    hour = load_snapshot(store, second.snapshot_id).parts["wallet_rounds"][2].frame
    items = [orjson.loads(i) for i in hour["item"]]
    assert [(i["token_address"], i["token_symbol"], i["round"], i["hold_seconds"], i["is_open"])
            for i in items] == [("0xt", "T", 1, 10, False), ("0xt", "T", 0, 2 * HOUR + 1860, True)]

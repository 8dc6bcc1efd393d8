"""A token's ownership from its ownership rows and its powers, worked out by hand."""

from datetime import UTC, datetime

import polars as pl

from figures.ownership import token_owners

ZERO = "0x" + "0" * 40
DEAD = "0x" + "0" * 36 + "dead"


def at(block: int) -> datetime:
    return datetime(2026, 12, 1, tzinfo=UTC).replace(minute=block % 60, hour=block // 60)


def test_owners_renunciations_and_risks_by_hand():
    tokens = pl.LazyFrame({
        "chain_id": [1] * 8, "address": list("ABCDEGHI"),
        "owner_powers": [["mint"], [], ["set_fees"], None, [], ["pause"], ["mint"], ["mint"]]},
        schema={"chain_id": pl.Int64, "address": pl.String, "owner_powers": pl.List(pl.String)})
    rows = [  # token, block, log index (None: a read), previous owner, owner
        ("A", 20, 3, "dep1", ZERO), ("A", 10, 1, ZERO, "dep1"),
        ("B", 5, 0, ZERO, "dep2"), ("B", 8, 4, "dep2", "acct3"),
        ("C", 30, None, None, "dep3"),
        ("G", 40, None, None, None),
        ("H", 50, 2, "dep4", DEAD), ("H", 60, None, None, DEAD),
        ("I", 70, None, None, ZERO)]
    ownership = pl.LazyFrame({
        "chain_id": [1] * len(rows), "token": [r[0] for r in rows],
        "block_number": [r[1] for r in rows], "log_index": [r[2] for r in rows],
        "block_time": [at(r[1]) for r in rows], "previous_owner": [r[3] for r in rows],
        "owner": [r[4] for r in rows],
        "source": ["read" if r[2] is None else "event" for r in rows]},
        schema_overrides={"log_index": pl.Int64, "previous_owner": pl.String,
                          "owner": pl.String})
    got = {r["address"]: r for r in token_owners(tokens, ownership).collect().to_dicts()}
    # D: no row and no code read: nothing known of it.
    assert sorted(got) == list("ABCEGHI")
    fields = ("ownable", "owner", "renounced", "renounced_at", "owner_since", "previous_owner",
              "owner_risk")
    expected = {
        # Owned from its deployment, renounced at block 20 by its deployer.
        "A": (True, ZERO, True, at(20), None, "dep1", False),
        # Handed on at block 8: owned since then, no power to fear.
        "B": (True, "acct3", False, None, at(8), "dep2", False),
        # Found owned by a read: since when and from whom unknown; an owner with a power.
        "C": (True, "dep3", False, None, None, None, True),
        # Code read, no owner ever: not ownable.
        "E": (False, None, False, None, None, None, False),
        # `owner()` not answered: not ownable, its power nobody's.
        "G": (False, None, False, None, None, None, False),
        # Renounced to the dead address at block 50; the later read agrees.
        "H": (True, DEAD, True, at(50), None, "dep4", False),
        # Found renounced by a read: when and by whom unknown.
        "I": (True, ZERO, True, None, None, None, False),
    }
    for token, values in expected.items():
        assert tuple(got[token][f] for f in fields) == values, token

"""A token's ownership (docs/market.md, "Ownership"): who owns it now, whether the owner
renounced it and since when, who held it before, and whether an owner keeps powers over its
holders; from the lake's `ownership` rows and the powers its `tokens` row names."""

import polars as pl

from core.vocabulary import RENOUNCED_OWNERS

OWNERSHIP_COLUMNS = ("ownable", "owner", "renounced", "renounced_at", "owner_since",
                     "previous_owner", "owner_powers", "owner_risk")


def token_owners(tokens: pl.LazyFrame, ownership: pl.LazyFrame) -> pl.LazyFrame:
    """Per token (`chain_id`, `address`) whose owner is known: known from its ownership rows,
    or, with none, known to have no owner where its code was read (`owner_powers` not null).
    `owner_since` and `renounced_at` are when the current owner (or the renunciation) took
    effect, null when that was before anything the lake holds (a read found it so)."""
    # The rows in chain order, a read after its block's logs; an owner and a renounced owner
    # each a run: the current owner's run is the last.
    ordered = ownership.sort("chain_id", "token", "block_number", "log_index", nulls_last=True)
    state = pl.when(pl.col("owner").is_in(RENOUNCED_OWNERS)).then(pl.lit("renounced")) \
        .otherwise(pl.col("owner"))
    runs = ordered.with_columns(state=state).with_columns(
        run=(pl.col("state").ne_missing(pl.col("state").shift(1))
             .over("chain_id", "token")).cum_sum().over("chain_id", "token"))
    last_run = runs.filter(pl.col("run") == pl.col("run").max().over("chain_id", "token"))
    told = last_run.group_by("chain_id", "token").agg(
        owner=pl.col("owner").last(),
        began_by_event=pl.col("source").first() == "event",
        began_at=pl.col("block_time").first(),
        before=pl.col("previous_owner").first())
    known = tokens.select("chain_id", "address", "owner_powers").join(
        told.rename({"token": "address"}), on=["chain_id", "address"], how="left")
    ownable = pl.col("owner").is_not_null()
    renounced = pl.col("owner").is_in(RENOUNCED_OWNERS)
    since = pl.when(pl.col("began_by_event")).then(pl.col("began_at"))
    return known.filter(pl.col("began_at").is_not_null() | pl.col("owner_powers").is_not_null()
                        ).select(
        "chain_id", "address",
        ownable=ownable,
        owner="owner",
        renounced=renounced.fill_null(False),
        renounced_at=pl.when(renounced).then(since),
        owner_since=pl.when(ownable & ~renounced).then(since),
        # An owner set from the zero address was nobody's before (a constructor's event).
        previous_owner=pl.when(pl.col("began_by_event")
                               & ~pl.col("before").is_in(RENOUNCED_OWNERS)).then("before"),
        owner_powers="owner_powers",
        owner_risk=(ownable & ~renounced.fill_null(False)
                    & (pl.col("owner_powers").list.len().fill_null(0) > 0)))

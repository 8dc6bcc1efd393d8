"""Trader cohorts (docs/wallets.md, "Cohorts"): a token's wallets grouped the way users read
them (snipers, early buyers, the deployer and the wallets it funded, top holders, fresh wallets,
smart money, bots), each member with the evidence that put it there, and each cohort's count,
share of the supply held now, net flow in the pair windows and realised PNL.

A token's wallets are those that swapped it (its positions) or hold it now (its holders); a
wallet may be in several cohorts. Quote tokens (what pools price in) have none. The first buys
are folded a lake day at a time, keeping per token only the buys that can still make a cohort;
the rest is made a chain at a time."""

from collections.abc import Callable, Iterable

import polars as pl

from assets.market.holders import ranked_holders
from core.vocabulary import (
    COHORTS,
    EARLY_BUYERS,
    FRESH_SECONDS,
    PAIR_WINDOWS,
    SNIPE_BLOCKS,
    TOP_HOLDERS,
)

TOKEN_WALLET = ("chain_id", "token", "wallet")
# The ledger's columns the cohorts read.
LEDGER_COLUMNS = ("chain_id", "token", "wallet", "side", "block_number", "log_index", "ts",
                  "notional_usd")
FLOWS = tuple(f"net_flow_usd_{w}" for w in PAIR_WINDOWS)
# What a cohort sums over its members.
SUMMED = ("held", "bought_usd", "sold_usd", "realized_usd", *FLOWS)
# Why a wallet is in each cohort, from its row among the token's wallets.
MEMBERSHIP: dict[str, pl.Expr] = {
    "sniper": pl.col("first_buy_block") < pl.col("launch_block") + SNIPE_BLOCKS,
    "early_buyer": pl.col("buyer_rank") <= EARLY_BUYERS,
    "deployer": pl.col("is_deployer") | pl.col("funded_by_deployer"),
    "top_holder": pl.col("holder_rank") <= TOP_HOLDERS,
    "fresh_wallet": pl.col("first_trade_at") - pl.col("first_seen") <= FRESH_SECONDS,
    "smart_money": pl.col("copy_eligible"),
    "bot": pl.col("type") == "bot",
}
assert tuple(MEMBERSHIP) == tuple(COHORTS)


def launches(pairs: pl.LazyFrame, pair_tokens: pl.LazyFrame) -> pl.LazyFrame:
    """Each token's launch block: the block its first pool (a pool it is the base of) was
    created in."""
    return (pair_tokens.select("chain_id", "pair", token="base")
            .join(pairs.select("chain_id", "created_block", pair="address"),
                  on=["chain_id", "pair"])
            .group_by("chain_id", "token").agg(launch_block=pl.col("created_block").min()))


def first_buys(day: pl.LazyFrame, carried: pl.DataFrame | None,
               launch: pl.DataFrame) -> pl.DataFrame:
    """The first buys that can still make a cohort once one more lake day is added (`day`: its
    ledger rows; `carried`: this after the days before): per token, each buyer's first buy
    (block and log) with its rank among the token's buyers, kept while the rank is at most
    EARLY_BUYERS or the buy is within SNIPE_BLOCKS of the token's launch. A buyer ranked out
    stays out: every buyer after it on a later day ranks later still."""
    found = (day.filter(pl.col("side") == "buy")
             .select(*TOKEN_WALLET, "block_number", "log_index").collect())
    if carried is not None:
        found = pl.concat([carried.select(found.columns), found])
    return (found.sort("chain_id", "token", "block_number", "log_index", "wallet")
            .unique(TOKEN_WALLET, keep="first", maintain_order=True)
            .with_columns(buyer_rank=pl.int_range(1, pl.len() + 1, dtype=pl.Int32)
                          .over("chain_id", "token"))
            .join(launch, on=["chain_id", "token"], how="left")
            .filter((pl.col("buyer_rank") <= EARLY_BUYERS)
                    | (pl.col("block_number") < pl.col("launch_block") + SNIPE_BLOCKS))
            .drop("launch_block"))


def fold_first_buys(days: Iterable[pl.LazyFrame], launch: pl.DataFrame,
                    progress: Callable[[int], None] = lambda _: None) -> pl.DataFrame:
    """`first_buys` over the lake's days in order (`progress`: told each day's number once it
    is folded)."""
    carried = None
    for number, day in enumerate(days, 1):
        carried = first_buys(day, carried, launch)
        progress(number)
    if carried is None:
        return pl.DataFrame(schema={"chain_id": pl.Int64, "token": pl.String,
                                    "wallet": pl.String, "block_number": pl.Int64,
                                    "log_index": pl.Int64, "buyer_rank": pl.Int32})
    return carried


def window_flows(recent: pl.LazyFrame, as_of_s: int) -> pl.LazyFrame:
    """Each wallet's net flow into each token in each pair window ending at `as_of_s` (USD
    bought less USD sold; a swap without a USD price adds nothing), from the ledger's rows of
    the longest window (`recent`)."""
    longest = max(PAIR_WINDOWS.values())
    signed = (pl.when(pl.col("side") == "buy").then(1.0).otherwise(-1.0)
              * pl.col("notional_usd").fill_null(0.0))
    return (recent.filter(pl.col("side").is_in(["buy", "sell"]),
                          pl.col("ts") > as_of_s - longest, pl.col("ts") <= as_of_s)
            .group_by(TOKEN_WALLET)
            .agg(**{flow: signed.filter(pl.col("ts") > as_of_s - seconds).sum()
                    for flow, seconds in zip(FLOWS, PAIR_WINDOWS.values(), strict=True)}))


def holder_ranks(holders: pl.LazyFrame) -> pl.LazyFrame:
    """Each holder's balance and rank among the token's holders, as the holders' serving table
    ranks them (`ranked_holders`)."""
    return ranked_holders(holders).select(
        "chain_id", "token", wallet="holder", held="balance",
        holder_rank=pl.col("rank").cast(pl.Int32))


def token_wallets(frames: dict[str, pl.LazyFrame], first: pl.LazyFrame,
                  launch: pl.LazyFrame, flows: pl.LazyFrame) -> pl.LazyFrame:
    """A token's wallets (those with a position in it, or a balance of it now; quote tokens
    have no cohorts), each with the evidence the cohorts read and the figures they sum
    (`frames`: positions, holders, traits, funding, profiles and tokens; `first`:
    `first_buys`; `flows`: `window_flows`)."""
    traded = frames["tokens"].filter(~pl.col("is_quote")).select("chain_id", token="address")
    positions = frames["positions"].select(
        *TOKEN_WALLET, "bought_usd", "sold_usd", "realized_usd", "first_trade_at")
    holders = frames["holders"].join(traded, on=["chain_id", "token"], how="semi")
    wallets = (positions.join(holder_ranks(holders), on=TOKEN_WALLET, how="full", coalesce=True)
               .join(traded, on=["chain_id", "token"], how="semi")
               .with_columns(pl.col("held", "bought_usd", "sold_usd", "realized_usd")
                             .fill_null(0.0)))
    funding = frames["funding"]
    funded_at = funding.group_by("chain_id", "wallet").agg(first_funded_at=pl.col("ts").min())
    deployers = frames["tokens"].select("chain_id", "deployer", token="address")
    by_deployer = (funding.select("chain_id", "wallet", deployer="funder").unique()
                   .join(deployers, on=["chain_id", "deployer"])
                   .select(*TOKEN_WALLET, funded_by_deployer=pl.lit(True)))
    return (wallets
            .join(first.select(*TOKEN_WALLET, "buyer_rank", first_buy_block="block_number"),
                  on=TOKEN_WALLET, how="left")
            .join(launch, on=["chain_id", "token"], how="left")
            .join(frames["traits"].select("chain_id", "wallet", "first_seen"),
                  on=["chain_id", "wallet"], how="left")
            .join(funded_at, on=["chain_id", "wallet"], how="left")
            .with_columns(first_seen=pl.min_horizontal("first_seen", "first_funded_at"))
            .drop("first_funded_at")
            .join(frames["profiles"].select("chain_id", "wallet", "type", "copy_eligible"),
                  on=["chain_id", "wallet"], how="left")
            .join(deployers, on=["chain_id", "token"], how="left")
            .join(by_deployer, on=TOKEN_WALLET, how="left")
            .join(flows, on=TOKEN_WALLET, how="left")
            .with_columns(pl.col(*FLOWS).fill_null(0.0),
                          is_deployer=(pl.col("wallet") == pl.col("deployer")).fill_null(False),
                          funded_by_deployer=pl.col("funded_by_deployer").fill_null(False),
                          copy_eligible=pl.col("copy_eligible").fill_null(False))
            .drop("deployer"))


def assemble_members(wallets: pl.LazyFrame) -> pl.LazyFrame:
    """One row per token, cohort and member: the token's wallets each cohort takes, in cohort
    order, with their evidence and figures."""
    return pl.concat([wallets.filter(rule.fill_null(False))
                      .with_columns(cohort=pl.lit(cohort))
                      for cohort, rule in MEMBERSHIP.items()]).select(
        "chain_id", "token", "cohort", "wallet", pl.exclude("chain_id", "token", "cohort",
                                                            "wallet"))


def supplies(basis: pl.LazyFrame, holders: pl.LazyFrame) -> pl.LazyFrame:
    """Each token's total supply, and the supply a share is taken of: the total, or what its
    holders hold where that is more (a total read before later mints); null where the total
    is unknown or zero."""
    held = holders.group_by("chain_id", "token").agg(holders_hold=pl.col("balance").sum())
    return (basis.select("chain_id", "total_supply", token="address")
            .join(held, on=["chain_id", "token"], how="left")
            .with_columns(supply=pl.when(pl.col("total_supply") > 0).then(
                pl.max_horizontal("total_supply", pl.col("holders_hold").fill_null(0.0))))
            .drop("holders_hold"))


def assemble_cohorts(members: pl.LazyFrame, supply: pl.LazyFrame) -> pl.LazyFrame:
    """One row per token and cohort with members: how many, what they hold now and its share
    of the token's supply (`supply`: `supplies`), what they bought, sold and realised, and
    their net flow in each window."""
    return (members.group_by("chain_id", "token", "cohort")
            .agg(wallets=pl.len().cast(pl.Int64), **{f: pl.col(f).sum() for f in SUMMED})
            .join(supply, on=["chain_id", "token"], how="left")
            .with_columns(share_of_supply=pl.col("held") / pl.col("supply"))
            .sort("chain_id", "token", pl.col("cohort").replace_strict(
                {c: i for i, c in enumerate(COHORTS)}, return_dtype=pl.Int32)))

"""Wallet products: schemas of record and the meaning rules of spec 2.4 and 4.5, with the
accounting identities (total = realised + unrealised; positions add up to the wallet)."""

from typing import Annotated

import pandera.polars as pa
import polars as pl
from pandera.engines import polars_engine as pe

from checks.schemas.product import ExactProduct, Product
from core.columns import EVENT, fingerprints_unique, keys_unique
from core.vocabulary import (
    CAPITAL_TIERS,
    COHORTS,
    EARLY_BUYERS,
    FRESH_SECONDS,
    MIN_RATED_POSITIONS,
    PAIR_WINDOWS,
    SIDES,
    SNIPE_BLOCKS,
    TERMINAL_TOKEN_STATUSES,
    TOP_HOLDERS,
    TRANSFER_SIDES,
    WALLET_WINDOWS,
)

# The ledger's order: each chain's events in block and log order, then an event's legs.
LEDGER_ORDER = (*EVENT, "seq")
# A wallet whose human record is unknown scores at most this (a thin timing record).
HUMAN_UNKNOWN_CAP = 40

# Float sums in a different order differ in the last digits: a cent, or a millionth of the
# larger side.
TOLERANCE_USD, TOLERANCE_SHARE = 0.01, 1e-6


def close(a: pl.Expr, b: pl.Expr) -> pl.Expr:
    """Equal within the float tolerance."""
    return (a - b).abs() <= TOLERANCE_USD + TOLERANCE_SHARE * pl.max_horizontal(a.abs(), b.abs())


def one_row_per(*keys: str):
    """A frame-wide check: no two rows share `keys` (`fingerprints_unique`)."""
    def one_row_per_key(cls, data) -> bool | pl.LazyFrame:
        return fingerprints_unique(data.lazyframe, keys)

    one_row_per_key.__doc__ = f"No two rows share ({', '.join(keys)})."
    return pa.dataframe_check(one_row_per_key)


class LedgerRow(Product):
    """One wallet's swap or bare movement, accounted."""

    chain_id: int = pa.Field(gt=0)
    wallet: str
    token: str
    side: Annotated[pe.Enum, SIDES]
    qty: float = pa.Field(gt=0)
    held: float = pa.Field(ge=0)
    cost: float = pa.Field(ge=-TOLERANCE_USD)
    realized_usd: float
    cost_closed_usd: float = pa.Field(ge=-TOLERANCE_USD)
    fee_is_estimated: bool


    @pa.dataframe_check

    @classmethod
    def transfers_carry_no_price(cls, data) -> pl.LazyFrame:
        """transfer_in and transfer_out carry no price or notional and realise nothing."""
        moved = pl.col("side").is_in(TRANSFER_SIDES)
        return data.lazyframe.select(~moved | (pl.col("price_usd").is_null()
                                               & pl.col("notional_usd").is_null()
                                               & (pl.col("realized_usd") == 0)))

    @pa.dataframe_check

    @classmethod
    def one_row_per_event_end(cls, data) -> bool | pl.LazyFrame:
        """No two rows share (chain, block, log, seq): a swap, or one end of a movement."""
        return keys_unique(data.lazyframe, LEDGER_ORDER)

    @pa.dataframe_check

    @classmethod
    def each_event_names_its_transaction(cls, data) -> pl.LazyFrame:
        """A movement keeps its hash (a swap's is read from the lake by its event)."""
        swapped = pl.col("side").is_in(["buy", "sell"])
        return data.lazyframe.select(swapped | pl.col("tx_hash").is_not_null())

    @pa.dataframe_check

    @classmethod
    def only_sells_realise(cls, data) -> pl.LazyFrame:
        """Only a sell realises profit or closes cost basis."""
        return data.lazyframe.select((pl.col("side") == "sell")
                                     | ((pl.col("realized_usd") == 0)
                                        & (pl.col("cost_closed_usd") == 0)))

    @pa.dataframe_check

    @classmethod
    def estimated_fees_exist(cls, data) -> pl.LazyFrame:
        """fee_is_estimated marks a modelled fee, so there is a fee."""
        return data.lazyframe.select(~pl.col("fee_is_estimated") | pl.col("fee_usd").is_not_null())


class BookState(ExactProduct):
    """One position's books at the end of a lake day: what the next day is accounted from."""

    chain_id: int = pa.Field(gt=0)
    position: int
    net_qty: float
    low_qty: float = pa.Field(le=0)
    came_qty: float = pa.Field(ge=0)
    held: float = pa.Field(ge=0)
    cost: float = pa.Field(ge=-TOLERANCE_USD)
    running_cost: float
    closed_rounds: pl.Int32 = pa.Field(ge=0)
    round: pl.Int32 = pa.Field(ge=-1)
    round_opened_at: pl.Int64 = pa.Field(ge=0)

    class Config:
        unique = ["chain_id", "position"]

    @pa.dataframe_check

    @classmethod
    def held_is_what_stayed(cls, data) -> pl.LazyFrame:
        """held is at most the net quantity above its lowest point."""
        return data.lazyframe.select(
            pl.col("held") <= pl.col("net_qty") - pl.col("low_qty") + TOLERANCE_SHARE
            * pl.col("came_qty"))


class TokenMark(ExactProduct):
    """One token's last priced swap price at the end of a lake day."""

    chain_id: int = pa.Field(gt=0)
    token: str
    mark_usd: float = pa.Field(gt=0)

    class Config:
        unique = ["chain_id", "token"]


class PositionRow(Product):
    """One wallet's position in one token it swapped, lifetime."""

    chain_id: int = pa.Field(gt=0)
    wallet: str
    token: str
    buys: int = pa.Field(ge=0)
    sells: int = pa.Field(ge=0)
    held: float = pa.Field(ge=0)
    open_cost_usd: float = pa.Field(ge=-TOLERANCE_USD)
    cost_closed_usd: float = pa.Field(ge=-TOLERANCE_USD)
    realized_usd: float
    unrealized_usd: float
    total_pnl_usd: float
    basis_is_incomplete: bool
    token_score: int = pa.Field(ge=0, le=100)
    token_status: int = pa.Field(ge=0)
    condemned: bool
    tracked: bool


    one_row_per_position = one_row_per("chain_id", "wallet", "token")

    @pa.dataframe_check

    @classmethod
    def total_is_realised_plus_unrealised(cls, data) -> pl.LazyFrame:
        """total_pnl_usd = realized_usd + unrealized_usd."""
        return data.lazyframe.select(close(pl.col("total_pnl_usd"),
                                           pl.col("realized_usd") + pl.col("unrealized_usd")))

    @pa.dataframe_check

    @classmethod
    def condemned_whatever_the_score(cls, data) -> pl.LazyFrame:
        """Statuses 999 and 1000 are condemned whatever the score, and marked at zero."""
        terminal = pl.col("token_status").is_in(TERMINAL_TOKEN_STATUSES)
        return data.lazyframe.select((terminal == pl.col("condemned"))
                                     & (~terminal | (pl.col("value_usd") == 0)))

    @pa.dataframe_check

    @classmethod
    def untracked_positions_carry_no_pnl(cls, data) -> pl.LazyFrame:
        """A position no priced swap touched has no PNL (it is excluded, not a zero result)."""
        return data.lazyframe.select(pl.col("tracked") | ((pl.col("realized_usd") == 0)
                                                          & (pl.col("unrealized_usd") == 0)))

    @pa.dataframe_check

    @classmethod
    def positions_were_swapped(cls, data) -> pl.LazyFrame:
        """A position is a token the wallet swapped; transfer-only tokens are excluded."""
        return data.lazyframe.select(pl.col("buys") + pl.col("sells") > 0)


class RoundRow(Product):
    """One round of a position: first unit in to last unit out."""

    chain_id: int = pa.Field(gt=0)
    wallet: str
    token: str
    round: int = pa.Field(ge=0)
    opened_at: int
    hold_seconds: int = pa.Field(ge=0)
    is_open: bool
    held: float = pa.Field(ge=0)
    open_cost_usd: float = pa.Field(ge=-TOLERANCE_USD)


    one_row_per_round = one_row_per("chain_id", "wallet", "token", "round")

    @pa.dataframe_check

    @classmethod
    def closed_rounds_close_after_opening(cls, data) -> pl.LazyFrame:
        """A closed round closes at or after it opened; an open one has no close."""
        return data.lazyframe.select(pl.col("is_open") == pl.col("closed_at").is_null())


class WalletTraits(Product):
    """What one wallet's own rows say about it: what the classifiers read."""

    chain_id: int = pa.Field(gt=0)
    wallet: str
    hours: int = pa.Field(ge=0, le=24)
    deployed_usd: float = pa.Field(ge=-TOLERANCE_USD)


    one_row_per_wallet = one_row_per("chain_id", "wallet")

    @pa.dataframe_check

    @classmethod
    def swaps_are_buys_and_sells(cls, data) -> pl.LazyFrame:
        """Every swap is a buy or a sell; a round trip ends in a sell; an entry is a pool's
        first buy, so at most one a pool traded, and a snipe is an entry."""
        c = pl.col
        return data.lazyframe.select(
            (c("swaps") == c("buys") + c("sells")) & (c("round_trips") <= c("sells"))
            & (c("entries") <= c("pools")) & (c("pools") <= c("swaps"))
            & (c("sniped") <= c("entries")) & (c("established") <= c("swaps")))

    @pa.dataframe_check

    @classmethod
    def swaps_fall_within_activity(cls, data) -> pl.LazyFrame:
        """First seen comes no later than the first swap, the last swap no later than the last
        activity; a wallet that never swapped has no swap instants."""
        c = pl.col
        return data.lazyframe.select(pl.when(c("swaps") > 0).then(
            (c("first_seen") <= c("first_swap")) & (c("first_swap") <= c("last_swap"))
            & (c("last_swap") <= c("last_active")))
            .otherwise(c("first_swap").is_null() & c("last_swap").is_null()))


class WalletWindow(Product):
    """One wallet's metrics record in one window (spec 2.4)."""

    chain_id: int = pa.Field(gt=0)
    wallet: str
    window: str = pa.Field(isin=WALLET_WINDOWS)
    win_rate: float = pa.Field(ge=0, le=1)
    trade_win_rate: float = pa.Field(ge=0, le=1)
    gross_profit_usd: float = pa.Field(ge=0)
    gross_loss_usd: float = pa.Field(ge=0)
    invested_usd: float = pa.Field(ge=0)
    volume_usd: float = pa.Field(ge=0)
    trades: int = pa.Field(ge=0)
    rated_positions: int = pa.Field(ge=0)


    one_row_per_window = one_row_per("chain_id", "wallet", "window")

    @pa.dataframe_check

    @classmethod
    def total_is_realised_plus_unrealised(cls, data) -> pl.LazyFrame:
        """total_pnl_usd is realised profit plus open positions marked to market."""
        return data.lazyframe.select(close(pl.col("total_pnl_usd"),
                                           pl.col("realized_pnl_usd")
                                           + pl.col("unrealized_pnl_usd")))

    @pa.dataframe_check

    @classmethod
    def win_rate_needs_a_rated_sample(cls, data) -> pl.LazyFrame:
        """win_rate is 0 when the rated sample is too small; trade_win_rate carries the ratio."""
        return data.lazyframe.select((pl.col("rated_positions") >= MIN_RATED_POSITIONS)
                                     | (pl.col("win_rate") == 0))

    @pa.dataframe_check

    @classmethod
    def realised_is_profit_less_loss(cls, data) -> pl.LazyFrame:
        """Realised profit is gross profit less gross loss."""
        return data.lazyframe.select(close(pl.col("realized_pnl_usd"),
                                           pl.col("gross_profit_usd") - pl.col("gross_loss_usd")))

    @pa.dataframe_check

    @classmethod
    def traded_tokens_are_rated_or_excluded(cls, data) -> pl.LazyFrame:
        """Every token swapped in the window is rated, has no outcome yet, or is untracked;
        and it is either closed or open."""
        swapped = pl.col("tokens_traded")
        return data.lazyframe.select(
            (swapped == pl.col("rated_positions") + pl.col("excluded_no_outcome")
             + pl.col("excluded_untracked"))
            & (swapped == pl.col("closed_positions") + pl.col("open_positions")))

    @pa.dataframe_check

    @classmethod
    def trades_are_swaps(cls, data) -> pl.LazyFrame:
        """Winning and losing exits are trades, and no trade means no volume."""
        return data.lazyframe.select(
            (pl.col("winning_trades") + pl.col("losing_trades") <= pl.col("trades"))
            & ((pl.col("trades") > 0) | (pl.col("volume_usd") == 0)))


class FundingRow(Product):
    """One native-token transfer into a wallet."""

    chain_id: int = pa.Field(gt=0)
    wallet: str
    funder: str
    amount: float = pa.Field(gt=0)
    amount_usd: float | None = pa.Field(nullable=True, ge=0)


class WalletProfile(Product):
    """One wallet on one chain: what rankings filter on, and its wire JSON."""

    chain_id: int = pa.Field(gt=0)
    wallet: str = pa.Field(str_length={"min_value": 1, "max_value": 128})
    type: str = pa.Field(isin=["bot", "market_maker", "deployer", "sniper", "trader", "holder"])
    tier: str = pa.Field(isin=CAPITAL_TIERS)
    user_score: int = pa.Field(ge=0, le=100)
    scammer_value: int = pa.Field(ge=0, le=100)
    scammer_band: str = pa.Field(isin=["none", "low", "medium", "high"])
    human_known: bool
    rebuild_skipped: bool
    copy_eligible: bool
    cluster_id: int = pa.Field(ge=0)
    head: str = pa.Field(str_startswith='{"address":', str_endswith="}")


    one_row_per_wallet = one_row_per("chain_id", "wallet")

    @pa.dataframe_check

    @classmethod
    def machinery_is_skipped(cls, data) -> pl.LazyFrame:
        """Bots and market makers are machinery nobody can copy: rebuild skipped, with a reason,
        never copy-eligible, and scored zero."""
        machinery = pl.col("type").is_in(["bot", "market_maker"])
        return data.lazyframe.select(
            (machinery == pl.col("rebuild_skipped"))
            & (~machinery | ((pl.col("rebuild_skip_reason") != "") & ~pl.col("copy_eligible")
                             & (pl.col("user_score") == 0))))

    @pa.dataframe_check

    @classmethod
    def thin_timing_caps_the_score(cls, data) -> pl.LazyFrame:
        """human_known false caps the user score and rules out copying."""
        return data.lazyframe.select(pl.col("human_known") | (
            (pl.col("user_score") <= HUMAN_UNKNOWN_CAP) & ~pl.col("copy_eligible")))


class WalletRanking(Product):
    """One wallet's ranking row in one window (spec 2.5)."""

    chain_id: int = pa.Field(gt=0)
    wallet: str
    window: str = pa.Field(isin=WALLET_WINDOWS)
    win_rate: float = pa.Field(ge=0, le=1)
    item_address: str = pa.Field(str_startswith='"')
    item_chain: str = pa.Field(str_startswith='{"slug":')
    item_labels: str = pa.Field(str_startswith="[")


    one_row_per_window = one_row_per("chain_id", "wallet", "window")

    @pa.dataframe_check
    @classmethod
    def ranks_as_of_one_watermark(cls, data) -> pl.LazyFrame:
        """Every row is ranked as of the same watermark: the ranking is one run's."""
        return data.lazyframe.select(pl.col("as_of") == pl.col("as_of").first())

    @pa.dataframe_check
    @classmethod
    def machinery_ranks_on_zeroes(cls, data) -> pl.LazyFrame:
        """A bot or market maker carries zeroes in every window: its rebuild is skipped."""
        machinery = pl.col("type").is_in(["bot", "market_maker"])
        return data.lazyframe.select(~machinery | ((pl.col("total_pnl_usd") == 0)
                                                   & (pl.col("trades") == 0)))


# What `positions_add_up` reads of each table: never a profile's head, most of its bytes.
POSITIONS_ADD_UP_READS = {
    "wallet_windows": ("chain_id", "wallet", "window", "realized_pnl_usd", "unrealized_pnl_usd",
                       "invested_usd", "trades", "tokens_traded"),
    "wallet_positions": ("chain_id", "wallet", "realized_usd", "unrealized_usd", "bought_usd",
                         "buys", "sells"),
    "wallet_profiles": ("chain_id", "wallet", "rebuild_skipped"),
}


def positions_add_up(windows: pl.DataFrame, positions: pl.DataFrame,
                     profiles: pl.DataFrame) -> pl.DataFrame:
    """Wallets whose `all` window differs from the sums over their positions (realised,
    unrealised, invested, trades, tokens traded); machinery is skipped by decision."""
    sums = positions.group_by("chain_id", "wallet").agg(
        realized=pl.col("realized_usd").sum(), unrealized=pl.col("unrealized_usd").sum(),
        invested=pl.col("bought_usd").sum(), trades=(pl.col("buys") + pl.col("sells")).sum(),
        tokens=pl.len())
    rebuilt = profiles.filter(~pl.col("rebuild_skipped")).select("chain_id", "wallet")
    both = (windows.filter(pl.col("window") == "all")
            .join(sums, on=["chain_id", "wallet"], how="full", coalesce=True)
            .join(rebuilt, on=["chain_id", "wallet"]))
    f = pl.col
    return both.filter(~(close(f("realized_pnl_usd").fill_null(0), f("realized").fill_null(0))
                         & close(f("unrealized_pnl_usd").fill_null(0),
                                 f("unrealized").fill_null(0))
                         & close(f("invested_usd").fill_null(0), f("invested").fill_null(0))
                         & (f("trades").fill_null(0) == f("trades_right").fill_null(0))
                         & (f("tokens_traded").fill_null(0) == f("tokens").fill_null(0))))


def _in(cohort: str) -> pl.Expr:
    return pl.col("cohort") == cohort


class CohortMember(Product):
    """One wallet in one of a token's cohorts, with the evidence that put it there
    (docs/wallets.md, "Cohorts")."""

    chain_id: int = pa.Field(gt=0)
    token: str
    cohort: str = pa.Field(isin=list(COHORTS))
    wallet: str
    held: float = pa.Field(ge=0)
    bought_usd: float = pa.Field(ge=0)
    sold_usd: float = pa.Field(ge=0)
    realized_usd: float
    holder_rank: pl.Int32 | None = pa.Field(nullable=True, ge=1)
    buyer_rank: pl.Int32 | None = pa.Field(nullable=True, ge=1)

    one_row_per_member = one_row_per("chain_id", "token", "cohort", "wallet")

    @pa.dataframe_check
    @classmethod
    def a_member_is_a_wallet_of_the_token(cls, data) -> pl.LazyFrame:
        """Every member swapped the token or holds it now."""
        return data.lazyframe.select(pl.col("first_trade_at").is_not_null()
                                     | pl.col("holder_rank").is_not_null())

    @pa.dataframe_check
    @classmethod
    def snipers_bought_in_the_launch_blocks(cls, data) -> pl.LazyFrame:
        """A sniper's first buy of the token is within SNIPE_BLOCKS of its first pool's
        creation, and no earlier."""
        return data.lazyframe.select(~_in("sniper") | pl.col("first_buy_block").is_between(
            pl.col("launch_block"), pl.col("launch_block") + SNIPE_BLOCKS - 1).fill_null(False))

    @pa.dataframe_check
    @classmethod
    def early_buyers_are_the_first(cls, data) -> pl.LazyFrame:
        """An early buyer is among the token's first EARLY_BUYERS buyers."""
        return data.lazyframe.select(~_in("early_buyer")
                                     | (pl.col("buyer_rank") <= EARLY_BUYERS).fill_null(False))

    @pa.dataframe_check
    @classmethod
    def the_deployer_and_the_wallets_it_funded(cls, data) -> pl.LazyFrame:
        """The deployer cohort is the token's deployer and the wallets it sent native coin."""
        return data.lazyframe.select(~_in("deployer")
                                     | pl.col("is_deployer") | pl.col("funded_by_deployer"))

    @pa.dataframe_check
    @classmethod
    def top_holders_hold_the_most(cls, data) -> pl.LazyFrame:
        """A top holder is among the token's TOP_HOLDERS largest holders now."""
        return data.lazyframe.select(~_in("top_holder") | (
            (pl.col("holder_rank") <= TOP_HOLDERS) & (pl.col("held") > 0)).fill_null(False))

    @pa.dataframe_check
    @classmethod
    def fresh_wallets_were_new_when_they_traded(cls, data) -> pl.LazyFrame:
        """A fresh wallet was first seen at most FRESH_SECONDS before its first trade of the
        token, and not after it."""
        age = pl.col("first_trade_at") - pl.col("first_seen")
        return data.lazyframe.select(~_in("fresh_wallet")
                                     | age.is_between(0, FRESH_SECONDS).fill_null(False))

    @pa.dataframe_check
    @classmethod
    def labels_are_the_profiles(cls, data) -> pl.LazyFrame:
        """Smart money is what the profile calls copy-eligible; a bot, what it types a bot."""
        return data.lazyframe.select((~_in("smart_money") | pl.col("copy_eligible"))
                                     & (~_in("bot") | (pl.col("type") == "bot").fill_null(False)))

    @pa.dataframe_check
    @classmethod
    def flows_are_within_what_was_swapped(cls, data) -> pl.LazyFrame:
        """No window's net flow is more than all the member ever bought and sold of the
        token."""
        gross = pl.col("bought_usd") + pl.col("sold_usd") + TOLERANCE_USD
        return data.lazyframe.select(pl.all_horizontal(
            pl.col(f"net_flow_usd_{w}").abs() <= gross for w in PAIR_WINDOWS))


class TokenCohort(Product):
    """One of a token's cohorts: its members' count and sums (docs/wallets.md, "Cohorts")."""

    chain_id: int = pa.Field(gt=0)
    token: str
    cohort: str = pa.Field(isin=list(COHORTS))
    wallets: int = pa.Field(ge=1)
    held: float = pa.Field(ge=0)
    share_of_supply: float | None = pa.Field(nullable=True, ge=0, le=1 + TOLERANCE_SHARE)
    bought_usd: float = pa.Field(ge=0)
    sold_usd: float = pa.Field(ge=0)
    realized_usd: float
    supply: float | None = pa.Field(nullable=True, gt=0)

    one_row_per_cohort = one_row_per("chain_id", "token", "cohort")

    @pa.dataframe_check
    @classmethod
    def share_is_held_over_supply(cls, data) -> pl.LazyFrame:
        """share_of_supply is what the members hold over the supply (the total, or what all
        holders hold where that is more), null where the total is unknown or zero."""
        supply = pl.col("supply")
        return data.lazyframe.select(pl.when(supply > 0).then(
            close(pl.col("share_of_supply") * supply, pl.col("held")).fill_null(False))
            .otherwise(pl.col("share_of_supply").is_null()))

    @pa.dataframe_check
    @classmethod
    def the_supply_is_at_least_the_total(cls, data) -> pl.LazyFrame:
        """The supply a share is taken of is the total supply or more, and known exactly when
        the total is."""
        total = pl.col("total_supply")
        return data.lazyframe.select(pl.when(total > 0).then(pl.col("supply") >= total)
                                     .otherwise(pl.col("supply").is_null()).fill_null(False))

    @pa.dataframe_check
    @classmethod
    def one_watermark(cls, data) -> pl.LazyFrame:
        """Every cohort is made as of the same watermark: the cohorts are one run's."""
        return data.lazyframe.select(pl.col("as_of") == pl.col("as_of").first())


# The sums a cohort is made of, checked against its members.
COHORT_SUMS = ("held", "bought_usd", "sold_usd", "realized_usd",
               *(f"net_flow_usd_{w}" for w in PAIR_WINDOWS))


def cohorts_add_up(members: pl.DataFrame, cohorts: pl.DataFrame) -> pl.DataFrame:
    """Cohorts whose count or sums differ from their members', and members of a cohort no
    row carries."""
    summed = members.group_by("chain_id", "token", "cohort").agg(
        members=pl.len(), **{f"{f}_members": pl.col(f).sum() for f in COHORT_SUMS})
    both = cohorts.join(summed, on=["chain_id", "token", "cohort"], how="full", coalesce=True)
    agree = pl.all_horizontal(
        pl.col("wallets").fill_null(0) == pl.col("members").fill_null(0),
        *(close(pl.col(f).fill_null(0), pl.col(f"{f}_members").fill_null(0))
          for f in COHORT_SUMS))
    return both.filter(~agree)

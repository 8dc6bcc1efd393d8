"""The schema of record of every published product; nothing is published that fails one."""

import sys

import pandera.polars as pa
import polars as pl

from checks.outcome import Outcome, validate
from checks.schemas.boards import BoardPair, BoardRow, SeasonBoardRow
from checks.schemas.chains import ChainRecord, Config
from checks.schemas.farms import FarmRow
from checks.schemas.market import (
    HolderBalance,
    HolderChange,
    LiquidityTrade,
    PairDay,
    PairRow,
    RegistryToken,
    ReserveDay,
    SwapLeg,
    TokenBasis,
    TokenRow,
)
from checks.schemas.oracle import OracleFeedRow, OracleHistoryRow
from checks.schemas.perps import LiquidationDay, PerpMarketRow, PerpPoint
from checks.schemas.wallets import (
    BookState,
    CohortMember,
    FundingRow,
    LedgerRow,
    PositionRow,
    RoundRow,
    TokenCohort,
    TokenMark,
    WalletProfile,
    WalletRanking,
    WalletTraits,
    WalletWindow,
)
from core.fingerprints import recipe

PRODUCT_SCHEMAS: dict[str, type[pa.DataFrameModel]] = {
    "chain_records": ChainRecord,
    "config": Config,
    "pair_rows": PairRow,
    "token_basis": TokenBasis,
    "token_rows": TokenRow,
    "registry_tokens": RegistryToken,
    "holder_balances": HolderBalance,
    "holder_changes": HolderChange,
    "reserve_days": ReserveDay,
    "swap_legs": SwapLeg,
    "pair_days": PairDay,
    "liquidity_trades": LiquidityTrade,
    "wallet_ledger": LedgerRow,
    "wallet_book_states": BookState,
    "token_marks": TokenMark,
    "wallet_positions": PositionRow,
    "wallet_rounds": RoundRow,
    "wallet_traits": WalletTraits,
    "wallet_windows": WalletWindow,
    "wallet_funding": FundingRow,
    "wallet_profiles": WalletProfile,
    "wallet_rankings": WalletRanking,
    "cohort_members": CohortMember,
    "token_cohorts": TokenCohort,
    "board_pairs": BoardPair,
    "board_rows": BoardRow,
    "season_boards": SeasonBoardRow,
    "farm_rows": FarmRow,
    "feed_catalog": OracleFeedRow,
    "oracle_history": OracleHistoryRow,
    "perp_list": PerpMarketRow,
    "perp_history": PerpPoint,
    "liquidation_days": LiquidationDay,
}


def rules_of(name: str) -> str:
    """A name for the rules a product is checked by (its schema's module, and this one's): a
    pass recorded under other rules is no pass."""
    return recipe(sys.modules[PRODUCT_SCHEMAS[name].__module__], sys.modules[__name__])


def piece_outcome(name: str, frame: pl.DataFrame) -> Outcome:
    """A product, or a piece of it that no rule spans, checked against its schema of record."""
    return validate(name, PRODUCT_SCHEMAS[name], frame)

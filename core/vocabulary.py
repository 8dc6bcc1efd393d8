"""The interface's closed value sets, shared by the pipeline that publishes /config and the edge
that validates requests, so that /config lists exactly what the service accepts."""

import re

import polars as pl

# An EVM address as a client may spell it: with or without 0x, any case; 32 bytes for a pool
# a singleton holds (a Uniswap V4 pool's id).
EVM_ADDRESS = re.compile(r"(0[xX])?([0-9a-fA-F]{40}|[0-9a-fA-F]{64})")


def address_spellings(q: str) -> list[str]:
    """How an address a client typed is stored: EVM lower-case with 0x, others (base58, which
    is case-sensitive) exactly as given."""
    found = EVM_ADDRESS.fullmatch(q)
    return ["0x" + found.group(2).lower()] if found else [q]

PAIR_WINDOWS = {"m5": 300, "m15": 900, "m30": 1_800, "h1": 3_600, "h6": 21_600, "h24": 86_400}
# The windows v1 named first; the 15- and 30-minute ones came after, as additions.
FIRST_WINDOWS = ("m5", "h1", "h6", "h24")
TIMEFRAMES = list(PAIR_WINDOWS)
RESOLUTIONS = ["1m", "5m", "15m", "1h", "4h", "1d"]
RESOLUTION_SECONDS = {"1m": 60, "5m": 300, "15m": 900, "1h": 3_600, "4h": 14_400, "1d": 86_400}
TX_TYPES = ["buy", "sell", "add", "remove"]
SORT_OPTIONS = ["trending", "volume", "liquidity", "price_change", "txns", "created_at", "fdv",
                "market_cap"]
# Wallet windows and their length in seconds (`all` has no start).
WALLET_WINDOW_SECONDS = {"1d": 86_400, "7d": 604_800, "30d": 2_592_000, "1y": 31_536_000,
                         "all": None}
WALLET_WINDOWS = list(WALLET_WINDOW_SECONDS)
# Capital tiers, largest first: what a wallet's peak capital makes it, and what `tiers` takes.
CAPITAL_TIERS = ["whale", "shark", "dolphin", "fish", "shrimp"]
# Below this many rated positions a win rate says little: win_rate is then 0 (trade_win_rate
# carries the ratio) and sort=win_rate leaves the wallet out.
MIN_RATED_POSITIONS = 5


def wire_time(seconds: pl.Expr) -> pl.Expr:
    """Unix seconds as the wire's ISO 8601 text, second precision."""
    return pl.from_epoch(seconds, "s").dt.strftime(WIRE_TIME)


WIRE_TIME = "%Y-%m-%dT%H:%M:%SZ"
# How far back the oracle's published history reaches from the watermark.
ORACLE_HISTORY_S = 30 * 86_400
VERDICT_STATUSES = ["ok", "watch", "blocked", "unknown"]
# The id a token row carries when the canonical registry does not know the token.
UNKNOWN_TOKEN_ID = "00000000-0000-0000-0000-000000000000"

# Token statuses 999 and 1000 are terminal (spec 3): such a token is condemned whatever its score.
TERMINAL_TOKEN_STATUSES = [999, 1000]
# The owners that mean an ownable contract's owner renounced: the zero address (what
# OpenZeppelin's `renounceOwnership` sets) and the conventional dead address.
RENOUNCED_OWNERS = ("0x0000000000000000000000000000000000000000",
                    "0x000000000000000000000000000000000000dead")
# Where a token's owner came from: an `OwnershipTransferred` log, or `owner()` read at the
# start of a block.
OWNER_SOURCES = ["event", "read"]
# What an owner may do to holders that the service names (docs/market.md, "Ownership"): make
# more of the token, stop its transfers, bar an address, change its taxes, cap what one
# transfer or wallet may move or hold, and turn trading on or off.
OWNER_POWERS = ["mint", "pause", "blacklist", "set_fees", "limit_transfers", "switch_trading"]
# What an owner that keeps a power over holders takes from a token's safety and a pair's score.
OWNER_RISK_POINTS = 15
# Two measures of a token's tax within half a basis point are one tax: a token's own fee
# arithmetic rounds (docs/market.md, "Taxes").
SAME_TAX = 0.00005
# A buy tax at or above this share is a risk signal of the pairs the token is the base of.
HIGH_BUY_TAX = 0.10
# A sell tax at or above this share puts a pair and its base token on watch.
HIGH_SELL_TAX = 0.10
# The factory types whose liquidity is held in positions (NFTs, or a pool manager's ledger)
# rather than as one fungible LP token that can be burned or locked as a whole.
POSITION_BASED = ("concentrated_liquidity",)
# A wallet's ledger sides: a swap's, then a transfer's.
SWAP_SIDES = ("buy", "sell")
TRANSFER_SIDES = ("transfer_in", "transfer_out")
SIDES = (*SWAP_SIDES, *TRANSFER_SIDES)
# A token's trader cohorts (docs/wallets.md, "Cohorts"), in the order they are served, with
# their titles; a wallet may be in several.
COHORTS = {"sniper": "Snipers", "early_buyer": "Early buyers",
           "deployer": "Deployer and the wallets it funded", "top_holder": "Top holders",
           "fresh_wallet": "Fresh wallets", "smart_money": "Smart money", "bot": "Bots"}
# A sniper's first buy is in one of its token's first pool's first blocks (the pool's own
# block and the two after it); early buyers are a token's first buyers; top holders its
# largest; a fresh wallet was first seen at most a day before its first trade of the token.
SNIPE_BLOCKS, EARLY_BUYERS, TOP_HOLDERS, FRESH_SECONDS = 3, 50, 10, 86_400

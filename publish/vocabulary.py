"""The interface's closed value sets, shared by the pipeline that publishes /config and the edge
that validates requests, so that /config lists exactly what the service accepts."""

PAIR_WINDOWS = {"m5": 300, "h1": 3_600, "h6": 21_600, "h24": 86_400}
TIMEFRAMES = list(PAIR_WINDOWS)
RESOLUTIONS = ["1m", "5m", "15m", "1h", "4h", "1d"]
TX_TYPES = ["buy", "sell", "add", "remove"]
SORT_OPTIONS = ["trending", "volume", "liquidity", "price_change", "txns", "created_at", "fdv",
                "market_cap"]
# Wallet windows and their length in seconds (`all` has no start).
WALLET_WINDOW_SECONDS = {"1d": 86_400, "7d": 604_800, "30d": 2_592_000, "1y": 31_536_000,
                         "all": None}
WALLET_WINDOWS = list(WALLET_WINDOW_SECONDS)
VERDICT_STATUSES = ["ok", "watch", "blocked", "unknown"]
# The id a token row carries when the canonical registry does not know the token.
UNKNOWN_TOKEN_ID = "00000000-0000-0000-0000-000000000000"

"""JSON Schemas of what the mounted operations answer, for /openapi.yml."""

from typing import Any

from core.vocabulary import FIRST_WINDOWS, PAIR_WINDOWS

NUMBER, INT, STRING, BOOL = ({"type": "number"}, {"type": "integer"}, {"type": "string"},
                             {"type": "boolean"})


def obj(properties: dict[str, Any], required: list[str] | None = None,
        nullable: bool = False) -> dict[str, Any]:
    """An object schema; every property required unless said otherwise."""
    schema = {"type": ["object", "null"] if nullable else "object", "properties": properties,
              "required": list(properties) if required is None else required}
    return schema


def nullable(schema: dict[str, Any]) -> dict[str, Any]:
    """The schema, or null."""
    return {**schema, "type": [schema["type"], "null"]}


MOVER = obj({"pair_address": STRING, "ticker": STRING, "value": NUMBER}, nullable=True)
CHAIN_RECORD = obj({
    **{k: STRING for k in ("slug", "display_name", "native_address_format", "explorer_url")},
    **{k: INT for k in ("chain_id", "latest_block", "head_block", "block_lag_seconds", "pairs",
                        "txns_24h", "new_pairs_24h", "new_pairs_24h_total", "scams_total",
                        "scams_on_pool", "scams_inherited", "scams_24h", "deployers_total",
                        "new_deployers_24h", "deployer_abusers")},
    "syncing": BOOL, "metrics_stale": BOOL,
    "protocols": {"type": "array", "items": STRING}, "dex_names": {"type": "array", "items": STRING},
    **{k: NUMBER for k in ("liquidity_usd", "volume_24h_usd", "min_liquidity_usd",
                           "quality_liquidity_usd")},
    "gainer": MOVER, "loser": MOVER,
})


def page_of(item: dict[str, Any]) -> dict[str, Any]:
    """The page envelope around `item`."""
    return obj({"items": {"type": "array", "items": item}, "next_cursor": nullable(STRING),
                "prev_cursor": nullable(STRING)}, required=["items", "next_cursor"])


STRINGS = {"type": "array", "items": STRING}
CONFIG = obj({"chains": {"type": "array", "items": CHAIN_RECORD}, "resolutions": STRINGS,
              "tx_types": STRINGS, "sort_options": STRINGS, "timeframes": STRINGS,
              "min_liquidity_usd": NUMBER})
PLAN = {"plan": STRING, "calls_per_minute": INT, "burst": INT, "unit_cu": INT,
        "window_seconds": INT, "max_page_size": INT, "max_leaderboard_page_size": INT,
        "covers": {"oneOf": [STRING, STRINGS]}}
KEY = obj({"key": obj({"id": STRING, "name": STRING, "created_at": STRING}, nullable=True),
           **PLAN, "remaining": nullable(INT)})
HEALTH = obj({"healthy": BOOL}, required=["healthy"])
STATUS = obj({
    "status": {"type": "string", "enum": ["ok", "stale", "degraded", "unavailable"]},
    "snapshot": obj({"id": STRING, "as_of": STRING, "snapshot_at": STRING, "age_seconds": NUMBER},
                    nullable=True),
    "watermark": obj({"as_of": STRING, "trails_now_seconds": NUMBER,
                      "stale_after_seconds": NUMBER, "stale": BOOL}, nullable=True),
    "rejected_snapshot": obj({"snapshot_id": STRING, "error": STRING}, nullable=True),
    "chains": {"type": "array", "items": obj({
        "slug": STRING, "chain_id": INT, "latest_block": INT, "head_block": INT,
        "block_lag_seconds": INT, "syncing": BOOL, "metrics_stale": BOOL,
        "data_lag_seconds": NUMBER,
        "node": obj({"state": {"type": "string", "enum": ["answering", "unreachable"]},
                     "last_error": STRING, "since": STRING, "checked_at": STRING},
                    required=["state"], nullable=True)})},
    "upstreams": {"type": "object", "additionalProperties": {"type": "object"}},
})
REQUIREMENTS = obj({"scheme": STRING, "network": STRING, "asset": STRING, "amount": STRING,
                    "payTo": STRING, "maxTimeoutSeconds": INT, "extra": {"type": "object"}})
X402_OFFER = obj({
    "x402Version": INT,
    "accepts": {"type": "array", "items": {**REQUIREMENTS, "required": [
        "scheme", "network", "asset", "payTo", "maxTimeoutSeconds"]}},
    "pricing": {"type": "object"}, "headers": {"type": "object"}, "settlement": STRING,
    "operations": {"type": "array", "items": obj({"method": STRING, "path": STRING,
                                                  "cost_cu": INT, "amount": STRING})},
})
PAYMENT_REQUIRED = obj({"x402Version": INT, "error": STRING, "resource": {"type": "object"},
                        "accepts": {"type": "array", "items": REQUIREMENTS}},
                       required=["x402Version", "accepts"])
PROBLEM = obj({"type": STRING, "title": STRING, "status": INT, "code": STRING, "detail": STRING,
               "param": STRING, "request_id": STRING},
              required=["type", "title", "status", "code", "detail", "request_id"])

RESPONSES = {
    ("GET", "/chains"): page_of(CHAIN_RECORD),
    ("GET", "/config"): CONFIG,
    ("GET", "/key"): KEY,
    ("GET", "/status"): STATUS,
    ("GET", "/.well-known/x402"): X402_OFFER,
}

NNUM, NSTR, NINT = nullable(NUMBER), nullable(STRING), nullable(INT)
CHAIN_REF = obj({"slug": STRING, "chain_id": INT})
PERP_BLOCK = obj({"max_leverage": NNUM, "only_isolated": nullable(BOOL),
                  **{k: NNUM for k in ("funding_rate", "open_interest", "open_interest_usd",
                                       "mark_price", "oracle_price", "premium",
                                       "day_notional_volume")},
                  "synced_at": NSTR})


def windowed(schema: dict[str, Any]) -> dict[str, Any]:
    """A block per window; the 15- and 30-minute ones optional, as v1's additions."""
    return obj({w: schema for w in PAIR_WINDOWS}, required=list(FIRST_WINDOWS))


PAIR_WINDOW = obj({"price_change_pct": NUMBER, "volume_usd": NUMBER, "buy_volume_usd": NUMBER,
                   "sell_volume_usd": NUMBER, "txns": obj({"buys": INT, "sells": INT}),
                   "buyers": INT, "sellers": INT})
TOKEN_WINDOW = {**PAIR_WINDOW, "properties": {**PAIR_WINDOW["properties"], "makers": INT,
                                              "makers_main_pair_only": BOOL},
                "required": [*PAIR_WINDOW["required"], "makers", "makers_main_pair_only"]}
RANGE = obj({"low": NNUM, "high": NNUM, "low_at": NNUM, "high_at": NNUM})
# How many swaps measured a token's taxes on each side and since when (docs/market.md, "Taxes").
TAX_MEASURED = obj({"buy_swaps": NINT, "buy_since": NSTR, "sell_swaps": NINT,
                    "sell_since": NSTR})
PAIR_ROW = obj({
    "network": CHAIN_REF,
    "dex": obj({"name": NSTR, "factory": STRING, "factory_type": NSTR, "chain_id": INT,
                "lp_token_symbol": NSTR}),
    "pair_address": STRING, "ticker": STRING, "status": STRING,
    "prop_data": obj({
        **{k: BOOL for k in ("is_perp", "is_honeypot", "spot_disabled", "perp_disabled")},
        "buy_tax": NNUM, "sell_tax": NNUM, "liquidity_range": RANGE,
        "perp": {**PERP_BLOCK, "type": ["object", "null"]}}),
    "score": obj({"value": INT, "title": STRING, "updated_at": STRING,
                  "risk_signals": {"type": "array", "items": obj({
                      "kind": STRING, "weight": NUMBER, "group": STRING, "severity": STRING,
                      "observed_at": STRING})}}),
    "deployer": obj({"address": STRING, "tx_hash": STRING, "block_number": INT,
                     "log_index": INT, "reputation": obj({
                         "score": INT, "status": STRING, "pairs_created": INT,
                         "abused_launches": INT, "first_seen_at": STRING})}),
    "security": obj({"burned_pct": NUMBER, "locked_pct": NUMBER, "top_lock_provider": NSTR,
                     "earliest_unlock_at": NSTR, "checked_at": STRING},
                    required=["burned_pct", "checked_at"]),
    "verdict": obj({"status": {"type": "string", "enum": ["ok", "watch", "blocked",
                                                          "unknown"]}}),
    "pair_fee": NUMBER,
    "tokens": {"type": "array", "items": obj({
        **{k: NSTR for k in ("name", "symbol", "status")}, "address": STRING, "chain_id": INT,
        "price_usd": NNUM, "price_native": NNUM, "position": INT, "decimals": NINT,
        "reserve": NNUM, "total_supply": NNUM, "price_range": RANGE})},
    "txn": windowed(obj({"buys": INT, "sells": INT, "buy_volume": NUMBER, "sell_volume": NUMBER,
                         "buyers": INT, "sellers": INT})),
    "volume": windowed(NUMBER),
    "price_change": windowed(NUMBER),
    **{k: NNUM for k in ("liquidity_usd", "liquidity_onchain_usd", "apr", "fees_usd_24h",
                         "price_native")},
    "last_updated_at": STRING, "created_at": STRING, "last_trade_at": NSTR,
    "windows": windowed(PAIR_WINDOW),
    "launchpad": obj({**{k: NSTR for k in ("name", "protocol", "stage", "completed_at",
                                           "migrated_pool")},
                      **{k: NNUM for k in ("progress", "graduation_quote", "graduation_usd")}},
                     required=["name", "protocol", "stage", "completed_at", "migrated_pool"],
                     nullable=True),
    "safety": obj({"is_honeypot": BOOL, "buy_tax": NNUM, "sell_tax": NNUM,
                   "lp_locked_pct": NUMBER, "lp_burned_pct": NUMBER, "score": INT,
                   "labels": STRINGS, "owner_renounced": nullable(BOOL),
                   "tax_measured": TAX_MEASURED},
                  required=["is_honeypot", "lp_burned_pct", "score", "labels"]),
})
DECIMAL = nullable(STRING)
MARKET = obj({
    "observed_at": STRING, "expires_at": STRING,
    "metrics": obj({**{k: DECIMAL for k in ("price_usd", "liquidity_usd", "market_cap_usd",
                                             "fdv_usd", "circulating_supply", "total_supply")},
                    "holders_count": NINT}),
    "windows": windowed(obj({"price_change_percent": DECIMAL, "volume_usd": DECIMAL,
                             "buys": INT, "sells": INT, "transactions": INT})),
    "primary_market": obj({"chain_id": INT, "pair_address": NSTR, "dex_id": NSTR,
                           "liquidity_usd": DECIMAL}),
}, nullable=True)
INSTANCE = obj({"id": STRING, "chain_id": INT, "address": STRING, "decimals": INT,
                "status": STRING, "risk_score": INT, "contract_verified": nullable(BOOL),
                "market": MARKET})
REGISTRY_PART = {"id": {"type": "string", "format": "uuid"}, "slug": NSTR, "symbol": NSTR,
                 "name": NSTR, "description": NSTR, "status": NSTR, "category": NSTR,
                 "confidence": INT, "rank": NINT, "logo_url": NSTR}
# Who owns a token and what its owner may still do (docs/market.md, "Ownership"); null where
# nothing says.
OWNERSHIP = obj({"ownable": BOOL, "owner": NSTR, "renounced": BOOL, "renounced_at": NSTR,
                 "owner_since": NSTR, "previous_owner": NSTR, "powers": nullable(STRINGS),
                 "risk": BOOL}, nullable=True)
TOKEN_ROW = obj({
    **REGISTRY_PART, "chain": CHAIN_REF, "address": STRING,
    **{k: INT for k in ("decimals", "score", "txns_24h", "pairs_count", "holders")},
    "categories": STRINGS,
    **{k: NNUM for k in ("price_usd", "price_change_1h", "price_change_6h", "price_change_24h",
                         "volume_24h", "liquidity_usd", "fdv_usd", "market_cap_usd",
                         "total_supply", "max_supply", "circulating_supply")},
    "market_cap_estimated": BOOL, "launched_at": NSTR,
    "rating": obj({k: INT for k in ("score", "safety", "liquidity", "activity", "holders",
                                    "age_info")}),
    "main_pair": obj({"address": NSTR, "ticker": NSTR}),
    "launch": obj({"deployer": STRING, "tx_hash": STRING, "block_number": INT,
                   "deployed_at": STRING}),
    "windows": windowed(TOKEN_WINDOW),
    "holder_stats": obj({"count": INT, "top10_pct": NUMBER, "updated_at": STRING}),
    "ownership": OWNERSHIP,
    "taxes": obj({"buy_tax": NNUM, "sell_tax": NNUM, "measured": TAX_MEASURED}),
    "honeypot": obj({"result": STRING, "tested_at": STRING, "buy_tax": NNUM, "sell_tax": NNUM,
                     "failed_step": NSTR}, nullable=True),
    "profile": obj({"image_url": NSTR, "websites": STRINGS,
                    "socials": obj({k: STRINGS for k in ("twitter", "telegram", "discord",
                                                         "github", "docs")}),
                    "verified": BOOL, "verification_tier": STRING, "verified_by": STRINGS}),
    "verdict": obj({"status": STRING}),
    "market": MARKET, "instances": {"type": "array", "items": INSTANCE},
    "launchpad": nullable({"type": "object"}),
}, required=["id", "chain", "address", "score", "verdict", "windows", "rating"])
REGISTRY_TOKEN = obj({**REGISTRY_PART, "market": MARKET,
                      "instances": {"type": "array", "items": INSTANCE}})
LIST_FIELDS = {"applied_sort": STRING, "applied_timeframe": STRING, "excluded_chains": STRINGS}


def listed(item: dict[str, Any], extra: dict[str, Any]) -> dict[str, Any]:
    """A page envelope with the fields a list adds."""
    page = page_of(item)
    return {**page, "properties": {**page["properties"], **extra},
            "required": [*page["required"], *extra]}


PAIR_TRADE = obj({
    "timestamp": STRING, "hash": STRING, "chain_id": INT, "maker_address": STRING,
    "from_address": STRING, "to_address": STRING, "tx_type": STRING,
    "block_info": obj({"block_number": INT, "log_index": INT, "gas_used": NINT,
                       "fee_usd": NNUM}),
    "event_data": obj({k: NNUM for k in ("amount0", "amount1", "price0", "price1",
                                         "price_usd0", "price_usd1")}),
})
CANDLES = obj({"chain": CHAIN_REF, "pair_address": STRING, "resolution": STRING, "from": INT,
               "to": INT, "items": {"type": "array", "items": obj({
                   "timestamp": STRING, "time": INT,
                   **{k: NUMBER for k in ("open", "high", "low", "close", "volume_usd")},
                   **{k: INT for k in ("trades", "buys", "sells")}})}})
HOLDER = obj({"address": STRING, "balance": NUMBER, "share_pct": NNUM, "rank": INT})
SEARCH = obj({
    "tokens": {"type": "array", "items": obj({
        **{k: NSTR for k in ("address", "network", "symbol", "name", "logo_url")},
        "price_usd": NNUM, "price_change_24h": NNUM})},
    "pairs": {"type": "array", "items": obj({
        **{k: NSTR for k in ("pair_address", "network", "ticker", "base_symbol",
                             "quote_symbol", "dex_name")},
        **{k: NNUM for k in ("liquidity_usd", "price_usd", "price_change_24h")}})}})


def batch_of(name: str, item: dict[str, Any]) -> dict[str, Any]:
    """A batch answer: every item asked, in order, found or not."""
    return obj({"items": {"type": "array", "items": obj({
        "chain": STRING, "address": STRING, "found": BOOL, name: nullable(item)})}})


BRIEF = obj({"token": TOKEN_ROW, "verdict": obj({"status": STRING}),
             "pairs": {"type": "array", "items": PAIR_ROW},
             "holders": obj({"count": INT, "top10_pct": NUMBER, "updated_at": STRING,
                             "top": {"type": "array", "items": HOLDER}}),
             "trades": {"type": "array", "items": PAIR_TRADE},
             "candles": obj({"resolution": STRING, "items": CANDLES["properties"]["items"]}),
             "as_of": STRING})
HEX = {"type": "string", "pattern": "^0x[0-9a-f]*$"}
SIGNED = {"typed_data": obj({"types": {"type": "object"}, "primaryType": STRING,
                             "domain": obj({"name": STRING, "version": STRING}),
                             "message": {"type": "object"}}),
          "digest": HEX, "signer": STRING, "signature": HEX}
VERDICT_HEAD = {"chain": STRING, "chain_id": INT, "address": STRING,
                "verdict": obj({"status": STRING}), "epoch": INT, "snapshot_id": STRING,
                "as_of": STRING}
VERDICT = obj({**VERDICT_HEAD, "listed": BOOL, "leaf_index": NINT, **SIGNED})
PROOF = obj({**VERDICT_HEAD, "leaf": HEX, "leaf_index": INT,
             "proof": {"type": "array", "items": HEX}, "root": HEX, "leaves": INT,
             "root_signed": obj(SIGNED)})
CHAIN_PATH = "/chains/{chain}"
RESPONSES.update({
    ("GET", "/trending"): listed(PAIR_ROW, LIST_FIELDS),
    ("GET", "/pairs"): listed(PAIR_ROW, LIST_FIELDS),
    ("GET", "/pairs/new"): page_of(PAIR_ROW),
    ("POST", "/pairs/batch"): batch_of("pair", PAIR_ROW),
    ("GET", "/tokens"): listed(TOKEN_ROW, {"includes": obj({"instances": BOOL,
                                                             "market": BOOL})}),
    ("GET", "/launchpads/tokens"): page_of(TOKEN_ROW),
    ("GET", "/deployers/{address}/tokens"): page_of(TOKEN_ROW),
    ("GET", "/tokens/{id}"): REGISTRY_TOKEN,
    ("GET", "/tokens/by-slug/{slug}"): REGISTRY_TOKEN,
    ("POST", "/tokens/batch"): batch_of("token", TOKEN_ROW),
    ("GET", "/search"): SEARCH,
    ("GET", CHAIN_PATH + "/pairs/{address}"): PAIR_ROW,
    ("GET", CHAIN_PATH + "/pairs/{address}/trades"): page_of(PAIR_TRADE),
    ("GET", CHAIN_PATH + "/pairs/{address}/candles"): CANDLES,
    ("GET", CHAIN_PATH + "/tokens/{address}"): TOKEN_ROW,
    ("GET", CHAIN_PATH + "/tokens/{address}/pairs"): page_of(PAIR_ROW),
    ("GET", CHAIN_PATH + "/tokens/{address}/holders"): page_of(HOLDER),
    ("GET", CHAIN_PATH + "/tokens/{address}/brief"): BRIEF,
    ("GET", CHAIN_PATH + "/tokens/{address}/verdict"): VERDICT,
    ("GET", CHAIN_PATH + "/tokens/{address}/proof"): PROOF,
})
LABEL = obj({"kind": INT, "name": STRING, "confidence": NUMBER, "token_address": NSTR})
LABELS = {"type": "array", "items": LABEL}
METRICS = obj({"window": STRING, "profit_factor": NNUM,
               **{k: NUMBER for k in (
                   "realized_pnl_usd", "unrealized_pnl_usd", "total_pnl_usd", "rated_pnl_usd",
                   "gross_profit_usd", "gross_loss_usd", "invested_usd", "volume_usd", "roi",
                   "win_rate", "trade_win_rate", "median_roi", "avg_trade_usd")},
               **{k: INT for k in (
                   "avg_hold_seconds", "trades", "winning_trades", "losing_trades",
                   "tokens_traded", "closed_positions", "open_positions", "rated_positions",
                   "excluded_transfer_only", "excluded_untracked", "excluded_no_outcome")}})
USER_SCORE = obj({"value": INT, "status": STRING})
SCAMMER_SCORE = obj({"value": INT, "band": STRING})
SIGNAL = obj({**{k: STRING for k in ("kind", "title", "detail", "subject", "last_seen",
                                     "direction", "target")},
              "points": NUMBER, "occurrences": INT})
WALLET = obj({
    "address": STRING, "chain": CHAIN_REF, "tier": STRING, "type": STRING, "labels": LABELS,
    **{k: BOOL for k in ("human_known", "rebuild_skipped", "copy_eligible", "age_is_estimated")},
    "rebuild_skip_reason": STRING, "cluster_id": INT,
    **{k: STRING for k in ("first_seen_at", "first_onchain_at", "last_active_at")},
    "user_score": USER_SCORE, "scammer_score": SCAMMER_SCORE,
    "signals": {"type": "array", "items": SIGNAL},
    "metrics": {"type": "array", "items": METRICS}})
WALLET_ITEM = obj({"address": STRING, "chain": CHAIN_REF, "tier": STRING, "type": STRING,
                   "labels": LABELS, "copy_eligible": BOOL, "user_score": USER_SCORE,
                   "scammer_score": SCAMMER_SCORE, "metrics": METRICS})
WALLET_PAGE = obj({"items": {"type": "array", "items": WALLET_ITEM},
                   "next_cursor": nullable(STRING)})
FLOWS = {**{k: INT for k in ("buys", "sells", "transfers_in", "transfers_out")},
         **{k: NUMBER for k in ("bought_qty", "sold_qty", "held", "bought_usd", "sold_usd",
                                "cost_in_usd", "open_cost_usd", "realized_usd",
                                "cost_closed_usd", "realized_roi")},
         "avg_entry_price_usd": NNUM, "avg_exit_price_usd": NNUM,
         "token_address": STRING, "token_symbol": NSTR, "basis_is_incomplete": BOOL,
         "is_open": BOOL}
POSITION = obj({**FLOWS, "mark_usd": NNUM, "value_usd": NUMBER, "unrealized_usd": NUMBER,
                "total_pnl_usd": NUMBER, "rounds": INT, "tracked": BOOL, "token_score": INT,
                "token_status": INT, "condemned": BOOL, "first_trade_at": STRING,
                "last_trade_at": STRING})
ROUND = obj({**FLOWS, "round": INT, "hold_seconds": INT, "closed_by_sell": nullable(BOOL),
             "opened_at": STRING, "closed_at": NSTR})
WALLET_TRADE = obj({
    **{k: STRING for k in ("trade_uid", "token_address", "side", "timestamp")},
    "token_symbol": NSTR, "pair_address": NSTR, "qty": NUMBER, "price_usd": NNUM,
    "notional_usd": NNUM, "fee_usd": NNUM, "fee_is_estimated": BOOL, "block_number": INT})
CHART = obj({"window": STRING, "points": {"type": "array", "items": obj({
    "timestamp": STRING, **{k: NUMBER for k in ("realized_usd", "cumulative_usd", "cost_usd",
                                                 "roi", "cumulative_roi")},
    "wins": INT, "losses": INT})}})
FUNDED = {"amount": NUMBER, "amount_usd": NNUM, "labels": LABELS}
FUNDING = obj({"address": STRING, "chain": CHAIN_REF, "first_funding": obj(
    {"funder": STRING, "at": STRING, "tx_hash": STRING, **FUNDED}, nullable=True),
    "funders": {"type": "array", "items": obj({"funder": STRING, "transfers": INT,
                                               "first_at": STRING, "last_at": STRING,
                                               **FUNDED})},
    "cluster_id": INT, "cluster_size": INT})
MONEY = {k: NUMBER for k in ("realized_pnl_usd", "total_pnl_usd")}
OVERVIEW = obj({
    "address": STRING, "window": STRING, "profiles": {"type": "array", "items": WALLET},
    "per_chain": {"type": "array", "items": obj({"chain": CHAIN_REF, "stale": BOOL, **MONEY,
                                                 "share_of_total": NUMBER})},
    "most_profitable_chain": nullable(CHAIN_REF),
    "unavailable_chains": {"type": "array", "items": CHAIN_REF},
    "stale_chains": {"type": "array", "items": CHAIN_REF},
    "lifetime": obj({**{k: NUMBER for k in ("deployed_usd", "gross_bought_usd", "gross_sold_usd",
                                            "unrealized_pnl_usd")}, **MONEY,
                     "unrealized_available": BOOL})})
TRADER = obj({**{k: STRING for k in ("address", "first_trade_at", "last_trade_at")},
              "tier": NSTR, "type": NSTR,
              **{k: NUMBER for k in ("realized_pnl_usd", "unrealized_pnl_usd", "total_pnl_usd",
                                     "bought_usd", "sold_usd", "volume_usd", "held")},
              **{k: INT for k in ("buys", "sells", "trades")}, "basis_is_incomplete": BOOL})
COHORT = obj({"cohort": STRING, "title": STRING, "wallets": INT, "held": NUMBER,
              "share_of_supply": NNUM, "bought_usd": NUMBER, "sold_usd": NUMBER,
              "realized_pnl_usd": NUMBER, "net_flow_usd": obj({w: NUMBER for w in PAIR_WINDOWS})})
COHORTS = obj({"chain": CHAIN_REF, "token": STRING, "as_of": STRING,
               "items": {"type": "array", "items": COHORT}})
COUNTS = {"type": "object", "additionalProperties": INT}
WALLET_STATS = obj({"chain": CHAIN_REF, "window": STRING, "wallets": INT, "active": INT,
                    "by_type": COUNTS, "by_tier": COUNTS, "profitable": INT,
                    "profitable_share": NUMBER, "median_total_pnl_usd": NUMBER,
                    "volume_usd": NUMBER, "realized_pnl_usd": NUMBER, "copy_eligible": INT,
                    "as_of": STRING})
LABEL_BATCH = obj({"items": {"type": "array", "items": obj({
    "address": STRING, "tier": STRING, "labels": LABELS, "copy_eligible": BOOL,
    "user_score": INT})}})
WALLET_PATH = CHAIN_PATH + "/wallets/{address}"
RESPONSES.update({
    ("GET", "/wallets"): WALLET_PAGE,
    ("GET", "/wallets/stats"): WALLET_STATS,
    ("GET", "/wallets/{address}/overview"): OVERVIEW,
    ("POST", "/wallets/labels/batch"): LABEL_BATCH,
    ("GET", WALLET_PATH): WALLET,
    ("GET", WALLET_PATH + "/positions"): obj({"items": {"type": "array", "items": POSITION}}),
    ("GET", WALLET_PATH + "/rounds"): obj({"items": {"type": "array", "items": ROUND}}),
    ("GET", WALLET_PATH + "/best-trades"): obj({"window": STRING,
                                                "items": {"type": "array", "items": ROUND}}),
    ("GET", WALLET_PATH + "/trades"): obj({"items": {"type": "array", "items": WALLET_TRADE},
                                           "next_cursor": nullable(STRING)}),
    ("GET", WALLET_PATH + "/chart"): CHART,
    ("GET", WALLET_PATH + "/funding"): FUNDING,
    ("GET", CHAIN_PATH + "/tokens/{address}/traders"): page_of(TRADER),
    ("GET", CHAIN_PATH + "/tokens/{address}/cohorts"): COHORTS,
})
GROWTH = obj({"available": BOOL, "volume": NUMBER, "liquidity": NUMBER, "reason": STRING})
BOARD_ROW = obj({
    **{k: STRING for k in ("key", "display_name", "data_state", "exclusion_reason", "category")},
    "infra": STRINGS, "chain": CHAIN_REF, "rank": INT, "rank_change_24h": INT, "badges": STRINGS,
    "dimensions": {"type": "object", "additionalProperties": NUMBER},
    "metrics": obj({
        **{k: NUMBER for k in ("volume_24h", "buy_volume_24h", "liquidity", "quality_liquidity",
                               "volume_share", "liquidity_share", "capital_efficiency",
                               "risk_rate", "smoothed_risk", "wash_rate", "liquidity_coverage",
                               "hosted_volume_24h")},
        **{k: INT for k in ("pairs", "tradable_pairs", "active_pairs", "priced_pairs",
                            "new_pairs_24h", "scam_pairs", "txns_24h", "buyers_24h")},
        "has_capital_efficiency": BOOL, "growth_24h": GROWTH, "growth_7d": GROWTH},
        nullable=True),
    "season_metrics": obj({**{k: NUMBER for k in ("volume", "buy_volume", "liquidity_last",
                                                  "liquidity_peak", "quality_liquidity")},
                           **{k: INT for k in ("txns", "buyers", "new_pairs")}}),
})
BOARD = obj({"scope": STRING, "snapshot_at": STRING, "methodology_version": INT,
             "population": INT,
             "season": obj({"number": INT, "starts_at": STRING, "ends_at": STRING, "live": BOOL,
                            "length_days": INT, "latest": INT}),
             "items": {"type": "array", "items": BOARD_ROW},
             "excluded": {"type": "array", "items": BOARD_ROW}})
APRS = obj({"base_apr": NSTR, "lp_reward_apr": NSTR})
FARM = obj({"network": CHAIN_REF, "address": STRING, "pid": INT, "ticker": NSTR, "tvl": NSTR,
            "reward_token": obj({"address": STRING, "name": NSTR, "symbol": NSTR,
                                 "chain_id": INT}),
            "apr_year": APRS, "apr_daily": APRS,
            "factory": obj({"address": STRING, "name": STRING}),
            "updated_at": STRING, "status": STRING, "lifecycle_state": STRING,
            "data_quality_flags": STRINGS})
PERP_MARKET = obj({"chain": CHAIN_REF, "pair_address": STRING, "symbol": STRING,
                   "venue": obj({"id": STRING, "name": NSTR}), "base_feed_id": STRING,
                   "listed_at": STRING, "perp": PERP_BLOCK})
PERP_POINT = obj({"timestamp": STRING, "mark_price": NUMBER, "oracle_price": NUMBER,
                  "premium": NUMBER, **{k: NNUM for k in ("oi_usd", "oi_long_usd",
                                                          "oi_short_usd")},
                  **{k: NUMBER for k in ("funding_long_1h", "funding_short_1h",
                                         "borrow_long_1h", "borrow_short_1h")},
                  "oi_known": BOOL})
LIQUIDATION_DAY = obj({"day": STRING, "liquidated_long_usd": NUMBER,
                       "liquidated_short_usd": NUMBER, "max_liquidation_usd": NUMBER,
                       "long_count": INT, "short_count": INT})
RESPONSES.update({
    ("GET", "/leaderboard"): BOARD,
    ("GET", "/farms"): page_of(FARM),
    ("GET", CHAIN_PATH + "/farms/{address}"): FARM,
    ("GET", "/perps"): page_of(PERP_MARKET),
    ("GET", "/perps/{market}/history"): obj({"chain": STRING, "market": STRING,
                                             "interval": STRING,
                                             "items": {"type": "array", "items": PERP_POINT}}),
    ("GET", "/perps/liquidations"): obj({"chain": STRING, "market": NSTR, "stale": BOOL,
                                         "items": {"type": "array",
                                                   "items": LIQUIDATION_DAY}}),
})
PRICE_PART = obj({"price": STRING, "conf": STRING, "expo": INT, "publish_time": INT})
PARSED_UPDATE = obj({"id": STRING, "price": PRICE_PART, "ema_price": PRICE_PART,
                     "metadata": obj({"slot": INT, "proof_available_time": INT,
                                      "prev_publish_time": INT})})
PRICE_UPDATE = obj({"binary": obj({"encoding": STRING, "data": STRINGS}),
                    "parsed": {"type": "array", "items": PARSED_UPDATE}}, required=["binary"])
MARKET_HOURS = obj({"is_open": BOOL, "next_open": NSTR, "next_close": NSTR})
FEED = obj({"id": STRING, "attributes": {"type": "object", "additionalProperties": STRING,
                                         "required": ["asset_type", "base", "description",
                                                      "display_symbol", "quote_currency",
                                                      "schedule", "symbol", "min_channel",
                                                      "oracle_id"]},
            "market_hours": MARKET_HOURS})
ORACLE_PRICE = obj({k: STRING for k in ("id", "price", "conf", "ema_price", "publish_time")})
ORACLE_PRICES = obj({"items": {"type": "array", "items": ORACLE_PRICE}})
NATIVE_FEED = obj({**{k: STRING for k in ("id", "symbol", "asset_type", "base",
                                          "quote_currency", "description", "display_symbol",
                                          "schedule")},
                   "compatible_id": NSTR, "expo": INT, "market_hours": MARKET_HOURS,
                   "price": {**ORACLE_PRICE, "type": ["object", "null"]}})
CANDLE = obj({"timestamp": STRING, **{k: NUMBER for k in ("open", "high", "low", "close")},
              "updates": INT})
RESPONSES.update({
    ("GET", "/v2/updates/price/latest"): PRICE_UPDATE,
    ("GET", "/v2/updates/price/{publish_time}"): PRICE_UPDATE,
    ("GET", "/v2/updates/price/stream"): PRICE_UPDATE,
    ("GET", "/v2/price_feeds"): {"type": "array", "items": FEED},
    ("GET", "/v2/price_feeds/{id}"): FEED,
    ("GET", "/prices"): ORACLE_PRICES,
    ("GET", "/prices/at"): ORACLE_PRICES,
    ("GET", "/v1/feeds"): obj({"items": {"type": "array", "items": NATIVE_FEED}}),
    ("GET", "/v1/status"): obj({"upstream": {"type": "object"}, "catalog": obj({
        "feeds": INT, "live": INT}), "history": obj({"from": STRING, "to": STRING,
                                                     "updates": INT}),
        "snapshot_id": STRING}),
    ("GET", "/v1/candles"): obj({"id": STRING, "symbol": STRING, "resolution": STRING,
                                 "items": {"type": "array", "items": CANDLE}}),
})
# Operations that answer with a stream: the media type, and the schema of each event's data.
STREAMS = {("GET", path): "text/event-stream" for path in (
    "/v2/updates/price/stream", "/pairs/new/stream", "/chains/{chain}/pairs/{address}/stream")}

"""JSON Schemas of what the mounted operations answer, for /openapi.yml."""

NUMBER, INT, STRING, BOOL = ({"type": "number"}, {"type": "integer"}, {"type": "string"},
                             {"type": "boolean"})


def obj(properties: dict, required: list[str] | None = None, nullable: bool = False) -> dict:
    """An object schema; every property required unless said otherwise."""
    schema = {"type": ["object", "null"] if nullable else "object", "properties": properties,
              "required": list(properties) if required is None else required}
    return schema


def nullable(schema: dict) -> dict:
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


def page_of(item: dict) -> dict:
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
    "status": {"type": "string", "enum": ["ok", "degraded", "unavailable"]},
    "snapshot": obj({"id": STRING, "as_of": STRING, "snapshot_at": STRING, "age_seconds": NUMBER},
                    nullable=True),
    "chains": {"type": "array", "items": obj({
        "slug": STRING, "chain_id": INT, "latest_block": INT, "head_block": INT,
        "block_lag_seconds": INT, "syncing": BOOL, "metrics_stale": BOOL})},
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

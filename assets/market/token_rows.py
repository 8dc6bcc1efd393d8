"""Token market rows (spec 2.2): one row per token per chain over all its pairs, with the
registry part, the market blocks and the token verdict (the figures: core.token_market), and
the registry tokens."""

from datetime import datetime

import polars as pl

from core.quotes import oracle_changes
from core.token_market import KEY, token_market
from figures.honeypot import last_honeypot_tests
from figures.ownership import token_owners
from figures.taxes import token_taxes


def holder_stats(balances: pl.LazyFrame) -> pl.LazyFrame:
    """Per token: how many addresses hold it and what the ten largest hold together."""
    return (balances.group_by("chain_id", "token").agg(
                holders=pl.len().cast(pl.Int64), top10=pl.col("balance").top_k(10).sum())
            .rename({"token": "address"}))


def token_basis(frames: dict[str, pl.LazyFrame]) -> pl.LazyFrame:
    """Per token of every chain: what its row takes from its contract, the registry, its
    profile and its holders; the part of the row no trade changes, which the edge's live rows
    share with the batch's."""
    tokens = frames["tokens"].select(
        "chain_id", "address", "symbol", "name", "decimals", "deployer", "deploy_tx",
        "deploy_block", "deployed_at", "contract_verified", "honeypot_test", "categories",
        "price_feed_id", "owner_powers", token_status="status",
        **{f"{s}_supply": pl.col(f"{s}_supply_raw").cast(pl.Float64)
           / pl.lit(10.0).pow(pl.col("decimals")) for s in ("total", "max", "circulating")})
    registry = (frames["token_instances"]
                .join(frames["token_registry"], on="token_id")
                .select("chain_id", "address", "token_id", "instance_id", registry_slug="slug",
                        registry_symbol="symbol", registry_name="name", description="description",
                        registry_status="status", category="category", confidence="confidence",
                        rank="rank", logo_url="logo_url"))
    return (tokens.join(frames["chains"].select("chain_id", "slug"), on="chain_id", how="left")
            .join(holder_stats(frames["holder_balances"]), on=KEY, how="left")
            .join(registry, on=KEY, how="left")
            .join(frames["token_profiles"], on=KEY, how="left")
            .join(token_owners(frames["tokens"], frames["ownership"]).drop("owner_powers"),
                  on=KEY, how="left")
            .join(token_taxes(frames["tokens"], frames["token_taxes"]), on=KEY, how="left")
            .join(last_honeypot_tests(frames["honeypot_tests"]), on=KEY, how="left"))


def assemble_tokens(frames: dict[str, pl.LazyFrame], as_of: datetime) -> pl.DataFrame:
    """Every token market row (see `token_market`) from the batch's products."""
    return token_market(frames["token_basis"], frames["pair_rows"], frames["token_activity"],
                        oracle_changes(frames["quote_prices"], as_of), as_of)


def assemble_registry(registry: pl.LazyFrame, rows: pl.DataFrame) -> pl.DataFrame:
    """One row per registry token (served by id and by slug): the registry part with its
    market block and instances, taken from the token rows of its chains."""
    blocks = (rows.filter(pl.col("token_id").is_not_null())
              .group_by("token_id").agg(pl.col("market").first(), pl.col("instances").first()))
    joined = registry.collect().join(blocks, on="token_id", how="left")
    item = pl.struct(id="token_id", slug="slug", symbol="symbol", name="name",
                     description="description", status="status", category="category",
                     confidence="confidence", rank="rank", logo_url="logo_url",
                     market=pl.lit("@MARKET@"), instances=pl.lit("@INSTANCES@"))
    text = (item.struct.json_encode()
            .str.replace('"@MARKET@"', pl.col("market").fill_null("null"), literal=True)
            .str.replace('"@INSTANCES@"', pl.col("instances").fill_null("[]"), literal=True))
    return joined.select("token_id", "slug", item=text).sort("token_id")

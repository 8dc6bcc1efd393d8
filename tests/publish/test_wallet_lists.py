"""A ranking row's list item (spec 2.5), put together from its stored parts, by hand."""

import orjson
import polars as pl

from publish.wallet_rankings import METRIC_COUNTS, METRIC_FIGURES, ranking_items


def test_a_ranking_item_is_the_wallet_parts_and_the_window_record() -> None:
    figures = {name: float(i) for i, name in enumerate(METRIC_FIGURES)}
    figures["profit_factor"] = None
    counts = {name: 100 + i for i, name in enumerate(METRIC_COUNTS)}
    row = pl.DataFrame([{
        "window": "7d", **figures, **counts, "tier": "fish", "type": "trader",
        "copy_eligible": True, "item_address": '"0xab"',
        "item_chain": '{"slug":"base","chain_id":8453}',
        "item_labels": '[{"kind":8,"name":"Sniper"}]',
        "item_user_score": '{"value":37,"status":"capped"}',
        "item_scammer_score": '{"value":0,"band":"none"}'}],
        schema_overrides={"profit_factor": pl.Float64})
    item = ranking_items(row).item()
    assert item.startswith('{"address":"0xab","chain":{"slug":"base"')
    assert orjson.loads(item) == {
        "address": "0xab", "chain": {"slug": "base", "chain_id": 8453}, "tier": "fish",
        "type": "trader", "labels": [{"kind": 8, "name": "Sniper"}], "copy_eligible": True,
        "user_score": {"value": 37, "status": "capped"},
        "scammer_score": {"value": 0, "band": "none"},
        "metrics": {"window": "7d", **figures, **counts}}
    # The record keeps the spec's order: the window, the figures, then the counts.
    assert list(orjson.loads(item)["metrics"]) == ["window", *METRIC_FIGURES, *METRIC_COUNTS]

"""A profile's JSON is its stored head with the wallet's metrics records added last; a snapshot
of the older layout is unavailable until the next publish."""

import orjson
import polars as pl
import pytest

from edge.problems import ApiError
from edge.routes.wallets import profiles, with_metrics
from publish.snapshot import Manifest, Part, Snapshot


def test_the_metrics_records_follow_the_head_in_the_order_given() -> None:
    head = '{"address":"0xab","labels":[],"signals":[{"kind":"roi"}]}'
    records = ['{"window":"1d","trades":2}', '{"window":"7d","trades":5}']
    body = with_metrics(head, records)
    assert body == ('{"address":"0xab","labels":[],"signals":[{"kind":"roi"}],'
                    '"metrics":[{"window":"1d","trades":2},{"window":"7d","trades":5}]}')
    assert list(orjson.loads(body)) == ["address", "labels", "signals", "metrics"]


def test_profiles_of_an_older_layout_are_unavailable_not_a_server_error() -> None:
    older = Snapshot(Manifest("s-older", "2026-11-01T00:00:00Z", "2026-11-01T00:01:00Z"), {},
                     {"wallet_profiles": [Part("objects/p.parquet", pl.DataFrame({
                         "chain_id": [1], "wallet": ["0xab"], "item": ['{"address":"0xab"}']}))]})
    with pytest.raises(ApiError) as raised:
        profiles(older)
    assert raised.value.code == "upstream_unavailable"

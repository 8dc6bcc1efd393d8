"""A profile's JSON is its stored head with the wallet's metrics records added last."""

import orjson

from edge.routes.wallets import with_metrics


def test_the_metrics_records_follow_the_head_in_the_order_given() -> None:
    head = '{"address":"0xab","labels":[],"signals":[{"kind":"roi"}]}'
    records = ['{"window":"1d","trades":2}', '{"window":"7d","trades":5}']
    body = with_metrics(head, records)
    assert body == ('{"address":"0xab","labels":[],"signals":[{"kind":"roi"}],'
                    '"metrics":[{"window":"1d","trades":2},{"window":"7d","trades":5}]}')
    assert list(orjson.loads(body)) == ["address", "labels", "signals", "metrics"]

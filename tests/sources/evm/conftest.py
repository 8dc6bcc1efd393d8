"""A fresh anvil node per test (ended by its PID), and a V2 market deployed on it."""

import pytest

from core.feeds import FEED_BY_BASE
from sources.evm.devnet import Devnet, start_node, v2_market
from sources.evm.rpc import Rpc

ETH_FEED = FEED_BY_BASE["ETH"].feed_id


@pytest.fixture
def node():
    started = start_node()
    yield started
    started.stop()
    assert started.process.poll() is not None


@pytest.fixture
def market(node):
    net = Devnet(node.url)
    yield v2_market(net)
    net.close()


@pytest.fixture
def rpc(node):
    """Opens clients of the node, closed when the test ends."""
    opened: list[Rpc] = []

    def open_one(url: str | None = None) -> Rpc:
        opened.append(Rpc(url or node.url))
        return opened[-1]

    yield open_one
    for client in opened:
        client.close()

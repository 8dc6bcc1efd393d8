"""One anvil node per test module with a V2 market deployed on it; each test starts from that
state (an `evm_snapshot` taken before it, reverted after it) and the node ends with the module
(by its PID)."""

import pytest

from sources.evm.devnet import Devnet, start_node, v2_market
from sources.evm.rpc import Rpc


@pytest.fixture(scope="module")
def _module_node():
    started = start_node()
    yield started
    started.stop()
    assert started.process.poll() is not None


@pytest.fixture(scope="module")
def _deployed(_module_node):
    net = Devnet(_module_node.url)
    yield v2_market(net)
    net.close()


@pytest.fixture
def node(_module_node, _deployed):
    """The module's node as the market's deploy left it, put back so after the test."""
    with Rpc(_module_node.url) as rpc:
        taken = rpc.call("evm_snapshot")
        yield _module_node
        assert rpc.call("evm_revert", taken)


@pytest.fixture
def market(node, _deployed):
    return _deployed


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

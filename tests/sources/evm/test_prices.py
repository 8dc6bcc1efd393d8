"""A real chain's prices into the lake: Chainlink's MockV3Aggregator (from the npm package
`@chainlink/contracts`) answered by test transactions, and a peg. Each round is an update at
its round's time saying its source, recorded with the block that set it; a range read again
changes nothing; a reorg that replaces an answer corrects it and keeps the rounds before it; a
follower starting after the last answer takes the answer in force, at the block before its
first."""

import hashlib

import yaml

from sources.evm.config import parse
from sources.evm.devnet import V2Market
from sources.evm.ingest import Follower
from sources.evm.rpc import quantity
from sources.lake import LakeWriter

E8 = 10**8


def feed(kind: str, key: str) -> str:
    return hashlib.sha256(f"{kind}:31337:{key}".encode()).hexdigest()


def block_time(market: V2Market, block: int) -> int:
    return quantity(market.net.rpc.call("eth_getBlockByNumber", hex(block), False)["timestamp"])


def later(market: V2Market, seconds: int = 60) -> None:
    """The next block comes `seconds` after the last (answers in one second would be one)."""
    market.net.rpc.call("evm_increaseTime", seconds)


def follow(market: V2Market, rpc, lake: LakeWriter, peg: str | None = None, **kw) -> Follower:
    document = yaml.safe_load(market.venues_file())
    if peg is not None:
        document["quotes"].append({"token": peg, "peg": 1})
    return Follower.open(rpc(), parse(document), lake, confirmations=0, **kw)


def updates(lake: LakeWriter) -> list[tuple]:
    return lake.read("oracle_updates").sort("feed_id", "publish_time").select(
        "feed_id", "publish_time", "price", "expo", "slot", "prev_publish_time", "source").rows()


def test_each_answer_is_an_update_at_its_rounds_time(market, rpc, tmp_path):
    usdc = market.token("USD Coin", "USDC", 10**12, decimals=6)
    later(market)
    first = market.answer(3_100 * E8)
    later(market)
    second = market.answer(2_950 * E8)
    lake = LakeWriter(tmp_path / "lake")
    follow(market, rpc, lake, peg=usdc).run()

    eth = feed("chainlink", market.aggregator)
    # The aggregator's constructor answered 3,000 in the deploy's second block; one batch read
    # every block up to the second answer's.
    b1, b2 = quantity(first["blockNumber"]), quantity(second["blockNumber"])
    t0, t1, t2 = (block_time(market, b) for b in (2, b1, b2))
    assert t0 < t1 < t2
    # Each round at the block that set it; the peg holds from the first block the follower
    # read (the chain's genesis here).
    expected = [(eth, t0, 3_000 * E8, -8, 2, t0, "chainlink"),
                (eth, t1, 3_100 * E8, -8, b1, t0, "chainlink"),
                (eth, t2, 2_950 * E8, -8, b2, t1, "chainlink"),
                (feed("peg", usdc), block_time(market, 0), 1 * E8, -8, 0, block_time(market, 0),
                 "peg")]
    assert updates(lake) == sorted(expected)
    feeds = lake.read("oracle_feeds").sort("symbol")
    # MockV3Aggregator's description is its source path, not a pair: the quote's symbol names it.
    assert feeds.select("feed_id", "symbol", "expo", "schedule").rows() == [
        (eth, "Chainlink.WETH/USD", -8, "Etc/UTC;O,O,O,O,O,O,O;"),
        (feed("peg", usdc), "Peg.USDC/USD", -8, "Etc/UTC;O,O,O,O,O,O,O;")]
    # Read again, the range changes nothing.
    follow(market, rpc, lake, from_block=0).run()
    assert updates(lake) == sorted(expected)


def test_a_reorg_that_replaces_an_answer_corrects_it(market, rpc, tmp_path):
    net = market.net
    later(market)
    fork = net.rpc.call("evm_snapshot")
    orphaned = market.answer(3_100 * E8)
    lake = LakeWriter(tmp_path / "lake")
    follower = follow(market, rpc, lake)
    follower.run()
    assert [row[2] for row in updates(lake)] == [3_000 * E8, 3_100 * E8]

    assert net.rpc.call("evm_revert", fork)
    later(market, 120)
    canonical = market.answer(2_800 * E8)
    net.mine(1)
    assert canonical["blockNumber"] == orphaned["blockNumber"]
    batches = follower.run()
    assert batches[0].reorged_from == quantity(orphaned["blockNumber"])
    block = quantity(canonical["blockNumber"])
    eth = feed("chainlink", market.aggregator)
    t0, t1 = block_time(market, 2), block_time(market, block)
    # The constructor's round kept at its block, the canonical answer at its own.
    assert updates(lake) == [(eth, t0, 3_000 * E8, -8, 2, t0, "chainlink"),
                             (eth, t1, 2_800 * E8, -8, block, t0, "chainlink")]


def test_a_follower_starting_later_takes_the_answer_in_force(market, rpc, tmp_path):
    later(market)
    answered = market.answer(3_333 * E8)
    later(market)
    market.net.mine(3)
    start = market.net.block_number() - 1
    lake = LakeWriter(tmp_path / "lake")
    follow(market, rpc, lake, from_block=start).run()
    t = block_time(market, quantity(answered["blockNumber"]))
    # The round in force before the first block read: its answer at its round's time,
    # recorded at the block before the first read.
    assert updates(lake) == [(feed("chainlink", market.aggregator), t, 3_333 * E8, -8,
                              start - 1, t, "chainlink")]
    # Read again from there, nothing changes.
    follow(market, rpc, lake, from_block=start).run()
    assert len(updates(lake)) == 1


def test_a_range_read_again_keeps_the_rounds_its_blocks_did_not_set(market, rpc, tmp_path):
    net = market.net
    later(market)
    b1 = quantity(market.answer(3_100 * E8)["blockNumber"])
    later(market)
    fork = net.rpc.call("evm_snapshot")
    orphaned = quantity(market.answer(2_900 * E8)["blockNumber"])
    net.mine(2)
    lake = LakeWriter(tmp_path / "lake")
    follower = follow(market, rpc, lake)
    # One batch reads the constructor's round (block 2) and both answers.
    assert len(follower.run()) == 1
    eth = feed("chainlink", market.aggregator)
    t0, t1, t2 = (block_time(market, b) for b in (2, b1, orphaned))
    expected = [(eth, t0, 3_000 * E8, -8, 2, t0, "chainlink"),
                (eth, t1, 3_100 * E8, -8, b1, t0, "chainlink"),
                (eth, t2, 2_900 * E8, -8, orphaned, t1, "chainlink")]
    assert updates(lake) == expected
    # Read again from inside the batch, at either answer's block: nothing changes.
    for start in (orphaned, b1, b1 + 1):
        follow(market, rpc, lake, from_block=start).run()
        assert updates(lake) == expected

    # A reorg replaces the last answer: the two rounds before it stay.
    assert net.rpc.call("evm_revert", fork)
    later(market, 120)
    canonical = quantity(market.answer(2_950 * E8)["blockNumber"])
    net.mine(3)
    assert canonical == orphaned
    batches = follow(market, rpc, lake).run()
    assert batches[0].reorged_from == canonical
    t3 = block_time(market, canonical)
    assert updates(lake) == [*expected[:2], (eth, t3, 2_950 * E8, -8, canonical, t1,
                                             "chainlink")]

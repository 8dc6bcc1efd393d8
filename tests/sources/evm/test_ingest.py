"""The EVM follower against a real anvil node: what it writes is what the chain did, worked
out by hand from the constant-product rule; again is the same; reorgs and bad tokens."""

import hashlib
from decimal import Decimal

import polars as pl
import pytest

from sources.evm.config import parse
from sources.evm.cursor import begin
from sources.evm.devnet import V2Market
from sources.evm.ingest import Follower
from sources.evm.rpc import quantity
from sources.lake import LakeError, LakeWriter

E18 = 10**18
EVENTS = ("swaps", "reserves", "liquidity_events", "transfers", "blocks")
KEYS = {"swaps": ["block_number", "log_index"], "reserves": ["block_number", "log_index"],
        "liquidity_events": ["block_number", "log_index"],
        "transfers": ["block_number", "log_index"], "blocks": ["block_number"],
        "pairs": ["address"], "tokens": ["address"]}


def out_for(amount_in: int, reserve_in: int, reserve_out: int) -> int:
    """Uniswap V2's getAmountOut, written out: 0.3 % of the input stays in the pool."""
    return amount_in * 997 * reserve_out // (reserve_in * 1000 + amount_in * 997)


def isqrt(n: int) -> int:
    x = n
    y = (x + 1) // 2
    while y < x:
        x, y = y, (y + n // y) // 2
    return x


@pytest.fixture
def follower(rpc):
    """A follower of the market's chain into `lake`."""

    def make(market: V2Market, lake: LakeWriter, **kw) -> Follower:
        return Follower.open(rpc(), parse_file(market), lake, **{"confirmations": 2, **kw})

    return make


def parse_file(market: V2Market):
    import yaml

    return parse(yaml.safe_load(market.venues_file()))


def eth_feed(market: V2Market) -> str:
    """The feed of the market's ETH/USD aggregator on the devnet's chain."""
    return hashlib.sha256(f"chainlink:31337:{market.aggregator}".encode()).hexdigest()


def table(lake: LakeWriter, name: str) -> pl.DataFrame:
    return lake.read(name).sort(KEYS[name])


@pytest.fixture
def traded(market):
    """Liquidity, a buy, a partial sell and a transfer on one PEPE/WETH pair."""
    net = market.net
    pepe = market.token("Pepe", "PEPE", 10**9 * E18)
    pair = market.pair(pepe)
    market.approve(0, market.quote, pepe)
    token0, token1 = sorted([pepe, market.quote])
    amounts = {market.quote: 1_000 * E18, pepe: 1_000_000 * E18}
    minted = market.add_liquidity(pair, amounts[token0], amounts[token1])
    market.transfer(market.quote, 1, 10 * E18)
    market.approve(1, market.quote, pepe)
    buy = market.swap(pair, market.quote, E18, 1)
    sell = market.swap(pair, pepe, 400 * E18, 1)
    gift = market.transfer(pepe, 2, 100 * E18, sender=1)
    return {"pepe": pepe, "pair": pair, "token0": token0, "amounts": amounts,
            "minted": minted, "buy": buy, "sell": sell, "gift": gift,
            "accounts": net.accounts}


def test_the_lake_holds_what_the_chain_did(traded, market, follower, tmp_path):
    lake = LakeWriter(tmp_path / "lake")
    said: list[str] = []
    batches = follower(market, lake, batch_blocks=3, progress=said.append).run()
    # Each batch says one line, the last (partial) one too.
    head = market.net.block_number()
    assert len(said) == len(batches) > 1
    assert said[-1].startswith(f"blocks {batches[-1].first:,}..{head:,}:")
    weth, pepe, pair, accounts = market.quote, traded["pepe"], traded["pair"], traded["accounts"]
    r_weth, r_pepe = 1_000 * E18, 1_000_000 * E18
    bought = out_for(E18, r_weth, r_pepe)
    r_weth, r_pepe = r_weth + E18, r_pepe - bought
    paid = out_for(400 * E18, r_pepe, r_weth)
    r_weth_end, r_pepe_end = r_weth - paid, r_pepe + 400 * E18

    swaps = table(lake, "swaps")
    weth_is_0 = traded["token0"] == weth

    def sides(weth_amount: int, pepe_amount: int) -> tuple[int, int]:
        return (weth_amount, pepe_amount) if weth_is_0 else (pepe_amount, weth_amount)

    buy_in, sell_in = sides(E18, 0), sides(0, 400 * E18)
    buy_out, sell_out = sides(0, bought), sides(paid, 0)
    assert swaps["amount0_in"].to_list() == [Decimal(buy_in[0]), Decimal(sell_in[0])]
    assert swaps["amount1_in"].to_list() == [Decimal(buy_in[1]), Decimal(sell_in[1])]
    assert swaps["amount0_out"].to_list() == [Decimal(buy_out[0]), Decimal(sell_out[0])]
    assert swaps["amount1_out"].to_list() == [Decimal(buy_out[1]), Decimal(sell_out[1])]
    assert swaps["maker"].to_list() == [accounts[1]] * 2
    assert swaps["sender"].to_list() == [market.router] * 2
    assert swaps["recipient"].to_list() == [accounts[1]] * 2
    assert swaps["pair"].to_list() == [pair] * 2
    receipts = [traded["buy"], traded["sell"]]
    assert swaps["tx_hash"].to_list() == [r["transactionHash"] for r in receipts]
    assert swaps["gas_used"].to_list() == [quantity(r["gasUsed"]) for r in receipts]
    assert swaps["tx_fee_raw"].to_list() == [
        Decimal(quantity(r["gasUsed"]) * quantity(r["effectiveGasPrice"])) for r in receipts]
    assert swaps["block_number"].to_list() == [quantity(r["blockNumber"]) for r in receipts]

    reserves = table(lake, "reserves")
    assert [sides(*map(int, row)) for row in reserves.select(
        "reserve0" if weth_is_0 else "reserve1",
        "reserve1" if weth_is_0 else "reserve0").rows()] == [
        sides(1_000 * E18, 1_000_000 * E18), sides(r_weth, r_pepe),
        sides(r_weth_end, r_pepe_end)]

    liquidity = table(lake, "liquidity_events")
    assert liquidity["kind"].to_list() == ["mint"]
    assert liquidity["owner"].to_list() == [accounts[0]]
    assert liquidity["liquidity"].to_list() == [Decimal(isqrt(1_000 * E18 * 1_000_000 * E18)
                                                        - 1000)]

    # Wallet moves only: the pool's legs are the swaps' and the liquidity's, not transfers.
    transfers = table(lake, "transfers")
    zero = "0x" + "0" * 40
    assert transfers.select("token", "from_address", "to_address", "amount").rows() == [
        (weth, zero, accounts[0], Decimal(10**24)),
        (pepe, zero, accounts[0], Decimal(10**9 * E18)),
        (weth, accounts[0], accounts[1], Decimal(10 * E18)),
        (pepe, accounts[1], accounts[2], Decimal(100 * E18))]

    pairs = table(lake, "pairs")
    assert pairs.select("address", "token0", "token1", "creator", "factory_type",
                        "fee_bps").rows() == [(pair, *sorted([pepe, weth]), accounts[0],
                                               "constant_product", 30)]
    tokens = table(lake, "tokens").sort("symbol")
    assert tokens.select("symbol", "decimals", "is_quote", "price_feed_id",
                         "deployer").rows() == [
        ("PEPE", 18, False, None, accounts[0]), ("WETH", 18, True, eth_feed(market),
                                                 accounts[0])]
    assert tokens["total_supply_raw"].to_list() == [Decimal(10**9 * E18), Decimal(10**24)]

    blocks = table(lake, "blocks")
    per_block = pl.concat([table(lake, n).select("block_number")
                           for n in ("swaps", "reserves", "liquidity_events", "transfers")])
    assert blocks.select("block_number", "log_count").rows() == sorted(
        per_block.group_by("block_number").len().rows())

    mark = lake.progress()
    assert mark is not None and mark.writer == "evm"
    assert mark.meta["next_block"] == market.net.block_number() + 1
    # At the head, complete up to when the head was seen: no later block existed.
    assert mark.watermark >= blocks["block_time"].max()
    assert lake.read("heads")["observed_at"].max() == mark.watermark


def test_ingesting_again_changes_nothing(traded, market, follower, tmp_path):
    lake = LakeWriter(tmp_path / "lake")
    follower(market, lake, batch_blocks=4).run()
    before = {name: table(lake, name) for name in (*EVENTS, "pairs")}
    follower(market, lake, batch_blocks=2, from_block=0).run()
    for name, frame in before.items():
        assert table(lake, name).equals(frame), name


def test_a_reorg_replacing_two_blocks_of_swaps(market, follower, rpc, tmp_path):
    net = market.net
    pepe = market.token("Pepe", "PEPE", 10**9 * E18)
    pair = market.pair(pepe)
    market.approve(0, market.quote, pepe)
    token0, _ = sorted([pepe, market.quote])
    market.add_liquidity(pair, *((1_000 * E18, 1_000_000 * E18) if token0 == market.quote
                                 else (1_000_000 * E18, 1_000 * E18)))
    fork = net.rpc.call("evm_snapshot")
    orphaned = [market.swap(pair, market.quote, E18, 0), market.swap(pair, market.quote, E18, 0)]
    lake = LakeWriter(tmp_path / "lake")
    follow = follower(market, lake)
    follow.run()
    assert set(lake.read("swaps")["tx_hash"]) == {r["transactionHash"] for r in orphaned}

    assert net.rpc.call("evm_revert", fork)
    canonical = [market.swap(pair, market.quote, 3 * E18, 0),
                 market.swap(pair, market.quote, 5 * E18, 0)]
    net.mine(1)
    assert [quantity(r["blockNumber"]) for r in canonical] == [
        quantity(r["blockNumber"]) for r in orphaned]
    batches = follow.run()
    assert batches[0].reorged_from == quantity(orphaned[0]["blockNumber"])

    swaps = lake.read("swaps").sort("block_number")
    assert swaps["tx_hash"].to_list() == [r["transactionHash"] for r in canonical]
    weth_in = swaps["amount0_in" if token0 == market.quote else "amount1_in"]
    assert weth_in.to_list() == [Decimal(3 * E18), Decimal(5 * E18)]
    # The reserves and blocks of the orphaned blocks left with them.
    reserves = lake.read("reserves")
    assert not set(reserves["tx_hash"]) & {r["transactionHash"] for r in orphaned}
    assert lake.read("blocks")["block_number"].is_unique().all()
    # A new follower on the same lake goes on from the canonical chain's hashes.
    assert Follower.open(rpc(), parse_file(market), lake).cursor.hashes[
        quantity(canonical[1]["blockNumber"])] == canonical[1]["blockHash"]


def test_tokens_answering_bytes32_or_nothing(market, follower, tmp_path):
    net = market.net
    mkr = net.deploy("Bytes32Token", ["bytes32", "bytes32", "uint256"],
                     [b"Maker".ljust(32, b"\0"), b"MKR".ljust(32, b"\0"), 10**6 * E18])
    # The router has no symbol(), name(), decimals() or totalSupply(): every call reverts.
    mute = market.router
    market.pair(mkr)
    market.pair(mute)
    lake = LakeWriter(tmp_path / "lake")
    follower(market, lake).run()
    tokens = {row["address"]: row for row in lake.read("tokens").to_dicts()}
    assert (tokens[mkr]["symbol"], tokens[mkr]["name"]) == ("MKR", "Maker")
    assert tokens[mkr]["total_supply_raw"] == Decimal(10**6 * E18)
    assert (tokens[mute]["symbol"], tokens[mute]["name"], tokens[mute]["decimals"],
            tokens[mute]["total_supply_raw"]) == ("", "", 18, Decimal(0))


def test_a_lake_another_writer_keeps_is_refused(market, follower, tmp_path):
    from datetime import UTC, datetime

    lake = LakeWriter(tmp_path / "lake")
    lake.mark(datetime.now(UTC), "simulate")
    with pytest.raises(LakeError, match="a lake of its own"):
        follower(market, lake)


@pytest.fixture
def second_chain(rpc):
    """Another anvil node (chain 5) with a market and a pair traded on it."""
    from sources.evm.devnet import Devnet, start_node, v2_market

    node = start_node(chain_id=5)
    net = Devnet(node.url)
    try:
        other = v2_market(net)
        pair, pepe = other.pool("Pepe Five", "PEPE5", 100 * E18, 10**6 * E18)
        other.approve(0, other.quote, pepe)
        for i in range(3):
            other.swap(pair, other.quote, (i + 1) * E18, 0)
        yield other, rpc(node.url), pair
    finally:
        net.close()
        node.stop()


def chain_rows(lake: LakeWriter, chain_id: int) -> dict[str, pl.DataFrame]:
    return {name: table(lake, name).filter(pl.col("chain_id") == chain_id)
            for name in ("swaps", "reserves", "transfers", "liquidity_events", "pairs",
                         "tokens")}


def equal_rows(one: dict[str, pl.DataFrame], other: dict[str, pl.DataFrame]) -> None:
    for name, frame in one.items():
        # Tokens carry when they were observed: every other column must agree.
        left, right = frame.drop("observed_at", strict=False), other[name].drop(
            "observed_at", strict=False)
        assert left.equals(right), name


def test_two_chains_share_one_lake(traded, market, follower, second_chain, tmp_path):
    """Two chains' followers into one lake: each chain's rows are what its own lake holds,
    the mark keeps both cursors, and following either again adds nothing."""
    other, other_rpc, _ = second_chain
    shared = LakeWriter(tmp_path / "shared")
    follower(market, shared).run()
    Follower.open(other_rpc, parse_file(other), shared, confirmations=2).run()
    alone = {31337: LakeWriter(tmp_path / "a"), 5: LakeWriter(tmp_path / "b")}
    follower(market, alone[31337]).run()
    Follower.open(other_rpc, parse_file(other), alone[5], confirmations=2).run()
    for chain_id, lake in alone.items():
        equal_rows(chain_rows(shared, chain_id), chain_rows(lake, chain_id))
    assert chain_rows(shared, 5)["swaps"].height == 3
    mark = shared.progress()
    assert mark is not None and set(mark.meta["chains"]) == {"31337", "5"}
    # Both chains' feeds and rows are kept whichever wrote last.
    feeds = set(shared.read("oracle_feeds")["feed_id"])
    assert eth_feed(market) in feeds and len(feeds) == 2
    assert set(shared.read("chains")["chain_id"]) == {31337, 5}
    before = {name: frame.height for name, frame in chain_rows(shared, 31337).items()}
    follower(market, shared).run()
    Follower.open(other_rpc, parse_file(other), shared, confirmations=2).run()
    assert {name: f.height for name, f in chain_rows(shared, 31337).items()} == before


def test_a_chain_whose_writer_died_mid_batch_leaves_nothing_behind(
        traded, market, follower, second_chain, tmp_path):
    """Chain 5's follower dies inside a batch (its swaps committed, nothing marked): the next
    batch of chain 31337 undoes them, and chain 5's follower, started again, goes on from its
    mark with no gap and no duplicate."""
    other, other_rpc, pair = second_chain
    lake = LakeWriter(tmp_path / "lake")
    follower(market, lake).run()
    dying = Follower.open(other_rpc, parse_file(other), lake, confirmations=2)
    dying.run()
    done = chain_rows(lake, 5)
    with lake.writing():
        begin(lake, dying.chain_id)
        lake.append("swaps", done["swaps"].with_columns(
            block_number=pl.col("block_number") + 1_000))
    # Chain 31337 goes on: a new swap, a new batch.
    market.swap(traded["pair"], market.quote, E18, 1)
    follower(market, lake).run()
    assert chain_rows(lake, 5)["swaps"].height == done["swaps"].height
    assert "writing" not in lake.progress().meta
    other.swap(pair, other.quote, E18, 0)
    Follower.open(other_rpc, parse_file(other), lake, confirmations=2).run()
    alone = LakeWriter(tmp_path / "alone")
    Follower.open(other_rpc, parse_file(other), alone, confirmations=2).run()
    equal_rows(chain_rows(lake, 5), chain_rows(alone, 5))
    assert chain_rows(lake, 5)["swaps"].height == done["swaps"].height + 1


def test_each_test_starts_from_the_markets_deploy(market, rpc):
    # The earlier tests of the module mined blocks and deployed tokens: none of it is left.
    # The deploy is four transactions: WETH, the ETH/USD aggregator, the factory, the router.
    assert quantity(rpc().call("eth_blockNumber")) == 4
    assert quantity(rpc().call("eth_getTransactionCount", market.net.accounts[0], "latest")) == 4


def test_a_chainlink_address_with_no_aggregator_is_refused_writing_nothing(market, node,
                                                                          tmp_path):
    from tests.conftest import run_cli

    # The market's factory is a contract, but no aggregator: it answers no decimals().
    venues = tmp_path / "venues.yaml"
    venues.write_text(market.venues_file().replace(market.aggregator, market.factory))
    home = tmp_path / "home"
    done = run_cli(["ingest", "evm", "--rpc", node.url, "--venues", str(venues)], home)
    assert done.returncode == 1
    assert "Traceback" not in done.stderr
    assert f"quotes[0].chainlink: {market.factory} answers no decimals()" in done.stderr
    assert str(venues) in done.stderr
    # Nothing written: not the lake, not its writers' lock.
    assert not (home / "lake").exists()


def test_a_node_that_stops_answering_is_marked_until_it_answers(market, node, follower,
                                                                tmp_path, monkeypatch):
    import sources.evm.ingest as ingest
    from core.ports import free_port
    from sources.evm.rpc import Rpc

    monkeypatch.setattr(ingest, "UNREACHABLE_WAIT_S", 0.0)
    lake = LakeWriter(tmp_path / "lake")
    following = follower(market, lake, confirmations=0)
    following.run()
    mark = lake.progress()
    assert mark is not None and mark.nodes() == {31337: {"state": "answering"}}

    def once() -> None:
        looks = iter([False, True])
        following.run(follow=True, stop=lambda: next(looks))

    answering = following.rpc
    # Nothing listens on the port: no retry, the call fails at once.
    following.rpc = Rpc(f"http://127.0.0.1:{free_port()}", backoff_s=())
    once()
    node = lake.progress().nodes()[31337]
    assert node["state"] == "unreachable"
    assert node["last_error"].startswith("eth_blockNumber: ConnectError")
    # Asked again and still down: since when is kept, the last check moves.
    once()
    again = lake.progress().nodes()[31337]
    assert again["since"] == node["since"] and again["checked_at"] > node["checked_at"]
    # The cursor the mark keeps is the chain's own, untouched.
    assert lake.progress().meta["chains"]["31337"]["next_block"] == \
        mark.meta["chains"]["31337"]["next_block"]

    following.rpc.close()
    following.rpc = answering
    once()
    assert lake.progress().nodes() == {31337: {"state": "answering"}}

"""The pool families beyond Uniswap V2 and V3 against a real anvil node: Uniswap V4 and
PancakeSwap V3 from their own npm bytecode, Solidly-style volatile and stable pools, pools made
before the follower's first block, and a reorg across them; what the lake holds worked out by
hand from what the chain said."""

import math
from decimal import Decimal
from fractions import Fraction

import polars as pl
import pytest
import yaml

from sources.evm import dexes
from sources.evm.config import chainlink_feed_id, parse
from sources.evm.derived import derived_feed_id
from sources.evm.families import decoded, topic
from sources.evm.families.uniswap_v4 import MODIFY_LIQUIDITY
from sources.evm.families.uniswap_v4 import SWAP as V4_SWAP
from sources.evm.ingest import Follower
from sources.lake import LakeWriter

E18, E6 = 10**18, 10**6
Q96 = 2**96
PANCAKE_SWAP = topic("Swap(address,address,int256,int256,uint160,uint128,int24,uint128,uint128)")
SOLIDLY_SWAP = topic("Swap(address,address,uint256,uint256,uint256,uint256)")
SOLIDLY_SYNC = topic("Sync(uint256,uint256)")


@pytest.fixture(scope="module")
def venues(_module_node, _deployed):
    """WETH at 3,000 USD, a PancakeSwap V3 factory, a Solidly-style factory (and another that
    no venue names), and tokens: PEPE and DAI (18 decimals), USDC (6, pegged at 1 USD)."""
    net = _deployed.net
    weth, aggregator = dexes.weth_and_feed(net)
    for sender in (0, 1, 2):
        net.transact({"from": net.accounts[sender], "to": weth, "value": hex(10_000 * E18),
                      "data": "0xd0e30db0"})
    tokens = {"pepe": dexes.token(net, "Pepe", "PEPE", 10**12 * E18),
              "dai": dexes.token(net, "Dai", "DAI", 10**9 * E18),
              "usdc": dexes.token(net, "USD Coin", "USDC", 10**9 * E6, 6)}
    for name in tokens:
        for sender in (1, 2):
            net.send(tokens[name], "transfer(address,uint256)", net.accounts[sender],
                     10**7 * (E6 if name == "usdc" else E18))
    pancake = dexes.pancakeswap_v3(net, weth, aggregator)
    solidly = dexes.solidly(net)
    v4 = dexes.uniswap_v4(net)
    positions = v4.positions()
    text = dexes.venues_file("devnet", weth, aggregator,
                             [pancake.venue(), solidly.venue(), v4.venue(positions)],
                             {tokens["usdc"]: 1.0})
    return {"net": net, "weth": weth, "aggregator": aggregator, "pancake": pancake,
            "solidly": solidly, "v4": v4, "positions": positions, "other": dexes.solidly(net),
            "config": parse(yaml.safe_load(text)), **tokens}


def follow(venues, lake: LakeWriter, **kw) -> Follower:
    follower = Follower.open(venues["net"].rpc, venues["config"], lake, confirmations=2, **kw)
    follower.run()
    return follower


def logs_of(receipt: dict, kind: str) -> list[dict]:
    return [log for log in receipt["logs"] if log["topics"][0] == kind]


def test_pancakeswap_v3_swaps_both_ways(venues, node, tmp_path):
    net, pancake, weth, pepe = venues["net"], venues["pancake"], venues["weth"], venues["pepe"]
    token0, token1 = sorted([pepe, weth])
    # One PEPE for 0.001 WETH, as token1 per token0.
    price = 0.001 if token0 == pepe else 1_000.0
    pool = pancake.pool(token0, token1, 2_500, int(math.sqrt(price) * Q96))
    at = math.floor(math.log(price) / math.log(1.0001) / 50) * 50
    minted = pancake.mint(pool, (at - 5_000, at + 5_000), 10**22, 1)
    swaps = [pancake.swap(pool, True, 10**18, 2), pancake.swap(pool, False, 10**18, 2)]
    lake = LakeWriter(tmp_path / "lake")
    follow(venues, lake)

    row = lake.read("pairs").filter(pl.col("address") == pool).row(0, named=True)
    # Fee tier 2,500 is 0.25 %: 25 basis points.
    assert (row["factory_type"], row["fee_bps"], row["token0"], row["token1"]) == (
        "concentrated_liquidity", 25, token0, token1)
    said = [decoded(["int256", "int256", "uint160"], logs_of(r, PANCAKE_SWAP)[0]["data"][:194])
            for r in swaps]
    rows = lake.read("swaps").filter(pl.col("pair") == pool).sort("block_number")
    # Token0 in, token1 out; then token1 in, token0 out: the signed amounts split by side.
    assert rows.select("amount0_in", "amount1_in", "amount0_out", "amount1_out").rows() == [
        (Decimal(said[0][0]), Decimal(0), Decimal(0), Decimal(-said[0][1])),
        (Decimal(0), Decimal(said[1][1]), Decimal(-said[1][0]), Decimal(0))]
    assert said[0][0] == 10**18 and said[1][1] == 10**18
    assert rows["maker"].to_list() == [net.accounts[2]] * 2
    # The reserves after the last swap: their ratio is the pool's price (sqrtPriceX96 squared).
    last = lake.read("reserves").filter(pl.col("pair") == pool).sort("block_number",
                                                                    "log_index").row(-1)
    reserve0, reserve1 = int(last[-2]), int(last[-1])
    assert reserve1 / reserve0 == pytest.approx((said[1][2] / Q96) ** 2, rel=1e-12)
    # The position is its minter's (no position manager), with the liquidity it asked for.
    events = lake.read("liquidity_events").filter(pl.col("pair") == pool)
    assert events.select("kind", "owner").rows() == [("mint", net.accounts[1])]
    assert int(events["liquidity"][0]) == 10**22
    assert logs_of(minted, topic("Mint(address,address,int24,int24,uint128,uint256,uint256)"))


def stable_price(reserve0: int, reserve1: int, decimals0: int, decimals1: int) -> float:
    """d(token1)/d(token0) on x³y + y³x at whole-token reserves, in raw units: the implicit
    derivative (3x²y + y³) / (x³ + 3xy²), scaled from whole tokens to raw amounts."""
    x, y = reserve0 / 10**decimals0, reserve1 / 10**decimals1
    return (3 * x**2 * y + y**3) / (x**3 + 3 * x * y**2) * 10**decimals1 / 10**decimals0


def test_solidly_volatile_and_stable_pools(venues, node, tmp_path):
    net, solidly = venues["net"], venues["solidly"]
    weth, pepe, dai, usdc = (venues[k] for k in ("weth", "pepe", "dai", "usdc"))
    volatile = solidly.pool(pepe, weth, False)
    stable = solidly.pool(usdc, dai, True)
    whole = {pepe: 1_000_000 * E18, weth: 1_000 * E18, dai: 1_000_000 * E18,
             usdc: 1_000_000 * E6}
    for pool in (volatile, stable):
        t0, t1 = solidly.tokens(pool)
        solidly.add_liquidity(pool, whole[t0], whole[t1], 1)
    # FROG trades against DAI and PEPE alone, so both are priced for it through their pools
    # (each a bridge with a derived feed).
    frog = dexes.token(net, "Frog", "FROG", 10**9 * E18)
    for other in (dai, pepe):
        pool = solidly.pool(frog, other, False)
        solidly.add_liquidity(pool, 1_000 * E18, 1_000 * E18, 0)
    trades = [solidly.swap(volatile, weth, E18, 2), solidly.swap(volatile, pepe, 5_000 * E18, 2),
              solidly.swap(stable, usdc, 50_000 * E6, 2), solidly.swap(stable, dai, 20_000 * E18, 2)]
    lake = LakeWriter(tmp_path / "lake")
    follow(venues, lake)

    pairs = {r["address"]: r for r in lake.read("pairs").iter_rows(named=True)}
    # The factory's defaults: 0.30 % volatile, 0.05 % stable.
    assert (pairs[volatile]["factory_type"], pairs[volatile]["fee_bps"]) == ("constant_product", 30)
    assert (pairs[stable]["factory_type"], pairs[stable]["fee_bps"]) == ("stable_swap", 5)
    assert pairs[volatile]["fee_bps"] == 30
    swaps = lake.read("swaps").sort("block_number")
    said = [decoded(["uint256"] * 4, logs_of(r, SOLIDLY_SWAP)[0]["data"]) for r in trades]
    assert [tuple(int(v) for v in r) for r in swaps.select(
        "amount0_in", "amount1_in", "amount0_out", "amount1_out").rows()] == said
    # The input's fee left the pool: 0.05 % of 50,000 USDC stays out of its reserves.
    synced = [decoded(["uint256", "uint256"], logs_of(r, SOLIDLY_SYNC)[-1]["data"])
              for r in trades]
    reserves = lake.read("reserves").sort("block_number", "log_index")
    kept = {p: [(int(a), int(b)) for a, b in reserves.filter(pl.col("pair") == p)
                .select("reserve0", "reserve1").rows()] for p in (volatile, stable)}
    # A volatile pool's reserves are its `Sync`'s.
    assert kept[volatile][-2:] == synced[:2]
    # A stable pool's: two halves at the curve's marginal price, worth what it holds.
    s0, s1 = solidly.tokens(stable)
    decimals = {dai: 18, usdc: 6}
    assert kept[stable][0] == (whole[s0], whole[s1])  # equal whole tokens: a price of 1
    for (r0, r1), (k0, k1) in zip(synced[2:], kept[stable][-2:], strict=True):
        p = stable_price(r0, r1, decimals[s0], decimals[s1])
        assert k1 / k0 == pytest.approx(p, rel=1e-9)
        assert k1 + k0 * p == pytest.approx(r1 + r0 * p, rel=1e-9)
        assert abs(p / (r1 / r0) - 1) > 1e-3  # not the reserves' ratio
    # The pool's own quote agrees: a tiny sale of token0 fetches the marginal price, less the
    # fee.
    r0, r1 = synced[3]
    tiny = 10 ** (decimals[s0] - 3)
    quoted = net.view(stable, "getAmountOut(uint256,address)", ["uint256"], tiny, s0)[0]
    assert quoted / (tiny * (1 - 0.0005)) == pytest.approx(
        stable_price(r0, r1, decimals[s0], decimals[s1]), rel=1e-4)
    # Prices reach the pools: DAI's through the stable pool from the USDC peg, PEPE's through
    # the volatile pool from WETH's aggregator (3,000 USD), each at the last swap.
    updates = lake.read("oracle_updates")

    def last_usd(token: str) -> float:
        row = updates.filter(pl.col("feed_id") == derived_feed_id(31337, token)).sort(
            "publish_time", "slot").row(-1, named=True)
        return float(Fraction(int(row["price"])) * Fraction(10) ** row["expo"])

    p = stable_price(*synced[3], decimals[s0], decimals[s1])
    dai_usd = p * 10**12 if s0 == dai else 1 / p / 10**12
    assert last_usd(dai) == pytest.approx(dai_usd, rel=1e-6)
    v0, v1 = synced[1]
    pepe_in_weth = v1 / v0 if sorted([pepe, weth])[0] == pepe else v0 / v1
    assert last_usd(pepe) == pytest.approx(pepe_in_weth * 3_000, rel=1e-6)


def test_pools_made_before_the_first_block_are_met_on_their_first_swap(venues, node, tmp_path):
    net, solidly, pancake = venues["net"], venues["solidly"], venues["pancake"]
    weth, pepe, dai = venues["weth"], venues["pepe"], venues["dai"]
    volatile = solidly.pool(pepe, weth, False)
    solidly.add_liquidity(volatile, *((1_000_000 * E18, 1_000 * E18)
                                      if sorted([pepe, weth])[0] == pepe
                                      else (1_000 * E18, 1_000_000 * E18)), 1)
    token0, token1 = sorted([dai, weth])
    price = 1 / 3_000 if token0 == dai else 3_000.0
    concentrated = pancake.pool(token0, token1, 500, int(math.sqrt(price) * Q96))
    at = math.floor(math.log(price) / math.log(1.0001) / 10) * 10
    pancake.mint(concentrated, (at - 2_000, at + 2_000), 10**21, 1)
    key, singleton = venues["v4"].pool(dexes.NATIVE, pepe, 3_000, 60, 1_000 * Q96)
    venues["v4"].modify(key, (132_000, 144_000), 10**22, 1, value=1_000 * E18)
    # A pool of a factory no venue names trades too: not the lake's.
    unnamed = venues["other"].pool(pepe, weth, False)
    venues["other"].add_liquidity(unnamed, 10**21, 10**21, 1)
    quiet = solidly.pool(dai, weth, False)
    start = net.block_number() + 1
    trades = [solidly.swap(volatile, weth, E18, 2), pancake.swap(concentrated, True, E18, 2),
              venues["v4"].swap(key, True, E18, 2, value=E18),
              venues["other"].swap(unnamed, weth, E18, 2)]
    lake = LakeWriter(tmp_path / "lake")
    follow(venues, lake, from_block=start)

    pairs = {r["address"]: r for r in lake.read("pairs").iter_rows(named=True)}
    # The three that swapped, from their factories' creation logs (the V4 pool from the
    # manager's `Initialize`); not the one that stayed quiet, nor the unnamed factory's.
    assert set(pairs) == {volatile, concentrated, singleton}
    assert all(r["created_block"] < start and r["creator"] == net.accounts[0]
               for r in pairs.values())
    assert (pairs[volatile]["fee_bps"], pairs[concentrated]["fee_bps"]) == (30, 5)
    assert quiet not in pairs
    swaps = lake.read("swaps").sort("block_number")
    assert swaps["tx_hash"].to_list() == [r["transactionHash"] for r in trades[:3]]
    # The V4 pool's state at the start is the manager's, read at the block before the batch:
    # the reserves after its swap are what the liquidity holds at the swap's price.
    _, _, sqrt_v4, active, _, _ = v4_swap(trades[2])
    assert active == 10**22
    assert tuple(int(v) for v in lake.read("reserves").filter(pl.col("pair") == singleton)
                 .select("reserve0", "reserve1").row(-1)) == (
        active * Q96 // sqrt_v4, active * sqrt_v4 // Q96)
    # Their state at the swap: the volatile pool's `Sync` before its `Swap`; the concentrated
    # pool's balances at the block before, moved by the swap and valued at its price.
    reserves = lake.read("reserves").sort("block_number", "log_index")
    synced = decoded(["uint256", "uint256"], logs_of(trades[0], SOLIDLY_SYNC)[-1]["data"])
    assert tuple(int(v) for v in reserves.filter(pl.col("pair") == volatile).select(
        "reserve0", "reserve1").row(-1)) == synced
    held = {t: net.view(t, "balanceOf(address)", ["uint256"], concentrated)[0]
            for t in (token0, token1)}
    sqrt_price = decoded(["int256", "int256", "uint160"],
                         logs_of(trades[1], PANCAKE_SWAP)[0]["data"][:194])[2]
    p = (sqrt_price / Q96) ** 2
    r0, r1 = (int(v) for v in reserves.filter(pl.col("pair") == concentrated).select(
        "reserve0", "reserve1").row(-1))
    assert r1 / r0 == pytest.approx(p, rel=1e-9)
    assert r1 + r0 * p == pytest.approx(held[token1] + held[token0] * p, rel=1e-9)


def test_a_reorg_across_solidly_and_pancake_pools(venues, node, tmp_path):
    net, solidly, pancake = venues["net"], venues["solidly"], venues["pancake"]
    weth, pepe = venues["weth"], venues["pepe"]
    stable = solidly.pool(pepe, weth, True)
    solidly.add_liquidity(stable, 1_000 * E18, 1_000 * E18, 1)
    token0, token1 = sorted([pepe, weth])
    concentrated = pancake.pool(token0, token1, 10_000, Q96)
    pancake.mint(concentrated, (-20_000, 20_000), 10**21, 1)
    v4 = venues["v4"]
    key, singleton = v4.pool(dexes.NATIVE, pepe, 3_000, 60, Q96)
    v4.modify(key, (-6_000, 6_000), 10**21, 1, value=1_000 * E18)
    fork, forked_at = net.rpc.call("evm_snapshot"), net.block_number() + 1
    orphaned = [solidly.swap(stable, weth, E18, 2), pancake.swap(concentrated, True, E18, 2),
                v4.swap(key, True, E18, 2, value=E18)]
    lake = LakeWriter(tmp_path / "lake")
    follower = Follower.open(net.rpc, venues["config"], lake, confirmations=2)
    follower.run()
    assert {r["transactionHash"] for r in orphaned} <= set(lake.read("swaps")["tx_hash"])

    assert net.rpc.call("evm_revert", fork)
    canonical = [pancake.swap(concentrated, False, 3 * E18, 2),
                 solidly.swap(stable, pepe, 2 * E18, 2), v4.swap(key, False, 4 * E18, 2)]
    net.mine(1)
    batches = follower.run()
    # From the first block after the fork (each swap's approval mined its own block).
    assert batches[0].reorged_from == forked_at
    swaps = lake.read("swaps").sort("block_number")
    assert swaps["tx_hash"].to_list() == [r["transactionHash"] for r in canonical]
    assert swaps.select("pair").to_series().to_list() == [concentrated, stable, singleton]
    # The V4 swap's own: PEPE in (4), ETH out.
    assert int(swaps["amount1_in"][2]) == 4 * E18 and int(swaps["amount0_out"][2]) == \
        v4_swap(canonical[2])[0]
    reserves = lake.read("reserves")
    assert not set(reserves["tx_hash"]) & {r["transactionHash"] for r in orphaned}
    # The stable pool's last reserves are the canonical swap's, valued at its curve.
    r0, r1 = decoded(["uint256", "uint256"], logs_of(canonical[1], SOLIDLY_SYNC)[-1]["data"])
    k0, k1 = (int(v) for v in reserves.filter(pl.col("pair") == stable).sort(
        "block_number", "log_index").select("reserve0", "reserve1").row(-1))
    assert k1 / k0 == pytest.approx(stable_price(r0, r1, 18, 18), rel=1e-9)


def v4_swap(receipt: dict) -> tuple[int, ...]:
    """A V4 `Swap`'s amounts (the swapper's: negative paid), price, liquidity, tick, fee."""
    return decoded(["int128", "int128", "uint160", "uint128", "int24", "uint24"],
                   logs_of(receipt, V4_SWAP)[0]["data"])


def eth_held(net, address: str, block: int) -> int:
    return int(net.rpc.call("eth_getBalance", address, hex(block)), 16)


def test_uniswap_v4_native_eth_pool(venues, node, tmp_path):
    net, v4, pepe, solidly = venues["net"], venues["v4"], venues["pepe"], venues["solidly"]
    native = dexes.NATIVE
    # 1,000,000 PEPE an ETH (token1 per token0: ETH is currency0, the zero address).
    key, pool = v4.pool(native, pepe, 3_000, 60, 1_000 * Q96)
    at = round(math.log(10**6) / math.log(1.0001) / 60) * 60
    ticks = (at - 6_000, at + 6_000)
    added = v4.modify(key, ticks, 10**22, 1, value=5_000 * E18)
    trades = [v4.swap(key, True, E18, 2, value=E18), v4.swap(key, False, 500_000 * E18, 2)]
    removed = v4.modify(key, ticks, -(10**21), 1)
    # FROG trades against PEPE alone, so PEPE gets a price of its own through the V4 pool.
    frog = dexes.token(net, "Frog", "FROG", 10**9 * E18)
    solidly.add_liquidity(solidly.pool(frog, pepe, False), 1_000 * E18, 1_000 * E18, 0)
    lake = LakeWriter(tmp_path / "lake")
    follow(venues, lake)

    # The pool's address is its id; its currency0 is native ETH, described as the chain's
    # native currency and priced by WETH's feed.
    row = lake.read("pairs").filter(pl.col("address") == pool).row(0, named=True)
    assert len(pool) == 66
    assert (row["factory"], row["token0"], row["token1"], row["fee_bps"],
            row["factory_type"]) == (v4.manager, native, pepe, 30, "concentrated_liquidity")
    eth = lake.read("tokens").filter(pl.col("address") == native).row(0, named=True)
    assert (eth["symbol"], eth["decimals"], eth["is_quote"], eth["price_feed_id"]) == (
        "ETH", 18, True, chainlink_feed_id(31337, venues["aggregator"]))
    # The swaps: ETH in for PEPE out, then PEPE in for ETH out; the signs are the swapper's.
    said = [v4_swap(r) for r in trades]
    assert said[0][0] == -E18 and said[1][1] == -500_000 * E18
    rows = lake.read("swaps").filter(pl.col("pair") == pool).sort("block_number")
    assert [tuple(int(v) for v in r) for r in rows.select(
        "amount0_in", "amount1_in", "amount0_out", "amount1_out").rows()] == [
        (E18, 0, 0, said[0][1]), (0, 500_000 * E18, said[1][0], 0)]
    # The liquidity changes: the router's, their tokens what moved to and from the manager
    # (PEPE by its transfers, ETH by the manager's balance), to a wei or two; the removal also
    # took the position's fees, 0.3 % of each swap's input (it is the pool's only position).
    fees = [(0, 0), (E18 * 3_000 // 10**6, 500_000 * E18 * 3_000 // 10**6)]
    events = lake.read("liquidity_events").filter(pl.col("pair") == pool).sort("block_number")
    assert events.select("kind", "owner").rows() == [("mint", v4.liquidity), ("burn", v4.liquidity)]
    assert [int(v) for v in events["liquidity"]] == [10**22, 10**21]
    for receipt, got, (fee0, fee1) in zip((added, removed), events.iter_rows(named=True), fees,
                                          strict=True):
        block = int(receipt["blockNumber"], 16)
        moved_eth = abs(eth_held(net, v4.manager, block) - eth_held(net, v4.manager, block - 1))
        moved_pepe = sum(decoded(["uint256"], log["data"])[0] for log in logs_of(
            receipt, topic("Transfer(address,address,uint256)")) if log["address"] == pepe)
        assert abs(int(got["amount0"]) - (moved_eth - fee0)) <= 2
        assert abs(int(got["amount1"]) - (moved_pepe - fee1)) <= 2
    assert logs_of(added, MODIFY_LIQUIDITY)
    # PEPE moved to and from the manager is the swaps' and positions' legs, no wallet's
    # transfer.
    transfers = lake.read("transfers")
    assert v4.manager not in set(transfers["from_address"]) | set(transfers["to_address"])
    # The reserves after the last swap: what its active liquidity holds at its price.
    _, _, sqrt_price, active, _, _ = said[1]
    kept = lake.read("reserves").filter(pl.col("tx_hash") == trades[1]["transactionHash"])
    assert tuple(int(v) for v in kept.select("reserve0", "reserve1").row(0)) == (
        active * Q96 // sqrt_price, active * sqrt_price // Q96)
    # The position added while in range was active; the part taken out left with it.
    last = lake.read("reserves").filter(pl.col("pair") == pool).sort(
        "block_number", "log_index").row(-1, named=True)
    assert int(last["reserve1"]) == (10**22 - 10**21) * sqrt_price // Q96
    # PEPE's derived price: WETH's 3,000 USD over the PEPE an ETH fetches at the last swap.
    row = lake.read("oracle_updates").filter(
        pl.col("feed_id") == derived_feed_id(31337, pepe)).sort("publish_time", "slot").row(
        -1, named=True)
    assert float(Fraction(int(row["price"])) * Fraction(10) ** row["expo"]) == pytest.approx(
        3_000 / (sqrt_price / Q96) ** 2, rel=1e-6)


def test_a_v4_pools_dynamic_fee_is_its_swaps(venues, node, tmp_path):
    v4, pepe, dai = venues["v4"], venues["pepe"], venues["dai"]
    # A hook with no callbacks (no flag bits in its address) that sets the fee.
    hooks = "0x0000000000000000000000000000000000004000"
    currency0, currency1 = sorted([pepe, dai])
    key, pool = v4.pool(currency0, currency1, dexes.DYNAMIC_FEE, 60, Q96, hooks)
    v4.modify(key, (-600, 600), 10**21, 1)
    v4.set_fee(key, 10_000)
    v4.swap(key, True, E18, 2)
    lake = LakeWriter(tmp_path / "lake")
    follower = follow(venues, lake)
    # Its key says a hook sets the fee; the swap said 1 %: 100 basis points.
    assert lake.read("pairs").filter(pl.col("address") == pool)["fee_bps"].to_list() == [100]
    v4.set_fee(key, 500)
    v4.swap(key, False, E18, 2)
    follower.run()
    assert lake.read("pairs").filter(pl.col("address") == pool)["fee_bps"].to_list() == [5]


def test_a_v4_position_is_its_nfts_holder(venues, node, tmp_path):
    net, v4, positions, pepe = venues["net"], venues["v4"], venues["positions"], venues["pepe"]
    key, pool = v4.pool(dexes.NATIVE, pepe, 3_000, 60, 1_000 * Q96)
    ticks = (132_000, 144_000)
    net.send(pepe, "approve(address,uint256)", positions, 2**256 - 1, sender=1)
    mint = f"mint({dexes.POOL_KEY},int24,int24,uint256)"
    # Account 1 opens position 1 and gives its NFT to account 3, who takes half out; account 1
    # opens position 2 and ends it, its NFT burnt with it.
    net.transact({"from": net.accounts[1], "to": positions, "value": hex(100 * E18),
                  "data": dexes.call_data(mint, key, *ticks, 10**21)})
    net.send(positions, "transferFrom(address,address,uint256)", net.accounts[1],
             net.accounts[3], 1, sender=1)
    net.send(positions, "decrease(uint256,uint256,bool)", 1, 5 * 10**20, False, sender=3)
    net.transact({"from": net.accounts[1], "to": positions, "value": hex(100 * E18),
                  "data": dexes.call_data(mint, key, *ticks, 10**20)})
    net.send(positions, "decrease(uint256,uint256,bool)", 2, 10**20, True, sender=1)
    lake = LakeWriter(tmp_path / "lake")
    follow(venues, lake)
    events = lake.read("liquidity_events").filter(pl.col("pair") == pool).sort(
        "block_number", "log_index")
    accounts = net.accounts
    assert events.select("kind", "owner").rows() == [
        ("mint", accounts[1]), ("burn", accounts[3]), ("mint", accounts[1]),
        ("burn", accounts[1])]
    assert [int(v) for v in events["liquidity"]] == [10**21, 5 * 10**20, 10**20, 10**20]

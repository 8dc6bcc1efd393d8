"""Chains for the follower's `mix` stage (`bench/ingest.py`): one of Uniswap V2 pools alone, and
one mixing the families a real chain's volume is in (V2, V3, V4 with native ETH, Solidly),
the same swaps a block on each; what each is and how its swaps are sent."""

from collections.abc import Callable
from dataclasses import dataclass

from sources.evm import dexes
from sources.evm.devnet import (
    DEADLINE,
    MAX_UINT,
    Devnet,
    V2Market,
    call_data,
    uniswap_v3,
)

E18 = 10**18
TRADERS = range(1, 10)
V3_FEE, V4_FEE, V4_SPACING = 3_000, 3_000, 60
Q96 = 2**96
# Each pool's liquidity: a base token at 10^-5 WETH.
WETH_DEPTH, BASE_DEPTH = 2_000 * E18, 2 * 10**8 * E18
# A swap: (trader, the transaction's target, its call data, the ETH it pays).
Swap = tuple[str, str, str, int]


@dataclass
class PoolChain:
    """A chain's venues file and its swap makers: each makes a swap for a trader, selling
    the base token or buying it."""

    venues: str
    makers: list[Callable[[str, bool], Swap]]

    def mine(self, net: Devnet, swaps: int, block: int) -> None:
        """Send `swaps` swaps in one request and mine them into one block."""
        calls = []
        for k in range(swaps):
            trader = net.accounts[TRADERS[(block * 7 + k) % len(TRADERS)]]
            make = self.makers[(block + k) % len(self.makers)]
            _, to, data, value = make(trader, (block + k) % 3 == 0)
            calls.append(("eth_sendTransaction", [{"from": trader, "to": to, "data": data,
                                                   "value": hex(value),
                                                   "gas": hex(600_000)}]))
        net.rpc.batch(calls)
        net.mine(1)


def _bases(net: Devnet, count: int, holders: list[str]) -> list[str]:
    bases = [dexes.token(net, f"Token {i}", f"TK{i}", 10**12 * E18) for i in range(count)]
    for base in bases:
        for holder in holders:
            net.send(base, "transfer(address,uint256)", holder, 10**8 * E18)
    return bases


def _approve(net: Devnet, tokens: list[str], spenders: list[str]) -> None:
    for sender in (0, *TRADERS):
        for token in tokens:
            for spender in spenders:
                net.send(token, "approve(address,uint256)", spender, MAX_UINT, sender=sender)


def _v2_makers(market: V2Market, pairs: list[tuple[str, str]]) -> list[Callable[[str, bool], Swap]]:
    def maker(pair: str, base: str) -> Callable[[str, bool], Swap]:
        def make(trader: str, selling: bool) -> Swap:
            token, amount = (base, 1_000 * E18) if selling else (market.quote, E18 // 100)
            return trader, market.router, call_data(
                "swapExactIn(address,address,uint256,address)", pair, token, amount, trader), 0
        return make
    return [maker(pair, base) for pair, base in pairs]


def v2_only(net: Devnet, pools: int) -> PoolChain:
    """Uniswap V2-style pairs (this project's V2 contracts) of `pools` tokens and WETH."""
    market = dexes_v2(net)
    bases = _bases(net, pools, [net.accounts[t] for t in TRADERS])
    _approve(net, [market.quote, *bases], [market.router])
    pairs = [(_v2_pair(market, base), base) for base in bases]
    return PoolChain(market.venues_file(), _v2_makers(market, pairs))


def dexes_v2(net: Devnet, weth: str | None = None, aggregator: str | None = None) -> V2Market:
    """The V2 market over `weth` (a new one, every trader holding some, unless given)."""
    if weth is None or aggregator is None:
        weth, aggregator = dexes.weth_and_feed(net)
        _wrap(net, weth)
    return V2Market(net, weth, net.deploy("Factory", [], []), net.deploy("Router", [], []),
                    aggregator)


def _wrap(net: Devnet, weth: str) -> None:
    for sender in (0, *TRADERS):
        net.transact({"from": net.accounts[sender], "to": weth, "value": hex(100_000 * E18),
                      "data": "0xd0e30db0"})


def _v2_pair(market: V2Market, base: str) -> str:
    pair = market.pair(base)
    token0 = sorted([base, market.quote])[0]
    amounts = (BASE_DEPTH, WETH_DEPTH) if token0 == base else (WETH_DEPTH, BASE_DEPTH)
    market.add_liquidity(pair, *amounts)
    return pair


def mixed(net: Devnet, pools: int) -> PoolChain:
    """`pools` tokens each traded against WETH in a V2 pair, a V3 pool and a Solidly volatile
    pool, and against native ETH in a V4 pool."""
    v3 = uniswap_v3(net)
    _wrap(net, v3.weth)
    market = dexes_v2(net, v3.weth, v3.aggregator)
    v4, solidly = dexes.uniswap_v4(net), dexes.solidly(net)
    bases = _bases(net, pools, [net.accounts[t] for t in TRADERS])
    _approve(net, [v3.weth, *bases], [market.router, v3.router, v3.positions, solidly.router,
                                     v4.swapper, v4.liquidity])
    makers = _v2_makers(market, [(_v2_pair(market, base), base) for base in bases])
    for base in bases:
        token0, token1 = sorted([base, v3.weth])
        # One base token at 10^-5 WETH, as in the V2 pairs.
        price = 10**-5 if token0 == base else 10**5
        v3.pool(token0, token1, V3_FEE, int(price ** 0.5 * Q96))
        v3.mint(token0, token1, V3_FEE, (-887_220, 887_220),
                *((BASE_DEPTH, WETH_DEPTH) if token0 == base else (WETH_DEPTH, BASE_DEPTH)), 0)
        key, _ = v4.pool(dexes.NATIVE, base, V4_FEE, V4_SPACING, int((10**5) ** 0.5 * Q96))
        # Full range: L = ETH * √P, 2,000 ETH at 10^5 tokens an ETH.
        v4.modify(key, (-887_220, 887_220), 2_000 * E18 * 316, 0, value=2_100 * E18)
        pool = solidly.pool(base, v3.weth, False)
        solidly.add_liquidity(pool, *((BASE_DEPTH, WETH_DEPTH) if solidly.tokens(pool)[0] == base
                                      else (WETH_DEPTH, BASE_DEPTH)), 0)
        makers += [_v3_maker(v3.router, v3.weth, base), _v4_maker(v4, key),
                   _solidly_maker(solidly.router, pool, v3.weth, base)]
    venues = dexes.venues_file("devnet", v3.weth, v3.aggregator, [
        f'{{name: "Uniswap V2", type: uniswap_v2, factory: "{market.factory}", '
        f'router: "{market.router}"}}',
        f'{{name: "Uniswap V3", type: uniswap_v3, position_manager: "{v3.positions}", '
        f'factory: "{v3.factory}", router: "{v3.router}"}}', v4.venue(), solidly.venue()])
    return PoolChain(venues, makers)


def _v3_maker(router: str, weth: str, base: str) -> Callable[[str, bool], Swap]:
    def make(trader: str, selling: bool) -> Swap:
        token_in, token_out, amount = (base, weth, 1_000 * E18) if selling else (
            weth, base, E18 // 100)
        return trader, router, call_data(
            "exactInputSingle((address,address,uint24,address,uint256,uint256,uint256,"
            "uint160))", (token_in, token_out, V3_FEE, trader, DEADLINE, amount, 0, 0)), 0
    return make


def _v4_maker(v4: dexes.UniswapV4, key: tuple) -> Callable[[str, bool], Swap]:
    def make(trader: str, selling: bool) -> Swap:
        # ETH is currency0: buying the base sells ETH (zero for one), paid with the call.
        amount = 1_000 * E18 if selling else E18 // 100
        limit = dexes.MAX_SQRT_PRICE - 1 if selling else dexes.MIN_SQRT_PRICE + 1
        return trader, v4.swapper, call_data(
            f"swap({dexes.POOL_KEY},(bool,int256,uint160),(bool,bool),bytes)", key,
            (not selling, -amount, limit), (False, False), b""), 0 if selling else amount
    return make


def _solidly_maker(router: str, pool: str, weth: str, base: str) -> Callable[[str, bool], Swap]:
    def make(trader: str, selling: bool) -> Swap:
        token, amount = (base, 1_000 * E18) if selling else (weth, E18 // 100)
        return trader, router, call_data("swapExactIn(address,address,uint256,address)", pool,
                                         token, amount, trader), 0
    return make

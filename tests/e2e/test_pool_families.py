"""Position-based and other pool families ingested, materialised and served on one anvil chain,
the figures worked out by hand from what the chain says.

Uniswap V3 as its own npm packages ship it (`@uniswap/v3-core`'s factory and pools,
`@uniswap/v3-periphery`'s NonfungiblePositionManager and SwapRouter): two fee tiers, a wide and
a narrow position, a swap that crosses the narrow one's edge, and half the narrow one taken
out and collected. Beside it: a Uniswap V4 pool of native ETH (`@uniswap/v4-core`'s pool
manager and routers), a PancakeSwap V3 pool (`@pancakeswap/v3-core`), and a Solidly-style
stable pool of USDC against DAI, USDC pegged."""

import math

import httpx
import polars as pl
import pytest

from sources.evm import dexes
from sources.evm.devnet import TOKEN_ARGS, uniswap_v3
from sources.evm.families import decoded
from sources.evm.families.solidly import SYNC as SOLIDLY_SYNC
from sources.evm.families.uniswap_v3 import SWAP
from sources.evm.families.uniswap_v4 import SWAP as V4_SWAP
from sources.evm.rows import INCREASE_LIQUIDITY as INCREASED
from sources.lake import LakeWriter
from tests.conftest import edge_process
from tests.e2e.conftest import devnet_on, ingested

pytestmark = pytest.mark.cost(seconds=25)

E18 = 10**18
Q96 = 2**96
FEE, SPACING = 3_000, 60
OTHER_FEE = 500


def tick_of(price: float) -> int:
    """The tick at or below a price (token1 per token0), on the fee tier's spacing."""
    return math.floor(math.log(price) / math.log(1.0001)) // SPACING * SPACING


@pytest.fixture(scope="module")
def chain(tmp_path_factory):
    home = tmp_path_factory.mktemp("pool-families-home")
    with devnet_on() as net:
        v3 = uniswap_v3(net)
        pepe = net.deploy("Token", TOKEN_ARGS, ["Pepe", "PEPE", 18, 10**12 * E18])
        for sender in (0, 1, 2):
            net.transact({"from": net.accounts[sender], "to": v3.weth,
                          "value": hex(1_000 * E18), "data": "0xd0e30db0"})
        net.send(pepe, "transfer(address,uint256)", net.accounts[1], 10**9 * E18)
        token0, token1 = sorted([pepe, v3.weth])
        # PEPE at 0.001 WETH, as token1 per token0.
        price = 0.001 if token0 == pepe else 1_000.0
        pool = v3.pool(token0, token1, FEE, int(math.sqrt(price) * Q96))
        other = v3.pool(token0, token1, OTHER_FEE, int(math.sqrt(price) * Q96))
        at = tick_of(price)
        wide, narrow = (at - 6_000, at + 6_000), (at - 120, at + 120)
        amounts = {pepe: 100_000 * E18, v3.weth: 100 * E18}
        v3.mint(token0, token1, FEE, wide, amounts[token0], amounts[token1], 0)
        minted = v3.mint(token0, token1, FEE, narrow, amounts[token0] // 10,
                         amounts[token1] // 10, 1)
        buy = v3.swap(v3.weth, pepe, FEE, 20 * E18, 2)
        # Account 1 takes half its position's liquidity out, and collects it.
        increased = next(log for log in minted["logs"] if log["topics"][0] == INCREASED)
        token_id = int(increased["topics"][1], 16)
        liquidity = decoded(["uint128", "uint256", "uint256"], increased["data"])[0]
        v3.burn(token_id, liquidity // 2, 1)
        others = other_families(net, v3.weth, v3.aggregator)
        venues = dexes.venues_file("devnet", v3.weth, v3.aggregator, [
            f'{{name: "Uniswap V3", type: uniswap_v3, position_manager: "{v3.positions}", '
            f'factory: "{v3.factory}", router: "{v3.router}"}}', *others.pop("venues")],
            {others["usdc"]: 1.0})
        ingested(home, net.rpc.url, venues)
        swap_log = next(log for log in buy["logs"] if log["topics"][0] == SWAP)
        amount0, amount1, sqrt_price, _, tick = decoded(
            ["int256", "int256", "uint160", "uint128", "int24"], swap_log["data"])
        balances = {t: net.view(t, "balanceOf(address)", ["uint256"], pool)[0]
                    for t in (pepe, v3.weth)}
        with edge_process(home) as base:
            yield {"home": home, "base": base + "/api/v1", "pool": pool, "other": other,
                   "pepe": pepe, "weth": v3.weth, "token0": token0, "buy": buy,
                   "amounts": (amount0, amount1), "sqrt_price": sqrt_price, "tick": tick,
                   "at": at, "narrow": narrow, "balances": balances, "accounts": net.accounts,
                   "taken": liquidity // 2, **others}


def other_families(net, weth: str, aggregator: str) -> dict:
    """A V4 pool of native ETH and TOAD (a buy of 2 ETH), a PancakeSwap V3 pool of TOAD and
    WETH, and a stable pool of USDC and DAI (a sale of 30,000 USDC); what each said."""
    v4, pancake, solidly = (dexes.uniswap_v4(net), dexes.pancakeswap_v3(net, weth, aggregator),
                            dexes.solidly(net))
    toad = dexes.token(net, "Toad", "TOAD", 10**12 * E18)
    # 1,000 TOAD an ETH (token1 per token0, ETH the zero address): √P = √1000.
    key, singleton = v4.pool(dexes.NATIVE, toad, 3_000, 60, int(math.sqrt(1_000) * Q96))
    v4.modify(key, (60_000, 78_000), 10**22, 0, value=10_000 * E18)
    v4_buy = v4.swap(key, True, 2 * E18, 3, value=2 * E18)
    token0, token1 = sorted([toad, weth])
    price = 0.001 if token0 == toad else 1_000.0
    concentrated = pancake.pool(token0, token1, 2_500, int(math.sqrt(price) * Q96))
    at = math.floor(math.log(price) / math.log(1.0001) / 50) * 50
    pancake.mint(concentrated, (at - 5_000, at + 5_000), 10**20, 0)
    usdc = dexes.token(net, "USD Coin", "USDC", 10**9 * 10**6, 6)
    dai = dexes.token(net, "Dai", "DAI", 10**9 * E18)
    stable = solidly.pool(usdc, dai, True)
    whole = {usdc: 1_000_000 * 10**6, dai: 1_000_000 * E18}
    s0, s1 = solidly.tokens(stable)
    solidly.add_liquidity(stable, whole[s0], whole[s1], 0)
    stable_sale = solidly.swap(stable, usdc, 30_000 * 10**6, 0)
    return {"venues": [v4.venue(), pancake.venue(), solidly.venue()], "singleton": singleton,
            "v4_swap": decoded(["int128", "int128", "uint160", "uint128", "int24", "uint24"],
                               next(log for log in v4_buy["logs"]
                                    if log["topics"][0] == V4_SWAP)["data"]),
            "concentrated": concentrated, "stable": stable, "usdc": usdc, "dai": dai,
            "stable_tokens": (s0, s1),
            "stable_synced": decoded(["uint256", "uint256"], [
                log for log in stable_sale["logs"] if log["topics"][0] == SOLIDLY_SYNC][-1][
                "data"])}


def get(chain, path: str) -> dict:
    answer = httpx.get(chain["base"] + path, timeout=30)
    assert answer.status_code == 200, answer.text
    return answer.json()


def test_the_swap_crossed_the_narrow_positions_edge(chain):
    # WETH in moves the price towards more WETH per PEPE: the tick rises if PEPE is token0.
    low, high = chain["narrow"]
    assert chain["tick"] > high if chain["token0"] == chain["pepe"] else chain["tick"] < low


def test_the_v3_pair_row_by_hand(chain):
    # The price is the swap's sqrtPriceX96, squared (both tokens have 18 decimals).
    p = (chain["sqrt_price"] / Q96) ** 2
    pepe_in_weth = p if chain["token0"] == chain["pepe"] else 1 / p
    row = get(chain, f"/chains/devnet/pairs/{chain['pool']}")
    sides = {t["symbol"]: t for t in row["tokens"]}
    assert sides["PEPE"]["price_usd"] == pytest.approx(pepe_in_weth * 3_000, rel=1e-12)
    assert row["pair_fee"] == pytest.approx(0.003, rel=1e-12)
    # Liquidity: what the pool holds, each token at its price.
    balances = chain["balances"]
    worth = (balances[chain["weth"]] / E18 + balances[chain["pepe"]] / E18 * pepe_in_weth) * 3_000
    assert row["liquidity_usd"] == pytest.approx(worth, rel=1e-9)
    # The buy: 20 WETH in.
    weth_in = chain["amounts"][1] if chain["token0"] == chain["pepe"] else chain["amounts"][0]
    assert weth_in == 20 * E18
    m5 = row["txn"]["m5"]
    assert (m5["buys"], m5["sells"]) == (1, 0)
    assert m5["buy_volume"] == pytest.approx(20 * 3_000, rel=1e-9)
    other = get(chain, f"/chains/devnet/pairs/{chain['other']}")
    assert other["pair_fee"] == pytest.approx(0.0005, rel=1e-12)


def test_a_position_based_pool_is_not_called_unlocked(chain):
    # No LP supply to burn or lock: `lp_unlocked` (15) does not apply. What is raised: the
    # base token's contract not verified (5; no source is read on a real lake); the pool
    # holds far more than the chain's minimum liquidity, nobody pulled it, no tax is set.
    row = get(chain, f"/chains/devnet/pairs/{chain['pool']}")
    assert row["safety"]["labels"] == ["unverified_contract"]
    assert row["safety"]["score"] == 100 - 5


def test_a_position_is_its_nfts_holder(chain):
    events = LakeWriter(chain["home"] / "lake").read("liquidity_events").filter(
        pl.col("pair") == chain["pool"]).sort("block_number")
    accounts = chain["accounts"]
    assert events.select("kind", "owner").rows() == [("mint", accounts[0]),
                                                     ("mint", accounts[1]),
                                                     ("burn", accounts[1])]
    assert int(events["liquidity"][2]) == chain["taken"]


def test_a_wallets_pnl_on_a_v3_pool_by_hand(chain):
    # Account 2 bought PEPE for 20 WETH (60,000 USD) and holds it: nothing realised, and its
    # position is worth what it got at the pool's price now.
    got = -(chain["amounts"][0] if chain["token0"] == chain["pepe"] else chain["amounts"][1])
    p = (chain["sqrt_price"] / Q96) ** 2
    pepe_usd = (p if chain["token0"] == chain["pepe"] else 1 / p) * 3_000
    profile = get(chain, f"/chains/devnet/wallets/{chain['accounts'][2]}")
    day = next(m for m in profile["metrics"] if m["window"] == "1d")
    assert day["invested_usd"] == pytest.approx(60_000, rel=1e-9)
    assert day["realized_pnl_usd"] == pytest.approx(0.0, abs=1e-9)
    assert day["unrealized_pnl_usd"] == pytest.approx(got / E18 * pepe_usd - 60_000, rel=1e-9)


def test_a_v4_pool_of_native_eth_by_hand(chain):
    # Served at its pool id; ETH is the zero address, shown as the chain's native currency.
    row = get(chain, f"/chains/devnet/pairs/{chain['singleton']}")
    assert row["pair_address"] == chain["singleton"]
    sides = {t["symbol"]: t for t in row["tokens"]}
    assert sides["ETH"]["address"] == "0x" + "0" * 40
    amount0, _, sqrt_price, active, _, fee = chain["v4_swap"]
    # The buy: 2 ETH in; TOAD at 3,000 USD over its price in TOAD an ETH after the swap.
    assert (amount0, fee) == (-2 * E18, 3_000)
    toad_per_eth = (sqrt_price / Q96) ** 2
    assert sides["TOAD"]["price_usd"] == pytest.approx(3_000 / toad_per_eth, rel=1e-9)
    assert row["pair_fee"] == pytest.approx(0.003, rel=1e-12)
    # Its liquidity: what the active liquidity holds at the price, L / √P ETH on each side.
    assert row["liquidity_usd"] == pytest.approx(2 * active / (sqrt_price / Q96) / E18 * 3_000,
                                                 rel=1e-9)
    m5 = row["txn"]["m5"]
    assert (m5["buys"], m5["sells"]) == (1, 0)
    assert m5["buy_volume"] == pytest.approx(2 * 3_000, rel=1e-9)


def test_a_pancakeswap_v3_pools_fee_tier(chain):
    row = get(chain, f"/chains/devnet/pairs/{chain['concentrated']}")
    # Fee tier 2,500: 0.25 %; TOAD at 0.001 WETH as initialised (no swap since).
    assert row["pair_fee"] == pytest.approx(0.0025, rel=1e-12)
    sides = {t["symbol"]: t for t in row["tokens"]}
    assert sides["TOAD"]["price_usd"] == pytest.approx(3.0, rel=1e-6)


def test_a_stable_pools_price_is_its_curves(chain):
    # DAI in USDC at the curve's marginal rate at the reserves after the sale, the USDC peg
    # 1 USD: (3x²y + y³) / (x³ + 3xy²) token1 per token0 in whole tokens.
    s0, s1 = chain["stable_tokens"]
    r0, r1 = chain["stable_synced"]
    places = {chain["usdc"]: 6, chain["dai"]: 18}
    x, y = r0 / 10 ** places[s0], r1 / 10 ** places[s1]
    rate = (3 * x * x * y + y**3) / (x**3 + 3 * x * y * y)
    dai_usd = rate if s0 == chain["dai"] else 1 / rate
    row = get(chain, f"/chains/devnet/pairs/{chain['stable']}")
    sides = {t["symbol"]: t for t in row["tokens"]}
    assert sides["DAI"]["price_usd"] == pytest.approx(dai_usd, rel=1e-9)
    assert abs(dai_usd / (x / y if s0 == chain["dai"] else y / x) - 1) > 1e-4
    assert row["pair_fee"] == pytest.approx(0.0005, rel=1e-12)

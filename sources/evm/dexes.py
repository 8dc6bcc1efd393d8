"""The other pool families on a devnet, to test and bench the ingest on: Uniswap V4 and
PancakeSwap V3 from their npm packages' own bytecode, and Solidly-style pools (volatile and
stable) from the contracts of `contracts/Solidly.sol`, beside WETH priced by an ETH/USD
aggregator."""

from dataclasses import dataclass

from sources.evm.devnet import ETH_USD, MAX_UINT, TOKEN_ARGS, Devnet, call_data


def holder_code(code: str) -> str:
    """Creation code that deploys `code` (hex) as a contract's code, to be read back with
    EXTCODECOPY: PUSH2 size, DUP1, PUSH1 12, PUSH1 0, CODECOPY, PUSH1 0, RETURN, then the code."""
    size = len(code) // 2
    return f"61{size:04x}80600c6000396000f3" + code


def pool_tokens(net: Devnet, pool: str) -> tuple[str, str]:
    """A pool contract's token0 and token1."""
    return (str(net.view(pool, "token0()", ["address"])[0]).lower(),
            str(net.view(pool, "token1()", ["address"])[0]).lower())


@dataclass
class PancakeV3:
    """PancakeSwap V3's factory and pools as its npm package ships them, deployed by a pool
    deployer of ours that holds the pool's creation code; positions and swaps through a
    callback contract of ours (no position manager: a position is its minter's)."""

    net: Devnet
    weth: str
    factory: str
    callee: str
    aggregator: str

    def pool(self, token0: str, token1: str, fee: int, sqrt_price_x96: int) -> str:
        """Make and initialise the pool of two tokens (in address order) at a fee tier."""
        self.net.send(self.factory, "createPool(address,address,uint24)", token0, token1, fee)
        pool = str(self.net.view(self.factory, "getPool(address,address,uint24)", ["address"],
                                 token0, token1, fee)[0]).lower()
        self.net.send(pool, "initialize(uint160)", sqrt_price_x96)
        return pool

    def mint(self, pool: str, ticks: tuple[int, int], liquidity: int, sender: int) -> dict:
        """Add `liquidity` between two ticks for `sender`; returns the receipt."""
        for token in self.tokens(pool):
            self.net.send(token, "approve(address,uint256)", self.callee, MAX_UINT, sender=sender)
        return self.net.send(self.callee, "mint(address,int24,int24,uint128)", pool, *ticks,
                             liquidity, sender=sender)

    def swap(self, pool: str, zero_for_one: bool, amount_in: int, sender: int) -> dict:
        """Sell exactly `amount_in` of token0 (`zero_for_one`) or token1 for `sender`."""
        token = self.tokens(pool)[0 if zero_for_one else 1]
        self.net.send(token, "approve(address,uint256)", self.callee, MAX_UINT, sender=sender)
        return self.net.send(self.callee, "swapExactIn(address,bool,uint256,address)", pool,
                             zero_for_one, amount_in, self.net.accounts[sender], sender=sender)

    def tokens(self, pool: str) -> tuple[str, str]:
        """A pool's token0 and token1."""
        return pool_tokens(self.net, pool)

    def venue(self) -> str:
        """The venues file's entry for this factory."""
        return f'{{name: "PancakeSwap V3", type: pancakeswap_v3, factory: "{self.factory}", ' \
               f'router: "{self.callee}"}}'


def pancakeswap_v3(net: Devnet, weth: str, aggregator: str) -> PancakeV3:
    """Deploy PancakeSwap V3's factory from its npm bytecode, with our pool deployer (over the
    package's pool creation code) and callback contract, beside `weth` and its aggregator."""
    code = net.transact({"from": net.accounts[0], "gas": hex(15_000_000),
                         "data": "0x" + holder_code(net.contracts["PancakeV3Pool"]["bin"])})
    deployer = net.deploy("PancakeV3PoolDeployer", ["address"], [code["contractAddress"]])
    factory = net.deploy("PancakeV3Factory", ["address"], [deployer])
    return PancakeV3(net, weth, factory, net.deploy("PancakeV3Callee", [], []), aggregator)


@dataclass
class Solidly:
    """A Solidly-style factory (volatile and stable pools, fees in basis points) and a router,
    from `contracts/Solidly.sol`."""

    net: Devnet
    factory: str
    router: str

    def pool(self, token_a: str, token_b: str, stable: bool) -> str:
        """Make the pool of two tokens, stable or volatile; returns its address."""
        self.net.send(self.factory, "createPool(address,address,bool)", token_a, token_b, stable)
        return str(self.net.view(self.factory, "getPool(address,address,bool)", ["address"],
                                 token_a, token_b, stable)[0]).lower()

    def add_liquidity(self, pool: str, amount0: int, amount1: int, sender: int) -> dict:
        """Add token0 and token1 (the pool's order) for `sender`."""
        for token in self.tokens(pool):
            self.net.send(token, "approve(address,uint256)", self.router, MAX_UINT, sender=sender)
        return self.net.send(self.router, "addLiquidity(address,uint256,uint256,address)", pool,
                             amount0, amount1, self.net.accounts[sender], sender=sender)

    def swap(self, pool: str, token_in: str, amount_in: int, sender: int) -> dict:
        """Sell exactly `amount_in` of `token_in` into the pool for `sender`."""
        self.net.send(token_in, "approve(address,uint256)", self.router, MAX_UINT, sender=sender)
        return self.net.send(self.router, "swapExactIn(address,address,uint256,address)", pool,
                             token_in, amount_in, self.net.accounts[sender], sender=sender)

    def tokens(self, pool: str) -> tuple[str, str]:
        """A pool's token0 and token1."""
        return pool_tokens(self.net, pool)

    def venue(self, name: str = "Aerodrome") -> str:
        """The venues file's entry for this factory."""
        return f'{{name: "{name}", type: solidly, factory: "{self.factory}", ' \
               f'router: "{self.router}"}}'


def solidly(net: Devnet) -> Solidly:
    """Deploy a Solidly-style factory and router."""
    return Solidly(net, net.deploy("SolidlyFactory", [], []), net.deploy("SolidlyRouter", [], []))


NATIVE = "0x" + "0" * 40
# A V4 pool key's fee that says its hooks set it.
DYNAMIC_FEE = 0x800000
POOL_KEY = "(address,address,uint24,int24,address)"


@dataclass
class UniswapV4:
    """Uniswap V4's pool manager, and its own unlock-callback routers (`PoolSwapTest`,
    `PoolModifyLiquidityTest`), as `@uniswap/v4-core` ships them; native ETH is currency
    `address(0)`, paid with the call."""

    net: Devnet
    manager: str
    swapper: str
    liquidity: str

    def pool(self, currency0: str, currency1: str, fee: int, spacing: int,
             sqrt_price_x96: int, hooks: str = NATIVE) -> tuple[tuple, str]:
        """Initialise the pool of two currencies (in address order) with `hooks` (none unless
        named); returns its key and its id."""
        key = (currency0, currency1, fee, spacing, hooks)
        receipt = self.net.send(self.manager, f"initialize({POOL_KEY},uint160)", key,
                                sqrt_price_x96)
        return key, receipt["logs"][0]["topics"][1]

    def modify(self, key: tuple, ticks: tuple[int, int], delta: int, sender: int,
               value: int = 0) -> dict:
        """Add (`delta` > 0) or remove liquidity between two ticks for `sender`, paying native
        ETH with `value`; returns the receipt."""
        self._approve(key, self.liquidity, sender)
        return self._call(self.liquidity, f"modifyLiquidity({POOL_KEY},(int24,int24,int256,"
                          "bytes32),bytes)", (key, (*ticks, delta, b"\0" * 32), b""), sender,
                          value)

    def swap(self, key: tuple, zero_for_one: bool, amount_in: int, sender: int,
             value: int = 0) -> dict:
        """Sell exactly `amount_in` of currency0 (`zero_for_one`) or currency1 for `sender`,
        paying native ETH with `value`; returns the receipt."""
        self._approve(key, self.swapper, sender)
        limit = MIN_SQRT_PRICE + 1 if zero_for_one else MAX_SQRT_PRICE - 1
        return self._call(self.swapper, f"swap({POOL_KEY},(bool,int256,uint160),(bool,bool),"
                          "bytes)", (key, (zero_for_one, -amount_in, limit), (False, False), b""),
                          sender, value)

    def set_fee(self, key: tuple, fee: int) -> dict:
        """Set a dynamic-fee pool's fee (hundredths of a basis point) as its hooks would:
        from the hooks' address, the node impersonating it."""
        hooks = key[4]
        self.net.rpc.call("anvil_impersonateAccount", hooks)
        self.net.rpc.call("anvil_setBalance", hooks, hex(10**18))
        try:
            return self.net.transact({"from": hooks, "to": self.manager, "data": call_data(
                f"updateDynamicLPFee({POOL_KEY},uint24)", key, fee)})
        finally:
            self.net.rpc.call("anvil_stopImpersonatingAccount", hooks)

    def _approve(self, key: tuple, router: str, sender: int) -> None:
        for currency in key[:2]:
            if currency != NATIVE:
                self.net.send(currency, "approve(address,uint256)", router, MAX_UINT,
                              sender=sender)

    def _call(self, to: str, signature: str, args: tuple, sender: int, value: int) -> dict:
        return self.net.transact({"from": self.net.accounts[sender], "to": to,
                                  "value": hex(value), "data": call_data(signature, *args)})

    def positions(self) -> str:
        """Deploy a position manager of NFTs over this pool manager (`contracts/V4Positions`,
        as V4's PositionManager keeps positions); returns its address."""
        return self.net.deploy("V4Positions", ["address"], [self.manager])

    def venue(self, positions: str | None = None) -> str:
        """The venues file's entry for this pool manager (and its position manager)."""
        named = f'position_manager: "{positions}", ' if positions else ""
        return f'{{name: "Uniswap V4", type: uniswap_v4, {named}factory: "{self.manager}", ' \
               f'router: "{self.swapper}"}}'


# TickMath's bounds of a pool's price, as Q64.96 square roots.
MIN_SQRT_PRICE = 4295128739
MAX_SQRT_PRICE = 1461446703485210103287273052203988822378723970342


def uniswap_v4(net: Devnet) -> UniswapV4:
    """Deploy Uniswap V4's pool manager and its test routers from their npm bytecode."""
    manager = net.deploy("PoolManager", ["address"], [net.accounts[0]])
    return UniswapV4(net, manager, net.deploy("PoolSwapTest", ["address"], [manager]),
                     net.deploy("PoolModifyLiquidityTest", ["address"], [manager]))


def weth_and_feed(net: Devnet, eth_usd: int = ETH_USD) -> tuple[str, str]:
    """WETH9 (from `@uniswap/v2-periphery`) and an ETH/USD aggregator answering `eth_usd`."""
    return (net.deploy("WETH9", [], []),
            net.deploy("MockV3Aggregator", ["uint8", "int256"], [8, eth_usd]))


def token(net: Devnet, name: str, symbol: str, supply: int, decimals: int = 18) -> str:
    """A plain ERC-20 whose whole supply account 0 holds."""
    return net.deploy("Token", TOKEN_ARGS, [name, symbol, decimals, supply])


def venues_file(slug: str, weth: str, aggregator: str, venues: list[str],
                pegs: dict[str, float] | None = None) -> str:
    """A devnet's venues file of several venues (their entries), WETH priced by its aggregator
    and other quotes by pegs (USD by token)."""
    listed = "".join(f"  - {v}\n" for v in venues)
    pegged = "".join(f'  - {{token: "{t}", peg: {usd}}}\n' for t, usd in (pegs or {}).items())
    return (f'chain: {{slug: {slug}, display_name: Devnet, '
            f'explorer_url: "https://explorer.invalid", native_token: "{weth}"}}\n'
            f'venues:\n{listed}quotes:\n  - {{token: "{weth}", chainlink: "{aggregator}"}}\n'
            f'{pegged}')

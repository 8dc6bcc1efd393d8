"""A local chain to try and test the ingest on: an anvil node from the project's npm lockfile,
the small V2-style contracts of `contracts/` compiled offline by solc-js, and helpers to deploy
them and trade through them from the node's unlocked accounts."""

import hashlib
import json
import os
import signal
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from eth_abi import decode, encode
from eth_utils import keccak

from core.home import home
from core.ports import free_port
from sources.evm.rpc import Rpc, quantity

REPO = Path(__file__).resolve().parents[2]
CONTRACTS = Path(__file__).resolve().parent / "contracts"
NODE_MODULES = REPO / "node_modules"
CHAINLINK = NODE_MODULES / "@chainlink" / "contracts" / "src" / "v0.8"
AGGREGATOR = CHAINLINK / "tests" / "MockV3Aggregator.sol"
# Uniswap's and PancakeSwap's own compiled contracts, as their npm packages ship them (V4's
# test routers are its own unlock-callback routers).
PUBLISHED = {"UniswapV2Factory": "@uniswap/v2-core/build/UniswapV2Factory.json",
           "UniswapV2Pair": "@uniswap/v2-core/build/UniswapV2Pair.json",
           "UniswapV2Router02": "@uniswap/v2-periphery/build/UniswapV2Router02.json",
           "WETH9": "@uniswap/v2-periphery/build/WETH9.json",
           "UniswapV3Factory": "@uniswap/v3-core/artifacts/contracts/UniswapV3Factory.sol/"
                               "UniswapV3Factory.json",
           "NonfungiblePositionManager": "@uniswap/v3-periphery/artifacts/contracts/"
                                         "NonfungiblePositionManager.sol/"
                                         "NonfungiblePositionManager.json",
           "SwapRouter": "@uniswap/v3-periphery/artifacts/contracts/SwapRouter.sol/"
                         "SwapRouter.json",
             "PancakeV3Factory": "@pancakeswap/v3-core/artifacts/contracts/PancakeV3Factory.sol/"
                                 "PancakeV3Factory.json",
             "PancakeV3Pool": "@pancakeswap/v3-core/artifacts/contracts/PancakeV3Pool.sol/"
                              "PancakeV3Pool.json",
             "PoolManager": "@uniswap/v4-core/out/PoolManager.sol/PoolManager.json",
             "PoolSwapTest": "@uniswap/v4-core/out/PoolSwapTest.sol/PoolSwapTest.json",
             "PoolModifyLiquidityTest": "@uniswap/v4-core/out/PoolModifyLiquidityTest.sol/"
                                        "PoolModifyLiquidityTest.json"}


class DevnetError(RuntimeError):
    """The node or the compiler is missing or failed."""


def anvil_binary() -> Path:
    """The anvil executable npm installed (the platform package's, not its node wrapper)."""
    found = sorted(NODE_MODULES.glob("@foundry-rs/anvil-*/bin/anvil"))
    if not found:
        raise DevnetError(f"no anvil under {NODE_MODULES}: run `npm ci` (make does)")
    return found[0]


def compiled() -> dict[str, dict[str, Any]]:
    """Every contract of `contracts/` and Chainlink's MockV3Aggregator (from its npm package)
    by name: its `abi` and `bin`, compiled once per source."""
    ours = sorted(CONTRACTS.glob("*.sol"))
    if not AGGREGATOR.exists():
        raise DevnetError(f"no {AGGREGATOR.name} under {NODE_MODULES}: run `npm ci` (make does)")
    digest = hashlib.sha256(b"".join(p.read_bytes() for p in [*ours, AGGREGATOR])).hexdigest()
    out = home() / "devnet" / digest[:16]
    if not (out / "done").exists():
        solcjs = NODE_MODULES / ".bin" / "solcjs"
        if not solcjs.exists():
            raise DevnetError(f"no solcjs under {NODE_MODULES}: run `npm ci` (make does)")
        out.mkdir(parents=True, exist_ok=True)
        for base, sources in ((CONTRACTS, ours), (CHAINLINK, [AGGREGATOR])):
            # Ours import OpenZeppelin's from its npm package.
            done = subprocess.run([str(solcjs), "--bin", "--abi", "--optimize", "--base-path",
                                   str(base), "--include-path", str(NODE_MODULES), "-o",
                                   str(out), *map(str, sources)],
                                  capture_output=True, text=True, check=False)
            if done.returncode:
                raise DevnetError(f"solcjs failed: {done.stderr[-2000:]}")
        (out / "done").touch()
    contracts: dict[str, dict[str, Any]] = {}
    for abi in out.glob("*.abi"):
        name = abi.stem.split("_sol_")[-1]
        contracts[name] = {"abi": json.loads(abi.read_text()),
                           "bin": abi.with_suffix(".bin").read_text().strip()}
    for name, artifact in PUBLISHED.items():
        built = json.loads((NODE_MODULES / artifact).read_text())
        # Hardhat's artifacts give the bytecode as text, Foundry's under `object`.
        code = built["bytecode"]
        contracts[name] = {"abi": built["abi"], "bin": str(
            code["object"] if isinstance(code, dict) else code).removeprefix("0x")}
    return contracts


@dataclass
class Node:
    """A running anvil node."""

    process: subprocess.Popen
    url: str

    def stop(self) -> None:
        """End the node by its PID."""
        if self.process.poll() is None:
            os.kill(self.process.pid, signal.SIGTERM)
            try:
                self.process.wait(10)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()


def start_node(chain_id: int = 31337, port: int | None = None,
               block_time_s: float | None = None) -> Node:
    """Start anvil on loopback and wait until it answers."""
    port = port or free_port()
    args = [str(anvil_binary()), "--host", "127.0.0.1", "--port", str(port), "--chain-id",
            str(chain_id), "--silent", "--accounts", "10", "--balance", "1000000"]
    if block_time_s is not None:
        args += ["--block-time", str(block_time_s)]
    process = subprocess.Popen(args, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    url = f"http://127.0.0.1:{port}"
    rpc = Rpc(url, backoff_s=())
    deadline = time.monotonic() + 30
    try:
        while True:
            try:
                rpc.call("eth_chainId")
                return Node(process, url)
            except Exception:
                if process.poll() is not None or time.monotonic() > deadline:
                    raise DevnetError(f"anvil did not start on port {port}") from None
                time.sleep(0.05)
    finally:
        rpc.close()


def selector(signature: str) -> bytes:
    """A function's 4-byte selector."""
    return keccak(text=signature)[:4]


def call_data(signature: str, *args: Any) -> str:
    """The call data of `signature` (e.g. "transfer(address,uint256)", or with a tuple:
    "mint((address,uint24))") with `args`."""
    types = _top_level(signature[signature.index("(") + 1:-1])
    encoded = encode(types, list(args)) if types else b""
    return "0x" + (selector(signature) + encoded).hex()


def _top_level(types: str) -> list[str]:
    """A parameter list's types, split at the commas outside parentheses."""
    out, depth, start = [], 0, 0
    for i, c in enumerate(types):
        depth += {"(": 1, ")": -1}.get(c, 0)
        if c == "," and depth == 0:
            out.append(types[start:i])
            start = i + 1
    return [t for t in [*out, types[start:]] if t]


class Devnet:
    """Deploys and calls the contracts on a node from its unlocked accounts."""

    def __init__(self, url: str) -> None:
        self.rpc = Rpc(url, backoff_s=(0.1, 0.2))
        self.accounts: list[str] = [a.lower() for a in self.rpc.call("eth_accounts")]
        self.contracts = compiled()

    def close(self) -> None:
        """Close the connection to the node."""
        self.rpc.close()

    def deploy(self, contract: str, types: list[str], args: list[Any],
               sender: int = 0) -> str:
        """Deploy `contract`; returns its address."""
        code = self.contracts[contract]["bin"] + encode(types, args).hex()
        # Uniswap V3's factory carries its pools' code: near the size limit, 6M gas and more.
        receipt = self.transact({"from": self.accounts[sender], "data": "0x" + code,
                                 "gas": hex(15_000_000)})
        return str(receipt["contractAddress"]).lower()

    def send(self, to: str, signature: str, *args: Any, sender: int = 0) -> dict:
        """Call `signature` on `to` in a transaction; returns its receipt."""
        return self.transact({"from": self.accounts[sender], "to": to,
                              "data": call_data(signature, *args)})

    def transact(self, tx: dict, wait: bool = True) -> dict:
        """Send a transaction and (when the node mines on its own) wait for its receipt."""
        tx_hash = self.rpc.call("eth_sendTransaction", {"gas": hex(5_000_000), **tx})
        if not wait:
            return {"transactionHash": tx_hash}
        for _ in range(200):
            receipt = self.rpc.call("eth_getTransactionReceipt", tx_hash)
            if receipt is not None:
                if quantity(receipt["status"]) != 1:
                    raise DevnetError(f"transaction {tx_hash} reverted")
                return receipt
            time.sleep(0.02)
        raise DevnetError(f"transaction {tx_hash} was not mined")

    def view(self, to: str, signature: str, returns: list[str], *args: Any) -> tuple:
        """A read-only call's decoded answer."""
        answer = self.rpc.call("eth_call", {"to": to, "data": call_data(signature, *args)},
                               "latest")
        return tuple(decode(returns, bytes.fromhex(answer.removeprefix("0x"))))

    def mine(self, blocks: int = 1) -> None:
        """Mine `blocks` blocks now."""
        self.rpc.call("anvil_mine", hex(blocks))

    def automine(self, on: bool) -> None:
        """Mine each transaction as it comes (on) or only when asked (off)."""
        self.rpc.call("evm_setAutomine", on)

    def block_number(self) -> int:
        """The node's head."""
        return quantity(self.rpc.call("eth_blockNumber"))


TOKEN_ARGS = ["string", "string", "uint8", "uint256"]
MAX_UINT = 2**256 - 1


@dataclass
class V2Market:
    """A quote token priced by a Chainlink aggregator, a factory and a router on a devnet, and
    the pairs made on them."""

    net: Devnet
    quote: str
    factory: str
    router: str
    aggregator: str

    def answer(self, usd: int) -> dict:
        """The aggregator's next answer: the quote's price in 10^-8 USD."""
        return self.net.send(self.aggregator, "updateAnswer(int256)", usd)

    def token(self, name: str, symbol: str, supply: int, decimals: int = 18,
              sender: int = 0) -> str:
        """Deploy a plain ERC-20 whose whole supply `sender` holds."""
        return self.net.deploy("Token", TOKEN_ARGS, [name, symbol, decimals, supply], sender)

    def owned_token(self, name: str, symbol: str, supply: int) -> str:
        """Deploy an ERC-20 account 0 owns (OpenZeppelin's `Ownable`) and holds."""
        return self.net.deploy("OwnedToken", ["string", "string", "uint256"],
                               [name, symbol, supply])

    def pair(self, base: str, quote: str | None = None) -> str:
        """Make the pair of `base` and `quote` (the market's quote token unless named)."""
        receipt = self.net.send(self.factory, "createPair(address,address)", base,
                                quote or self.quote)
        return "0x" + receipt["logs"][-1]["data"][26:66]

    def pool(self, name: str, symbol: str, quote_amount: int, base_amount: int,
             supply: int = 10**27, base: str | None = None) -> tuple[str, str]:
        """A new token (held by account 0), or `base`, paired with the quote, with
        `quote_amount` and `base_amount` of liquidity from account 0; returns (pair, token)."""
        base = base or self.token(name, symbol, supply)
        pair = self.pair(base)
        self.approve(0, self.quote, base)
        quote_first = sorted([base, self.quote])[0] == self.quote
        amounts = (quote_amount, base_amount) if quote_first else (base_amount, quote_amount)
        self.add_liquidity(pair, *amounts)
        return pair, base

    def approve(self, sender: int, *tokens: str) -> None:
        """Let the router move `sender`'s tokens."""
        for token in tokens:
            self.net.send(token, "approve(address,uint256)", self.router, MAX_UINT,
                          sender=sender)

    def add_liquidity(self, pair: str, amount0: int, amount1: int, sender: int = 0) -> dict:
        """Add token0 and token1 to `pair` (the pair's own order)."""
        return self.net.send(self.router, "addLiquidity(address,uint256,uint256,address)", pair,
                             amount0, amount1, self.net.accounts[sender], sender=sender)

    def swap(self, pair: str, token_in: str, amount_in: int, sender: int,
             wait: bool = True) -> dict:
        """Sell exactly `amount_in` of `token_in` into `pair` for `sender`."""
        tx = {"from": self.net.accounts[sender], "to": self.router,
              "data": call_data("swapExactIn(address,address,uint256,address)", pair, token_in,
                                amount_in, self.net.accounts[sender])}
        return self.net.transact(tx, wait)

    def transfer(self, token: str, to: int, amount: int, sender: int = 0) -> dict:
        """Move `amount` of `token` from one account to another."""
        return self.net.send(token, "transfer(address,uint256)", self.net.accounts[to], amount,
                             sender=sender)

    def venues_file(self, slug: str = "devnet") -> str:
        """A venues file naming this market's factory, router, quote token and aggregator."""
        return venues_text(slug, self.factory, self.router, self.quote, self.aggregator)


def venues_text(slug: str, factory: str, router: str, quote: str, aggregator: str,
                venue: str = "{name: \"Uniswap V2\", type: uniswap_v2") -> str:
    """A devnet's venues file: one venue (Uniswap V2 unless `venue` opens another), its quote
    priced by an aggregator."""
    return (f'chain: {{slug: {slug}, display_name: Devnet, '
            f'explorer_url: "https://explorer.invalid", native_token: "{quote}"}}\n'
            f'venues:\n  - {venue}, factory: "{factory}", router: "{router}"}}\n'
            f'quotes:\n  - {{token: "{quote}", chainlink: "{aggregator}"}}\n')


# The devnet's ETH/USD answer when it starts: 3,000 USD in Chainlink's 8 decimals.
ETH_USD = 3_000 * 10**8


def v2_market(net: Devnet, quote_supply: int = 10**24, eth_usd: int = ETH_USD) -> V2Market:
    """Deploy a wrapped-ether quote token (held by account 0), an ETH/USD aggregator answering
    `eth_usd` (10^-8 USD), a factory and a router."""
    quote = net.deploy("Token", TOKEN_ARGS, ["Wrapped Ether", "WETH", 18, quote_supply])
    aggregator = net.deploy("MockV3Aggregator", ["uint8", "int256"], [8, eth_usd])
    return V2Market(net, quote, net.deploy("Factory", [], []), net.deploy("Router", [], []),
                    aggregator)



# Uniswap V2's router takes a deadline with every call: one far in the future.
DEADLINE = 2**32


@dataclass
class UniswapV2:
    """Uniswap V2 as deployed from its own npm bytecode (`@uniswap/v2-core`'s factory and
    pairs, `@uniswap/v2-periphery`'s Router02 and WETH9), with WETH priced by an ETH/USD
    aggregator."""

    net: Devnet
    weth: str
    factory: str
    router: str
    aggregator: str

    def wrap(self, sender: int, wei: int) -> None:
        """Wrap `wei` of `sender`'s ether into WETH and let the router move it."""
        self.net.transact({"from": self.net.accounts[sender], "to": self.weth,
                           "value": hex(wei), "data": call_data("deposit()")})
        self.net.send(self.weth, "approve(address,uint256)", self.router, MAX_UINT,
                      sender=sender)

    def pool(self, token: str, token_amount: int, weth_amount: int, sender: int = 0) -> str:
        """The token/WETH pair, made by the router's first `addLiquidity`; returns its
        address."""
        self.net.send(token, "approve(address,uint256)", self.router, MAX_UINT, sender=sender)
        self.net.send(self.router, "addLiquidity(address,address,uint256,uint256,uint256,"
                      "uint256,address,uint256)", token, self.weth, token_amount, weth_amount,
                      0, 0, self.net.accounts[sender], DEADLINE, sender=sender)
        return str(self.net.view(self.factory, "getPair(address,address)", ["address"], token,
                                 self.weth)[0]).lower()

    def swap(self, path: list[str], amount_in: int, sender: int) -> dict:
        """`swapExactTokensForTokens` of `amount_in` along `path` for `sender`."""
        return self.net.send(self.router, "swapExactTokensForTokens(uint256,uint256,"
                             "address[],address,uint256)", amount_in, 0, path,
                             self.net.accounts[sender], DEADLINE, sender=sender)

    def trade(self, token: str, amount_in: int, buy: bool, sender: int) -> dict:
        """Buy `token` with `amount_in` WETH, or sell `amount_in` of it for WETH, through
        Router02's `…SupportingFeeOnTransferTokens` swap (the one a taxed token needs)."""
        path = [self.weth, token] if buy else [token, self.weth]
        if not buy:
            self.net.send(token, "approve(address,uint256)", self.router, MAX_UINT,
                          sender=sender)
        return self.net.send(self.router, "swapExactTokensForTokensSupportingFeeOnTransfer"
                             "Tokens(uint256,uint256,address[],address,uint256)", amount_in, 0,
                             path, self.net.accounts[sender], DEADLINE, sender=sender)

    def venues_file(self, slug: str = "devnet") -> str:
        """A venues file naming the factory, the router and WETH's aggregator."""
        return venues_text(slug, self.factory, self.router, self.weth, self.aggregator)


def uniswap_v2(net: Devnet, eth_usd: int = ETH_USD) -> UniswapV2:
    """Deploy WETH9, Uniswap V2's factory and Router02 from their npm bytecode, and an ETH/USD
    aggregator answering `eth_usd` (10^-8 USD)."""
    weth = net.deploy("WETH9", [], [])
    factory = net.deploy("UniswapV2Factory", ["address"], [net.accounts[0]])
    router = net.deploy("UniswapV2Router02", ["address", "address"], [factory, weth])
    aggregator = net.deploy("MockV3Aggregator", ["uint8", "int256"], [8, eth_usd])
    return UniswapV2(net, weth, factory, router, aggregator)


@dataclass
class UniswapV3:
    """Uniswap V3 as deployed from its own npm bytecode (`@uniswap/v3-core`'s factory and
    pools, `@uniswap/v3-periphery`'s NonfungiblePositionManager and SwapRouter), over WETH9
    priced by an ETH/USD aggregator."""

    net: Devnet
    weth: str
    factory: str
    positions: str
    router: str
    aggregator: str

    def pool(self, token0: str, token1: str, fee: int, sqrt_price_x96: int) -> str:
        """The pool of two tokens (in address order) at a fee tier, made and initialised at a
        price by the position manager; returns its address."""
        self.net.send(self.positions, "createAndInitializePoolIfNecessary(address,address,"
                      "uint24,uint160)", token0, token1, fee, sqrt_price_x96)
        return str(self.net.view(self.factory, "getPool(address,address,uint24)", ["address"],
                                 token0, token1, fee)[0]).lower()

    def mint(self, token0: str, token1: str, fee: int, ticks: tuple[int, int], amount0: int,
             amount1: int, sender: int) -> dict:
        """A new position of `sender`'s between two ticks, as much liquidity as the amounts
        allow; returns the receipt."""
        for token in (token0, token1):
            self.net.send(token, "approve(address,uint256)", self.positions, MAX_UINT,
                          sender=sender)
        owner = self.net.accounts[sender]
        return self.net.send(
            self.positions, "mint((address,address,uint24,int24,int24,uint256,uint256,uint256,"
            "uint256,address,uint256))", (token0, token1, fee, ticks[0], ticks[1], amount0,
                                          amount1, 0, 0, owner, DEADLINE), sender=sender)

    def burn(self, token_id: int, liquidity: int, sender: int) -> dict:
        """Take `liquidity` out of `sender`'s position `token_id` and collect what it is owed;
        returns the collect's receipt."""
        owner = self.net.accounts[sender]
        self.net.send(self.positions, "decreaseLiquidity((uint256,uint128,uint256,uint256,"
                      "uint256))", (token_id, liquidity, 0, 0, DEADLINE), sender=sender)
        return self.net.send(self.positions, "collect((uint256,address,uint128,uint128))",
                             (token_id, owner, 2**128 - 1, 2**128 - 1), sender=sender)

    def swap(self, token_in: str, token_out: str, fee: int, amount_in: int, sender: int) -> dict:
        """`exactInputSingle` of `amount_in` for `sender`; returns the receipt."""
        self.net.send(token_in, "approve(address,uint256)", self.router, MAX_UINT, sender=sender)
        owner = self.net.accounts[sender]
        return self.net.send(
            self.router, "exactInputSingle((address,address,uint24,address,uint256,uint256,"
            "uint256,uint160))", (token_in, token_out, fee, owner, DEADLINE, amount_in, 0, 0),
            sender=sender)

    def venues_file(self, slug: str = "devnet") -> str:
        """A venues file naming the factory, the router, the position manager and WETH's
        aggregator."""
        return venues_text(slug, self.factory, self.router, self.weth, self.aggregator,
                           f'{{name: "Uniswap V3", type: uniswap_v3, '
                           f'position_manager: "{self.positions}"')


def uniswap_v3(net: Devnet, eth_usd: int = ETH_USD) -> UniswapV3:
    """Deploy WETH9, Uniswap V3's factory, position manager and swap router from their npm
    bytecode, and an ETH/USD aggregator answering `eth_usd` (10^-8 USD)."""
    weth = net.deploy("WETH9", [], [])
    factory = net.deploy("UniswapV3Factory", [], [])
    positions = net.deploy("NonfungiblePositionManager", ["address", "address", "address"],
                           [factory, weth, "0x" + "0" * 40])
    router = net.deploy("SwapRouter", ["address", "address"], [factory, weth])
    aggregator = net.deploy("MockV3Aggregator", ["uint8", "int256"], [8, eth_usd])
    return UniswapV3(net, weth, factory, positions, router, aggregator)

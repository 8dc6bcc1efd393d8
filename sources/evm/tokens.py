"""What the ingest learns of a token from the node: decimals, symbol, name and supply by
`eth_call` (tolerating tokens that answer bytes32 or revert), and where it was deployed."""

from collections.abc import Sequence
from dataclasses import dataclass

from sources.evm.rpc import Rpc, RpcError, quantity

DECIMALS, SYMBOL, NAME, TOTAL_SUPPLY = "0x313ce567", "0x95d89b41", "0x06fdde03", "0x18160ddd"
# A token that does not answer `decimals()` is taken to have 18, as wallets and DEX interfaces
# take it.
DEFAULT_DECIMALS = 18
MAX_DECIMALS = 36


@dataclass(frozen=True)
class TokenFacts:
    """A token as the node describes it."""

    address: str
    symbol: str
    name: str
    decimals: int
    total_supply: int
    deploy_block: int
    deploy_tx: str
    deployer: str


def text(answer: object) -> str:
    """A `symbol()` or `name()` answer: an ABI string, or a bytes32 padded with zeros; empty
    when the call reverted or answered neither."""
    if not isinstance(answer, str) or len(answer) < 66:
        return ""
    body = bytes.fromhex(answer.removeprefix("0x"))
    if len(body) >= 64 and int.from_bytes(body[:32]) == 32:
        length = int.from_bytes(body[32:64])
        if 64 + length <= len(body):
            return _printable(body[64:64 + length])
    return _printable(body[:32].rstrip(b"\0"))


def _printable(raw: bytes) -> str:
    value = raw.decode("utf-8", errors="replace").replace("\0", "").strip()
    return "".join(c for c in value if c.isprintable())[:64]


def number(answer: object) -> int | None:
    """A uint answer, or None when the call reverted or answered nothing."""
    if not isinstance(answer, str) or len(answer) < 3:
        return None
    return int(answer[:66], 16)


def describe(rpc: Rpc, addresses: Sequence[str],
             first_seen: dict[str, tuple[int, str]]) -> dict[str, TokenFacts]:
    """Each token's facts as the node's latest state gives them; `first_seen` gives the block
    and transaction each was first met in, where a node without history places its
    deployment."""
    if not addresses:
        return {}
    calls = [("eth_call", [{"to": a, "data": d}, "latest"])
             for a in addresses for d in (DECIMALS, SYMBOL, NAME, TOTAL_SUPPLY)]
    answers = rpc.batch(calls, errors=True)
    deployed = deployments(rpc, addresses, {a: first_seen[a][0] for a in addresses})
    facts = {}
    for i, address in enumerate(addresses):
        decimals, symbol, name, supply = answers[4 * i:4 * i + 4]
        places = number(decimals)
        places = DEFAULT_DECIMALS if places is None or places > MAX_DECIMALS else places
        deploy_block, deploy_tx, deployer = deployed.get(address) or (
            first_seen[address][0], first_seen[address][1], "")
        facts[address] = TokenFacts(address, text(symbol), text(name), places,
                                    number(supply) or 0, deploy_block, deploy_tx, deployer)
    return facts


def deployments(rpc: Rpc, addresses: Sequence[str],
                upper: dict[str, int]) -> dict[str, tuple[int, str, str]]:
    """Where each contract was deployed: (block, transaction, deployer), found by a binary
    search of `eth_getCode` below the block it was first seen in, all tokens' searches in
    step; empty when the node keeps no history to search."""
    low = {a: 0 for a in addresses}
    high = dict(upper)
    try:
        while any(low[a] < high[a] for a in addresses):
            asked = [a for a in addresses if low[a] < high[a]]
            middle = {a: (low[a] + high[a]) // 2 for a in asked}
            codes = rpc.batch([("eth_getCode", [a, hex(middle[a])]) for a in asked])
            for a, code in zip(asked, codes, strict=True):
                if code and code != "0x":
                    high[a] = middle[a]
                else:
                    low[a] = middle[a] + 1
    except RpcError:
        return {}
    blocks = sorted(set(high.values()))
    receipts = dict(zip(blocks, (block_receipts(rpc, b) for b in blocks), strict=True))
    found = {}
    for a in addresses:
        mine = receipts[high[a]]
        made = next((r for r in mine if (r.get("contractAddress") or "").lower() == a), None)
        made = made or next((r for r in mine
                             if any(log["address"].lower() == a for log in r["logs"])), None)
        if made is not None:
            found[a] = (high[a], made["transactionHash"], made["from"].lower())
    return found


def block_receipts(rpc: Rpc, block: int) -> list[dict]:
    """A block's receipts: `eth_getBlockReceipts`, or one `eth_getTransactionReceipt` each on
    nodes without it."""
    try:
        return list(rpc.call("eth_getBlockReceipts", hex(block)) or [])
    except RpcError:
        header = rpc.call("eth_getBlockByNumber", hex(block), False)
        hashes = header["transactions"] if header else []
        return rpc.batch([("eth_getTransactionReceipt", [h]) for h in hashes])


def gas(receipt: dict) -> tuple[int, int | None]:
    """A receipt's gas used and the fee paid (None when the node does not say the price)."""
    used = quantity(receipt["gasUsed"])
    price = receipt.get("effectiveGasPrice")
    return used, None if price is None else used * quantity(price)

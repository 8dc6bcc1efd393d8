"""A token's owner as the chain tells it: `OwnershipTransferred` logs, `owner()` read at the end
of the batch that met the token, and the owner-only powers its code holds (function selectors
among its bytecode's PUSH4 operands)."""

from datetime import datetime
from typing import Any

from eth_utils import keccak

from sources.evm.blocks import Blocks, log_block
from sources.evm.families import topic, topic_address
from sources.evm.rpc import quantity

OWNERSHIP_TRANSFERRED = topic("OwnershipTransferred(address,address)")
OWNER = "0x8da5cb5b"
# The functions that give each power (docs/market.md, "Ownership"), by the signatures the
# common token templates give them.
POWER_SIGNATURES = {
    "mint": ("mint(address,uint256)", "mint(uint256)", "mintTo(address,uint256)"),
    "pause": ("pause()", "setPaused(bool)"),
    "blacklist": ("blacklist(address)", "addToBlacklist(address)", "setBlacklist(address,bool)",
                  "blacklistAddress(address,bool)", "setBots(address[],bool)",
                  "addBots(address[])"),
    "set_fees": ("setFee(uint256)", "setFees(uint256,uint256)", "setTaxes(uint256,uint256)",
                 "setBuyTax(uint256)", "setSellTax(uint256)", "updateFees(uint256,uint256)",
                 "setTaxFeePercent(uint256)"),
    "limit_transfers": ("setMaxTxAmount(uint256)", "setMaxWalletSize(uint256)",
                        "setMaxWallet(uint256)", "updateMaxTxnAmount(uint256)",
                        "updateMaxWalletAmount(uint256)"),
    "switch_trading": ("enableTrading()", "openTrading()", "setTradingEnabled(bool)",
                       "setTrading(bool)"),
}
# PUSH4 (0x63) and a selector: how a compiled dispatcher names each function it answers.
_PUSHED = {power: tuple("63" + keccak(text=s)[:4].hex() for s in signatures)
           for power, signatures in POWER_SIGNATURES.items()}


def powers(code: str) -> list[str]:
    """The owner-only powers whose functions `code` (hex bytecode) answers."""
    body = code.removeprefix("0x").lower()
    return [power for power, pushed in _PUSHED.items() if any(p in body for p in pushed)]


def is_ownership(log: dict) -> bool:
    """Whether a log is an `OwnershipTransferred` (both owners indexed)."""
    return log["topics"][0] == OWNERSHIP_TRANSFERRED and len(log["topics"]) == 3


def event_row(log: dict, times: dict[int, datetime], chain_id: int) -> dict[str, Any]:
    """The ownership row of an `OwnershipTransferred` log."""
    return {"chain_id": chain_id, "token": log["address"].lower(), "block_number": log_block(log),
            "log_index": quantity(log["logIndex"]), "block_time": times[log_block(log)],
            "tx_hash": log["transactionHash"], "previous_owner": topic_address(log["topics"][1]),
            "owner": topic_address(log["topics"][2]), "source": "event"}


def read(blocks: Blocks, tokens: list[str], block: int, at: datetime,
         chain_id: int) -> tuple[list[dict[str, Any]], dict[str, list[str]]]:
    """`owner()` and the code of `tokens` at the end of `block` (at `at`): the ownership rows
    (owner null where `owner()` is not answered: no owner to renounce) and each token's
    powers."""
    if not tokens:
        return [], {}
    answers = blocks.calls([("eth_call", [{"to": t, "data": OWNER}, hex(block)]) for t in tokens]
                           + [("eth_getCode", [t, hex(block)]) for t in tokens])
    rows, held = [], {}
    for token, owner, code in zip(tokens, answers[:len(tokens)], answers[len(tokens):],
                                  strict=True):
        answered = isinstance(owner, str) and len(owner) >= 66
        rows.append({"chain_id": chain_id, "token": token, "block_number": block,
                     "log_index": None, "block_time": at, "tx_hash": "",
                     "previous_owner": None,
                     "owner": "0x" + owner[26:66].lower() if answered else None,
                     "source": "read"})
        held[token] = powers(code) if isinstance(code, str) else []
    return rows, held

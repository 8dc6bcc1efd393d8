"""Addresses and transaction hashes in each chain's native format, drawn from a seeded RNG."""

import hashlib

import base58
import numpy as np

_B58 = np.frombuffer(b"123456789ABCDEFGHJKLMNPQRSTUVWXYZabcdefghijkmnopqrstuvwxyz", dtype=np.uint8)
_HEX = np.frombuffer(b"0123456789abcdef", dtype=np.uint8)


def address(fmt: str, payload: bytes) -> str:
    """One address in `fmt` from (at least 32) random bytes."""
    if fmt == "evm":
        return "0x" + payload[:20].hex()
    if fmt == "hex32":
        return "0x" + payload[:32].hex()
    if fmt == "base58":
        return base58.b58encode(payload[:32]).decode()
    if fmt == "base58check":
        return base58.b58encode_check(b"\x41" + payload[:20]).decode()
    raise ValueError(f"unknown address format {fmt!r}")


def addresses(fmt: str, rng: np.random.Generator, n: int) -> list[str]:
    """`n` distinct addresses in `fmt`."""
    out: list[str] = []
    seen: set[str] = set()
    while len(out) < n:
        candidate = address(fmt, rng.bytes(32))
        if candidate not in seen:
            seen.add(candidate)
            out.append(candidate)
    return out


def named_address(fmt: str, name: str) -> str:
    """A stable address for a named contract (factories, routers, lockers)."""
    return address(fmt, hashlib.sha256(name.encode()).digest())


def tx_hashes(fmt: str, rng: np.random.Generator, n: int) -> np.ndarray:
    """`n` transaction hashes as each chain spells them.

    EVM: 0x + 64 hex; TRON: 64 hex; Sui: 44-character base58 digests; Solana: 88-character
    base58 signatures.
    """
    if fmt in ("evm", "base58check"):
        body = _HEX[rng.integers(0, 16, size=(n, 64))].view("S64").ravel().astype(str)
        return np.char.add("0x", body) if fmt == "evm" else body
    width = 44 if fmt == "hex32" else 88
    return _B58[rng.integers(1, 58, size=(n, width))].view(f"S{width}").ravel().astype(str)

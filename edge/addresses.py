"""Chains by slug or id, and addresses in their chain's native form (EVM: lower-case 0x)."""

from dataclasses import dataclass
from typing import Any

import orjson

from core.vocabulary import EVM_ADDRESS as EVM
from edge.memo import per_snapshot
from edge.web.problems import ApiError
from edge.web.registry import Params
from publish.reader import Snapshot

CHAIN_PARAMS = ("chain", "chains")


@dataclass(frozen=True)
class ChainRef:
    """A served chain: slug, id and address format."""

    slug: str
    chain_id: int
    address_format: str


@per_snapshot(kept=8)
def chain_index(snapshot: Snapshot) -> dict[str, ChainRef]:
    """Every served chain under its slug and its numeric id (built once per snapshot)."""
    index = {}
    for raw in snapshot.tables["chains"]["item"].to_list():
        item = orjson.loads(raw)
        ref = ChainRef(item["slug"], item["chain_id"], item["native_address_format"])
        index[ref.slug] = index[str(ref.chain_id)] = ref
    return index


def resolve_chain(snapshot: Snapshot, value: str, param: str) -> ChainRef:
    """The chain a slug or id names; 404 chain_not_found otherwise."""
    ref = chain_index(snapshot).get(value.lower())
    if ref is None:
        raise ApiError("chain_not_found", f"no chain under the slug or id {value!r}", param)
    return ref


def normalize(address: str, address_format: str | None, param: str = "address") -> str:
    """An EVM address as lower-case 0x (400 when it is not one); other formats as given."""
    found = EVM.fullmatch(address)
    if address_format == "evm":
        if found is None:
            raise ApiError("invalid_param", f"{param} must be 40 hex digits (64 for a Uniswap "
                           "V4 pool's id), 0x optional", param)
        return "0x" + found.group(2).lower()
    if address_format is None and found is not None:
        return "0x" + found.group(2).lower()
    return address


def resolve(snapshot: Snapshot, params: Params) -> dict[str, Any]:
    """Chain parameters as ChainRefs and addresses normalised for their chain."""
    out = dict(params)
    if isinstance(out.get("chain"), str):
        out["chain"] = resolve_chain(snapshot, out["chain"], "chain")
    if isinstance(out.get("chains"), list):
        out["chains"] = [resolve_chain(snapshot, c, "chains") for c in out["chains"]]
    if isinstance(out.get("address"), str):
        chain = out.get("chain")
        out["address"] = normalize(out["address"],
                                   chain.address_format if isinstance(chain, ChainRef) else None)
    return out

"""A token's owner on a real anvil node, with OpenZeppelin's `Ownable` (its npm package):
renounced, handed on, and a token that was never ownable; what the lake holds and what the
product makes of it worked out from what the chain said."""

import polars as pl
import yaml

from figures.ownership import token_owners
from sources.evm.config import parse
from sources.evm.ingest import Follower
from sources.evm.ownership import OWNERSHIP_TRANSFERRED
from sources.evm.rpc import quantity
from sources.lake import LakeWriter

E18 = 10**18
ZERO = "0x" + "0" * 40


def follow(market, lake: LakeWriter) -> None:
    Follower.open(market.net.rpc, parse(yaml.safe_load(market.venues_file())), lake,
                  confirmations=0).run()


def ownership_log(receipt: dict) -> tuple[int, int]:
    """The block and log index of the receipt's `OwnershipTransferred`."""
    log = next(x for x in receipt["logs"] if x["topics"][0] == OWNERSHIP_TRANSFERRED)
    return quantity(log["blockNumber"]), quantity(log["logIndex"])


def test_renounced_handed_on_and_never_ownable(market, tmp_path):
    net = market.net
    owner, heir = net.accounts[0], net.accounts[1]
    gone = market.owned_token("Gone", "GONE", 10**9 * E18)
    kept = market.owned_token("Kept", "KEPT", 10**9 * E18)
    for token in (gone, kept):
        market.pool("", "", 10 * E18, 10**6 * E18, base=token)
    _, plain = market.pool("Plain", "PLAIN", 10 * E18, 10**6 * E18)
    renounced = net.send(gone, "renounceOwnership()")
    handed = net.send(kept, "transferOwnership(address)", heir)
    lake = LakeWriter(tmp_path / "lake")
    follow(market, lake)

    rows = lake.read("ownership").sort("token", "block_number", "log_index", nulls_last=True)
    head = net.block_number()
    events = rows.filter(pl.col("source") == "event")
    # Each owned token's constructor made its deployer the owner; then one renounced, one
    # handed on. Nothing else is ownable.
    assert sorted(events.select("token", "previous_owner", "owner").rows()) == sorted([
        (gone, ZERO, owner), (gone, owner, ZERO), (kept, ZERO, owner), (kept, owner, heir)])
    assert ownership_log(renounced) in events.select("block_number", "log_index").rows()
    assert ownership_log(handed) in events.select("block_number", "log_index").rows()
    # Each token met read once at the end of the batch, as `owner()` answered then.
    reads = {r["token"]: r for r in rows.filter(pl.col("source") == "read").to_dicts()}
    assert {t: (r["owner"], r["block_number"]) for t, r in reads.items()} == {
        gone: (ZERO, head), kept: (heir, head), plain: (None, head), market.quote: (None, head)}

    powers = dict(lake.read("tokens").select("address", "owner_powers").iter_rows())
    # OwnedToken's owner may mint and set a fee; the plain token answers neither.
    assert powers == {gone: ["mint", "set_fees"], kept: ["mint", "set_fees"], plain: [],
                      market.quote: []}

    got = {r["address"]: r for r in token_owners(lake.scan("tokens"), lake.scan("ownership"))
           .collect().to_dicts()}
    times = dict(lake.read("blocks").select("block_number", "block_time").iter_rows())
    assert got[gone] | {"owner_powers": None} == {
        "chain_id": 31337, "address": gone, "ownable": True, "owner": ZERO, "renounced": True,
        "renounced_at": times[ownership_log(renounced)[0]], "owner_since": None,
        "previous_owner": owner, "owner_powers": None, "owner_risk": False}
    # An owner that may still mint: a risk.
    assert got[kept] | {"owner_powers": None} == {
        "chain_id": 31337, "address": kept, "ownable": True, "owner": heir, "renounced": False,
        "renounced_at": None, "owner_since": times[ownership_log(handed)[0]],
        "previous_owner": owner, "owner_powers": None, "owner_risk": True}
    assert (got[plain]["ownable"], got[plain]["renounced"], got[plain]["owner_risk"]) == (
        False, False, False)


def test_an_owner_changed_after_the_token_was_met(market, tmp_path):
    """A token met in one batch, renounced in a later one: the later batch's log moves the
    owner on, and the token is read only once."""
    net = market.net
    token = market.owned_token("Later", "LATER", 10**9 * E18)
    market.pool("", "", 10 * E18, 10**6 * E18, base=token)
    lake = LakeWriter(tmp_path / "lake")
    follow(market, lake)
    renounced = net.send(token, "renounceOwnership()")
    follow(market, lake)
    rows = lake.read("ownership").filter(pl.col("token") == token)
    assert rows.filter(pl.col("source") == "read").height == 1
    got = token_owners(lake.scan("tokens"), lake.scan("ownership")).filter(
        pl.col("address") == token).collect().row(0, named=True)
    times = dict(lake.read("blocks").select("block_number", "block_time").iter_rows())
    assert (got["renounced"], got["renounced_at"], got["previous_owner"], got["owner_risk"]) == (
        True, times[ownership_log(renounced)[0]], net.accounts[0], False)

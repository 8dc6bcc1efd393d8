"""GET /key, GET /status and GET /.well-known/x402: what the service says about itself."""

import time
from typing import Any

import orjson

from edge.billing.plans import units
from edge.memo import per_snapshot
from edge.oracle.feeds import catalog
from edge.web.http import Request, Response
from edge.web.registry import Params
from publish.reader import Snapshot


async def get_key(request: Request, params: Params) -> Response:
    """The calling key's plan and limits; without a key, the keyless tier's."""
    admission = request.state.admission
    key = admission.key
    body = {"key": None if key is None else {"id": key.key_id, "name": key.name,
                                             "created_at": key.created_at},
            **admission.plan.describe(),
            "remaining": None if admission.verdict is None else admission.verdict.remaining}
    return Response.json(body)


@per_snapshot(kept=2)
def chain_lags(snapshot: Snapshot) -> list[dict[str, Any]]:
    """Each served chain's blocks and lag, as /status reports them (read once per snapshot)."""
    if "chains" not in snapshot.tables:
        return []
    fields = ("slug", "chain_id", "latest_block", "head_block", "block_lag_seconds", "syncing",
              "metrics_stale")
    return [{key: item[key] for key in fields}
            for item in map(orjson.loads, snapshot.tables["chains"]["item"].to_list())]


async def get_status(request: Request, params: Params) -> Response:
    """Snapshot age, the watermark and how far it trails the clock, each chain's lag against
    the clock, and the health of every upstream."""
    services = request.state.services
    holder = services.holder
    snapshot = holder.current
    data_age = holder.data_age_seconds()
    view = request.state.live
    now = time.time()
    tail = services.live.tail
    nodes = {} if tail is None else tail.nodes
    chains = [] if snapshot is None or data_age is None else [
        {**chain, "data_lag_seconds": round(data_age + chain["block_lag_seconds"], 1),
         "live_as_of": None if view is None or chain["chain_id"] not in view.chains
         else view.chains[chain["chain_id"]].isoformat(),
         "live_lag_seconds": None if view is None or chain["chain_id"] not in view.chains
         else round(now - view.chains[chain["chain_id"]].timestamp(), 1),
         **_node(nodes.get(chain["chain_id"]))}
        for chain in chain_lags(snapshot)]
    unreachable = [chain["slug"] for chain in chains if chain["node"] is not None
                   and chain["node"]["state"] == "unreachable"]
    upstreams = {
        "object_store": {"healthy": holder.store_healthy,
                         "last_checked_seconds_ago": holder.seconds_since_check()},
        "live_tail": {"healthy": services.live.healthy,
                      "last_checked_seconds_ago": None if services.live.last_check is None
                      else round(now - services.live.last_check, 1)},
        "metering": {"backend": services.meter.backend, "healthy": services.meter.healthy()},
        "payments": {"settlement": "facilitator" if services.cashier.offer.facilitator_url
                     else "ledger"},
    }
    if nodes:
        upstreams["nodes"] = {"healthy": not unreachable, "unreachable": unreachable}
    if snapshot is not None and "feed_catalog" in snapshot.tables:
        oracle = services.oracle
        stalled = catalog(snapshot).stale(oracle.hub, now)
        upstreams["oracle"] = {"kind": oracle.upstream.kind,
                               "healthy": oracle.upstream.connected and not stalled,
                               "stale_feeds": stalled}
    stale_after = services.settings.stale_after_s
    if snapshot is None:
        status = "unavailable"
    elif holder.rejected is not None or not all(u.get("healthy", True)
                                                for u in upstreams.values()):
        status = "degraded"
    elif data_age is not None and data_age > stale_after:
        status = "stale"
    else:
        status = "ok"
    body = {"status": status,
            "snapshot": None if snapshot is None else {
                "id": snapshot.snapshot_id, "as_of": snapshot.manifest.as_of,
                "snapshot_at": snapshot.manifest.snapshot_at,
                "age_seconds": round(holder.age_seconds() or 0.0, 1)},
            "watermark": None if snapshot is None else {
                "as_of": snapshot.manifest.as_of,
                "trails_now_seconds": round(data_age or 0.0, 1),
                "stale_after_seconds": stale_after,
                "stale": data_age is not None and data_age > stale_after},
            "live": None if tail is None else {
                "seq": tail.seq, "as_of": tail.as_of.isoformat(),
                "trails_now_seconds": services.live.age_seconds(),
                "serving": view is not None, "builds_on": tail.snapshot_id},
            "rejected_snapshot": holder.rejected,
            "chains": chains, "upstreams": upstreams}
    return Response.json(body)


def _node(node: dict[str, str] | None) -> dict[str, Any]:
    """A chain's node as /status says it (None where no node is followed: a simulated chain);
    a chain whose node does not answer is not syncing, whatever its last record said."""
    if node is None or node["state"] != "unreachable":
        return {"node": node}
    return {"node": node, "syncing": False}


async def get_x402(request: Request, params: Params) -> Response:
    """The pay-per-call offer: where to pay, in what, and the price of every operation."""
    services = request.state.services
    offer = services.cashier.offer
    prices = [{"method": op.method, "path": op.path, "cost_cu": op.cost_cu,
               "amount": offer.amount(units(op.cost_cu))}
              for op in services.router.operations if op.metered]
    body = {"x402Version": 2, "accepts": [{k: v for k, v in offer.requirements(1).items()
                                           if k != "amount"}],
            "pricing": {"atomic_units_per_cu": offer.atomic_per_cu, "minimum_cu": 10,
                        "asset_decimals": 6},
            "headers": {"request": ["PAYMENT-SIGNATURE", "X-PAYMENT"],
                        "challenge": "PAYMENT-REQUIRED", "receipt": "PAYMENT-RESPONSE"},
            "settlement": "facilitator" if offer.facilitator_url else "ledger",
            "operations": prices}
    return Response.json(body)


HANDLERS = {("GET", "/key"): get_key, ("GET", "/status"): get_status,
            ("GET", "/.well-known/x402"): get_x402}

"""Who is calling: the client address a keyless budget is counted against."""

import functools
import ipaddress
from collections.abc import Iterable

Network = ipaddress.IPv4Network | ipaddress.IPv6Network


def trusted_networks(spec: str | None) -> tuple[Network, ...]:
    """Proxies whose X-Forwarded-For is believed, from a comma list of addresses or CIDRs."""
    if not spec:
        return ()
    return tuple(ipaddress.ip_network(part.strip(), strict=False)
                 for part in spec.split(",") if part.strip())


def _address(text: str) -> ipaddress.IPv4Address | ipaddress.IPv6Address | None:
    try:
        found = ipaddress.ip_address(text.strip().strip("[]"))
    except ValueError:
        return None
    if isinstance(found, ipaddress.IPv6Address) and found.ipv4_mapped:
        return found.ipv4_mapped
    return found


def _trusted(address: ipaddress.IPv4Address | ipaddress.IPv6Address,
             networks: Iterable[Network]) -> bool:
    return any(address in net for net in networks)


@functools.lru_cache(maxsize=65_536)
def client_address(peer: str | None, forwarded_for: str | None,
                   trusted: tuple[Network, ...]) -> str:
    """The budget key: an IPv4 address on its own, an IPv6 address by its /64 prefix.

    X-Forwarded-For counts only when the socket's peer is a trusted proxy; then the nearest
    address that is not itself a trusted proxy is the client.
    """
    address = _address(peer or "")
    if address is not None and forwarded_for and _trusted(address, trusted):
        for hop in reversed(forwarded_for.split(",")):
            candidate = _address(hop)
            if candidate is None:
                break
            address = candidate
            if not _trusted(candidate, trusted):
                break
    if address is None:
        return peer or "unknown"
    if isinstance(address, ipaddress.IPv6Address):
        return str(ipaddress.IPv6Network((address, 64), strict=False))
    return str(address)

"""Which address a request comes from: the socket peer, unless that peer is one of
`ui.trusted_proxies`; then the right-most address of `X-Forwarded-For` that is not a trusted
proxy itself (everything to its left the client may have written). The login throttle counts
failures per this address, so a client cannot pick a new one per guess.

    proxies = TrustedProxies.parse(["10.0.0.0/24"], "ui.trusted_proxies")
    proxies.client("10.0.0.2", "198.51.100.1, 203.0.113.9, 10.0.0.3") -> "203.0.113.9"
    proxies.client("127.0.0.1", "203.0.113.9") -> "127.0.0.1"   (127.0.0.1 is not trusted)
"""

from __future__ import annotations

import ipaddress
from collections.abc import Sequence
from dataclasses import dataclass

from core.errors import ConfigError

Network = ipaddress.IPv4Network | ipaddress.IPv6Network
Address = ipaddress.IPv4Address | ipaddress.IPv6Address


def parse_address(text: str) -> Address | None:
    """An IP address as a peer or a proxy writes it (an IPv4 one mapped into IPv6 taken as
    IPv4, a port dropped), else None.

        parse_address("[2001:db8::1]:443") -> IPv6Address('2001:db8::1')
        parse_address("::ffff:10.0.0.7") -> IPv4Address('10.0.0.7')
    """
    text = text.strip()
    if text.startswith("[") and "]" in text:
        text = text[1:text.index("]")]
    elif text.count(":") == 1:
        text = text.split(":")[0]
    try:
        address = ipaddress.ip_address(text)
    except ValueError:
        return None
    if isinstance(address, ipaddress.IPv6Address) and address.ipv4_mapped is not None:
        return address.ipv4_mapped
    return address


def parse_networks(entries: Sequence[str], key: str, hint: str) -> tuple[Network, ...]:
    """The networks of `entries` (addresses or CIDRs); ConfigError naming `key`, the entry and
    what to write instead (`hint`) for one that is neither.

        parse_networks(["127.0.0.1", "10.0.0.0/24"], "ui.trusted_proxies", "")
            -> (IPv4Network('127.0.0.1/32'), IPv4Network('10.0.0.0/24'))
    """
    networks = []
    for entry in entries:
        try:
            networks.append(ipaddress.ip_network(entry.strip(), strict=False))
        except ValueError:
            raise ConfigError(f"{key}: {entry!r} is not an IP address or network; {hint}") from None
    return tuple(networks)


def within(text: str, networks: Sequence[Network]) -> bool:
    """Whether the address written in `text` lies in one of `networks`."""
    address = parse_address(text)
    return address is not None and any(address in net for net in networks)


@dataclass(frozen=True)
class TrustedProxies:
    networks: tuple[Network, ...] = ()

    @classmethod
    def parse(cls, entries: Sequence[str], key: str) -> TrustedProxies:
        return cls(parse_networks(
            entries, key, "list the reverse proxies in front of the app, e.g. [\"127.0.0.1\", "
            "\"10.0.0.0/24\"], or leave it empty when clients connect directly"))

    def trusts(self, text: str) -> bool:
        return within(text, self.networks)

    def client(self, peer: str, forwarded_for: str | None) -> str:
        """The client's address: `peer`, or from `forwarded_for` (every X-Forwarded-For header
        of the request, joined by commas) when `peer` is a trusted proxy."""
        if not forwarded_for or not self.trusts(peer):
            return peer
        hops = [hop.strip() for hop in forwarded_for.split(",") if hop.strip()]
        if not hops:
            return peer
        untrusted = [hop for hop in hops if not self.trusts(hop)]
        hop = untrusted[-1] if untrusted else hops[0]  # every hop a proxy: the first of them
        address = parse_address(hop)
        return str(address) if address is not None else hop[:64]

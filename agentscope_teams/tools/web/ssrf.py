"""The SSRF guard: which addresses ``web_fetch`` may connect to (the one home of that rule).

A host is resolved once (through an injectable :data:`Resolver`); every address it resolves to is
checked and the fetch connects to the first one, the exact address that was checked, so a second
DNS answer (DNS rebinding) is never used. Refused: loopback, private (RFC 1918, IPv6 ULA
``fc00::/7``, site-local), link-local (``169.254.0.0/16`` with the cloud metadata address
``169.254.169.254``, ``fe80::/10``), carrier-grade NAT ``100.64.0.0/10``, unspecified, multicast,
reserved and every other address that is not globally routable, also when written as an IPv4
address inside IPv6 (``::ffff:10.0.0.1``, 6to4 ``2002::/16``, NAT64 ``64:ff9b::/96``). A host
whose answer holds any refused address is refused.

The operator opens specific private targets with an allowlist of host names (a name also opens its
subdomains) and networks in CIDR form (``AddressGuard(allow=("10.1.2.0/24", "wiki.corp"))``).
"""

from __future__ import annotations

import ipaddress
import socket
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field

import anyio

from ...errors import WebAccessError
from .urls import host_in, normalize_domain

IPAddress = ipaddress.IPv4Address | ipaddress.IPv6Address
Network = ipaddress.IPv4Network | ipaddress.IPv6Network

Resolver = Callable[[str, int], Awaitable[Sequence[str]]]
"""``(host, port) -> addresses`` (strings, in preference order); raises ``OSError`` if the name
does not resolve."""

_CGNAT = ipaddress.ip_network("100.64.0.0/10")
_NAT64 = (ipaddress.ip_network("64:ff9b::/96"), ipaddress.ip_network("64:ff9b:1::/48"))
_METADATA = {ipaddress.ip_address("169.254.169.254"), ipaddress.ip_address("fd00:ec2::254")}


async def system_resolver(host: str, port: int) -> list[str]:
    """The system's resolver (``getaddrinfo`` in a worker thread), addresses in its order."""
    infos = await anyio.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    found: list[str] = []
    for *_, sockaddr in infos:
        address = str(sockaddr[0]).split("%", 1)[0]
        if address not in found:
            found.append(address)
    return found


def _embedded_ipv4(ip: ipaddress.IPv6Address) -> ipaddress.IPv4Address | None:
    if ip.ipv4_mapped is not None:
        return ip.ipv4_mapped
    if ip.sixtofour is not None:
        return ip.sixtofour
    if any(ip in net for net in _NAT64):
        return ipaddress.IPv4Address(int(ip) & 0xFFFFFFFF)
    return None


def address_problem(ip: IPAddress) -> str | None:
    """Why ``ip`` may not be fetched (``"loopback"``, ``"private"``, ...), or None if it is a
    globally routable unicast address."""
    if isinstance(ip, ipaddress.IPv6Address):
        inner = _embedded_ipv4(ip)
        if inner is not None:
            problem = address_problem(inner)
            return None if problem is None else f"{problem} (IPv4 {inner} inside IPv6)"
    checks: list[tuple[bool, str]] = [
        (ip.is_unspecified, "unspecified"),
        (ip.is_loopback, "loopback"),
        (ip in _METADATA, "link-local (cloud metadata service)"),
        (ip.is_link_local, "link-local"),
        (isinstance(ip, ipaddress.IPv4Address) and ip in _CGNAT, "carrier-grade NAT"),
        (ip.is_multicast, "multicast"),
        (isinstance(ip, ipaddress.IPv6Address) and ip.is_site_local, "private (site-local)"),
        (ip.is_reserved, "reserved"),
        (ip.is_private, "private"),
        (not ip.is_global, "not globally routable"),
    ]
    return next((name for hit, name in checks if hit), None)


def _unwrap(ip: IPAddress) -> IPAddress:
    if isinstance(ip, ipaddress.IPv6Address) and ip.ipv4_mapped is not None:
        return ip.ipv4_mapped
    return ip


def _parse_allow(entries: Sequence[str]) -> tuple[tuple[Network, ...], tuple[str, ...]]:
    networks: list[Network] = []
    names: list[str] = []
    for entry in entries:
        try:
            networks.append(ipaddress.ip_network(entry.strip(), strict=False))
        except ValueError:
            names.append(normalize_domain(entry))
    return tuple(networks), tuple(names)


@dataclass(frozen=True)
class AddressGuard:
    """Resolves a host and returns the one address to connect to, or refuses (module docstring).

    ``resolver`` is the system's unless given (tests map names to any address without sending a
    packet); ``allow`` lists the private hosts (names, with their subdomains) and networks (CIDR)
    the operator opens.
    """

    resolver: Resolver = system_resolver
    allow: Sequence[str] = ()
    _networks: tuple[Network, ...] = field(init=False, repr=False, compare=False)
    _names: tuple[str, ...] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "allow", tuple(self.allow))
        networks, names = _parse_allow(self.allow)
        object.__setattr__(self, "_networks", networks)
        object.__setattr__(self, "_names", names)

    def allows(self, host: str, address: str) -> bool:
        """True if the operator's allowlist opens ``host`` at ``address`` (by name or network)."""
        return self._allows(host, ipaddress.ip_address(address))

    def _allows(self, host: str, ip: IPAddress) -> bool:
        if self._names and host_in(host, self._names):
            return True
        ip = _unwrap(ip)
        return any(ip in net for net in self._networks if ip.version == net.version)

    async def resolve(self, host: str, port: int, url: str) -> str:
        """The checked address to connect to for ``host``; raises :class:`WebAccessError`
        (``unresolvable`` or ``blocked_address``) naming the host, the address and why."""
        try:
            literal: IPAddress | None = ipaddress.ip_address(host)
        except ValueError:
            literal = None
        if literal is not None:
            answers: Sequence[str] = [str(literal)]
        else:
            try:
                answers = await self.resolver(host, port)
            except OSError as exc:
                raise WebAccessError(
                    f"cannot resolve {host!r} ({exc}); check the URL",
                    url=url,
                    reason="unresolvable",
                ) from None
        if not answers:
            raise WebAccessError(f"{host!r} resolves to no address", url=url, reason="unresolvable")
        addresses = [ipaddress.ip_address(a) for a in answers]
        for ip in addresses:
            problem = None if self._allows(host, ip) else address_problem(ip)
            if problem is not None:
                where = (
                    f"{host} is" if literal is not None else f"{host} resolves to {ip}, which is"
                )
                raise WebAccessError(
                    f"refused to fetch {url}: {where} in a refused range ({problem}). "
                    "web_fetch only reaches public addresses; an operator can open a private "
                    "host with the web tools' allowlist (WebConfig(allow_private=...) or "
                    "AGENTSCOPE_TEAMS_WEB_ALLOW_PRIVATE)",
                    url=url,
                    reason="blocked_address",
                )
        return str(addresses[0])

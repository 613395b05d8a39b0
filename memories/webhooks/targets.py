"""Where a webhook may be sent: http(s) URLs whose host resolves to public addresses only.

Checked when an endpoint is registered and again before every attempt, on the addresses the attempt then
connects to (so a name that resolved to a public address at registration and to 127.0.0.1 later, DNS
rebinding, is refused). An address is public when Python calls it global (`ipaddress.is_global`: not
loopback, private, link-local, shared 100.64.0.0/10 — where cloud metadata services such as 100.100.100.200
live —, documentation or reserved), after unwrapping the IPv6 forms that carry an IPv4 address (IPv4-mapped,
6to4 2002::/16, NAT64 64:ff9b::/96, Teredo's client), and is not multicast, reserved or site-local
(fec0::/10, which Python still calls global). WEBHOOK_ALLOW_PRIVATE=1 lifts the address rule (the tests'
receivers are on 127.0.0.1); the scheme rule always holds.
"""

from __future__ import annotations

import ipaddress
import socket
from dataclasses import dataclass
from urllib.parse import urlsplit

from django.conf import settings

from memoryhub.errors import InvalidRequest, RejectedByPolicy

IPAddress = ipaddress.IPv4Address | ipaddress.IPv6Address


class TargetRefused(RejectedByPolicy):
    """The URL's host is (or resolves to) an address that is not public (`is_public`)."""

    code = "webhook_target_refused"


@dataclass(frozen=True)
class Target:
    """A checked URL and the addresses an attempt connects to, in order (the host name still names the site)."""

    url: str
    scheme: str
    host: str
    port: int
    addresses: tuple[IPAddress, ...]


def parse(url: str) -> tuple[str, str, int]:
    """(scheme, host, port) of an http(s) URL; anything else is an InvalidRequest."""
    try:
        parts = urlsplit(url)
        port = parts.port
    except ValueError:
        raise InvalidRequest("url is not a valid URL", details={"field": "url"}) from None
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise InvalidRequest("url must be an http:// or https:// URL with a host", details={"field": "url"})
    if parts.username or parts.password:
        raise InvalidRequest("url must not carry credentials", details={"field": "url"})
    return parts.scheme, parts.hostname, port or (443 if parts.scheme == "https" else 80)


_NAT64 = ipaddress.ip_network("64:ff9b::/96")  # the well-known prefix: the last 32 bits are an IPv4 address


def unwrapped(address: IPAddress) -> IPAddress:
    """The IPv4 address an IPv6 address carries (mapped, 6to4, NAT64, Teredo's client), else the address itself."""
    if not isinstance(address, ipaddress.IPv6Address):
        return address
    if address.ipv4_mapped is not None:
        return address.ipv4_mapped
    if address.sixtofour is not None:
        return address.sixtofour
    if address in _NAT64:
        return ipaddress.IPv4Address(int(address) & 0xFFFFFFFF)
    if address.teredo is not None:
        return address.teredo[1]
    return address


def is_public(address: IPAddress) -> bool:
    inner = unwrapped(address)
    site_local = isinstance(inner, ipaddress.IPv6Address) and inner.is_site_local
    return inner.is_global and not (inner.is_multicast or inner.is_reserved or site_local)


def resolve(host: str, port: int) -> list[IPAddress]:
    try:
        infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    except (OSError, UnicodeError, ValueError) as exc:  # gaierror, an IDNA error, an embedded NUL
        raise TargetRefused(f"the host {host!r} does not resolve: {exc}", details={"field": "url"}) from None
    return list(dict.fromkeys(ipaddress.ip_address(str(info[4][0]).split("%")[0]) for info in infos))


def check(url: str) -> Target:
    """The URL and the address to connect to; TargetRefused when any address of its host is not public."""
    scheme, host, port = parse(url)
    addresses = resolve(host, port)
    if not settings.WEBHOOK_ALLOW_PRIVATE:
        refused = [str(a) for a in addresses if not is_public(a)]
        if refused:
            raise TargetRefused(
                f"the host {host!r} resolves to a non-public address: webhooks go to public addresses only"
                f" (WEBHOOK_ALLOW_PRIVATE=1 lifts this, for receivers on a private network): {', '.join(refused)}",
                details={"field": "url", "addresses": refused},
            )
    return Target(url=url, scheme=scheme, host=host, port=port, addresses=tuple(addresses))

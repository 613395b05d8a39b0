"""Where a webhook may be sent: http(s) URLs whose host resolves to public addresses only.

Checked when an endpoint is registered and again before every attempt, on the addresses the attempt then
connects to (so a name that resolved to a public address at registration and to 127.0.0.1 later, DNS
rebinding, is refused). WEBHOOK_ALLOW_PRIVATE=1 lifts the address rule (the tests' receivers are on
127.0.0.1); the scheme rule always holds.
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
    """The URL's host is (or resolves to) a loopback, link-local, private or otherwise non-public address."""

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


def is_public(address: IPAddress) -> bool:
    if isinstance(address, ipaddress.IPv6Address) and address.ipv4_mapped:
        address = address.ipv4_mapped
    return not (
        address.is_loopback
        or address.is_link_local
        or address.is_private
        or address.is_unspecified
        or address.is_multicast
        or address.is_reserved
    )


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
                f"the host {host!r} resolves to a loopback, link-local or private address ({', '.join(refused)});"
                " webhooks go to public addresses only",
                details={"field": "url", "addresses": refused},
            )
    return Target(url=url, scheme=scheme, host=host, port=port, addresses=tuple(addresses))

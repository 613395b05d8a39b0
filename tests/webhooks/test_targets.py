"""Which targets a webhook may go to, and how an attempt connects to the address that was checked."""

from __future__ import annotations

import ipaddress

import pytest

from memories.webhooks import sender, targets
from memoryhub.errors import InvalidRequest


@pytest.mark.parametrize(
    ("address", "public"),
    [
        ("93.184.216.34", True),
        ("2606:2800:220:1:248:1893:25c8:1946", True),
        ("127.0.0.1", False),
        ("10.0.0.1", False),
        ("172.16.5.4", False),
        ("192.168.1.1", False),
        ("169.254.169.254", False),
        ("::1", False),
        ("fe80::1", False),
        ("fd00::1", False),
        ("::ffff:127.0.0.1", False),
        ("0.0.0.0", False),
        ("224.0.0.1", False),
        ("100.64.0.1", False),  # shared address space (carrier-grade NAT)
        ("100.100.100.200", False),  # a cloud metadata address inside it
        ("fec0::1", False),  # site-local, deprecated: Python still calls it global
        ("2002:7f00:1::", False),  # 6to4 wrapping 127.0.0.1
        ("2002:a9fe:a9fe::1", False),  # 6to4 wrapping 169.254.169.254
        ("2002:5db8:d822::1", True),  # 6to4 wrapping a public address
        ("64:ff9b::7f00:1", False),  # NAT64 of 127.0.0.1
        ("64:ff9b::6464:64c8", False),  # NAT64 of 100.100.100.200
        ("64:ff9b::5db8:d822", True),  # NAT64 of a public address
        ("2001:0:4136:e378:8000:63bf:80ff:fffe", False),  # Teredo, client 127.0.0.1
        ("::ffff:100.100.100.200", False),
        ("::127.0.0.1", False),  # IPv4-compatible (deprecated): reserved
        ("192.0.2.1", False),  # documentation
        ("2001:db8::1", False),
    ],
)
def test_public_addresses(address, public):
    assert targets.is_public(ipaddress.ip_address(address)) is public


def test_a_literal_public_address_is_accepted_and_pinned(settings):
    settings.WEBHOOK_ALLOW_PRIVATE = False
    target = targets.check("https://93.184.216.34:8443/in?x=1")
    assert (target.scheme, target.host, target.port) == ("https", "93.184.216.34", 8443)
    assert sender._pinned_url(target, target.addresses[0]) == "https://93.184.216.34:8443/in?x=1"


def test_a_name_is_pinned_to_its_checked_address_and_keeps_its_host_header(settings):
    settings.WEBHOOK_ALLOW_PRIVATE = True
    target = targets.check("http://localhost:8080/hook")
    assert all(address.is_loopback for address in target.addresses)
    assert sender._host_header(target) == "localhost:8080"
    urls = {sender._pinned_url(target, address) for address in target.addresses}
    assert urls <= {"http://127.0.0.1:8080/hook", "http://[::1]:8080/hook"}


def test_a_name_resolving_to_a_wrapped_loopback_is_refused_and_names_the_setting(settings, monkeypatch):
    settings.WEBHOOK_ALLOW_PRIVATE = False
    monkeypatch.setattr(targets.socket, "getaddrinfo", lambda *a, **k: [(10, 1, 6, "", ("2002:7f00:1::", 443, 0, 0))])
    with pytest.raises(targets.TargetRefused) as refused:
        targets.check("https://hooks.example.com/in")
    assert refused.value.details["addresses"] == ["2002:7f00:1::"]
    assert "WEBHOOK_ALLOW_PRIVATE" in refused.value.message


def test_a_name_that_does_not_resolve_is_refused(settings):
    with pytest.raises(targets.TargetRefused):
        targets.check("http://no-such-host.invalid/hook")


@pytest.mark.parametrize(
    "url", ["ftp://example.com/", "http:///nohost", "mailto:a@b.c", "http://[::1/", "http://a:b@c.d/"]
)
def test_malformed_or_non_http_urls_are_invalid(url):
    with pytest.raises(InvalidRequest):
        targets.parse(url)

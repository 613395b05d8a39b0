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


def test_a_name_that_does_not_resolve_is_refused(settings):
    with pytest.raises(targets.TargetRefused):
        targets.check("http://no-such-host.invalid/hook")


@pytest.mark.parametrize(
    "url", ["ftp://example.com/", "http:///nohost", "mailto:a@b.c", "http://[::1/", "http://a:b@c.d/"]
)
def test_malformed_or_non_http_urls_are_invalid(url):
    with pytest.raises(InvalidRequest):
        targets.parse(url)

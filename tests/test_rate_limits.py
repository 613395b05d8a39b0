"""R5: per-key rate limits answer 429 with the envelope and a Retry-After; other keys are not affected."""

from __future__ import annotations

import pytest

from memories.services.products import api_key_create
from memoryhub.api.throttling import PerKeyRateThrottle
from tests.support.api import assert_envelope, client_for

URL = "/v1/users/u1/conversations/c1/memory"


@pytest.fixture
def three_per_minute(monkeypatch):
    monkeypatch.setattr(PerKeyRateThrottle, "THROTTLE_RATES", {"per_key": "3/min"})


def test_a_key_over_its_rate_gets_429_with_retry_after(alice, three_per_minute):
    for _ in range(3):
        assert alice.get(URL).status_code == 200
    response = alice.get(URL)
    assert_envelope(response, 429, "rate_limited")
    assert int(response["Retry-After"]) >= 1


def test_limits_are_per_key(alice, bob, three_per_minute):
    for _ in range(3):
        alice.get(URL)
    assert_envelope(alice.get(URL), 429, "rate_limited")
    second_key = api_key_create(product=alice.product, name="second").plaintext
    assert client_for(second_key).get(URL).status_code == 200
    assert bob.get(URL).status_code == 200

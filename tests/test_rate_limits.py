"""R5: per-key rate limits answer 429 with the envelope and a Retry-After; other keys are not affected."""

from __future__ import annotations

import pytest

from memories.models import MemoryDocument
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


@pytest.fixture
def clock(monkeypatch, three_per_minute):
    now = [60.0 * 1_000_000 + 50]  # 50 s into a minute window
    monkeypatch.setattr(PerKeyRateThrottle, "timer", staticmethod(lambda: now[0]))
    return now


def test_the_window_slides_the_previous_minute_counts_by_how_much_it_still_covers(alice, clock):
    for _ in range(3):
        assert alice.get(URL).status_code == 200
    clock[0] += 20  # 10 s into the next window: 3 × 50/60 of the last one still counts
    response = alice.get(URL)
    assert_envelope(response, 429, "rate_limited")
    assert 11 <= int(response["Retry-After"]) <= 12  # 10 s, until 20 s in: 3 × 40/60 + 1 ≤ 3 (rounded up)
    clock[0] += 30  # 40 s in: 3 × 20/60 + 1 = 2 ≤ 3
    assert alice.get(URL).status_code == 200


def test_refused_requests_do_not_count(alice, clock):
    for _ in range(3):
        alice.get(URL)
    for _ in range(5):
        assert_envelope(alice.get(URL), 429, "rate_limited")
    clock[0] += 70  # 60 s into the next window: only the three admitted requests counted, all slid out
    assert alice.get(URL).status_code == 200


def test_a_memory_put_that_is_not_json_is_refused_before_it_counts(alice, three_per_minute):
    for _ in range(3):
        assert_envelope(alice.client.put(URL, "{not json", content_type="application/json"), 400)
        assert_envelope(alice.client.put(URL, "x=1", content_type="application/x-www-form-urlencoded"), 415)
    for revision in range(3):  # the key's three requests are all still there
        assert alice.put(URL, {"expectedRevision": revision, "memory": {"n": revision}}).status_code == 200
    assert_envelope(alice.put(URL, {"expectedRevision": 3, "memory": {}}), 429, "rate_limited")
    assert_envelope(alice.client.put(URL, "{not json", content_type="application/json"), 400)  # still before the limit
    assert MemoryDocument.objects.get(product=alice.product).revision == 3

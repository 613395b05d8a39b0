"""R5: rate limits per key or token and per product answer 429 with the envelope and a Retry-After; other keys
and products are not affected; failed authentication is throttled by address."""

from __future__ import annotations

import re

import pytest

from memories.models import MemoryDocument
from memories.services.products import api_key_create
from memoryhub.api.throttling import PerKeyRateThrottle
from tests.support.api import assert_envelope, client_for

CONV = "/v1/users/u1/conversations/c1"
URL = f"{CONV}/memory"


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


def test_a_prepare_that_is_not_json_is_refused_before_it_counts_and_an_invalid_one_counts(alice, three_per_minute):
    """Planned requests (memoryhub/api/plan.py) share the rule: an unreadable body is refused before the limit,
    a readable but invalid one is counted and refused by the view."""
    turns = f"{CONV}/turns"
    for _ in range(3):
        assert_envelope(alice.client.post(turns, "{not json", content_type="application/json"), 400)
    assert_envelope(alice.post(turns, {"scenarioId": "gate"}), 400, "invalid_request")  # counted
    for _ in range(2):
        assert alice.get(URL).status_code == 200
    assert_envelope(alice.get(URL), 429, "rate_limited")


# --- per product: a product's keys and tool tokens share one limit -------------------------------------------------


@pytest.fixture
def product_limit(monkeypatch):
    monkeypatch.setattr(PerKeyRateThrottle, "THROTTLE_RATES", {"per_key": "3/min", "per_product": "5/min"})


def test_a_second_key_and_minted_tool_tokens_share_the_products_limit(alice, bob, product_limit):
    for _ in range(3):
        assert alice.get(URL).status_code == 200
    assert_envelope(alice.get(URL), 429, "rate_limited")  # the key's own limit (not counted for the product)
    second = client_for(api_key_create(product=alice.product, name="second").plaintext)
    minted = second.post(f"{CONV}/tool-tokens", {}, format="json")  # the product's 4th request
    assert minted.status_code == 201, minted.json()
    token = client_for(minted.json()["token"])
    assert token.post("/v1/tools/call", {"name": "get_memory", "arguments": {}}, format="json").status_code == 200
    refused = token.post("/v1/tools/call", {"name": "get_memory", "arguments": {}}, format="json")
    assert_envelope(refused, 429, "rate_limited")
    assert int(refused["Retry-After"]) >= 1
    assert_envelope(second.post(f"{CONV}/tool-tokens", {}, format="json"), 429, "rate_limited")
    assert bob.get(URL).status_code == 200  # another product's limit is its own


def test_a_request_refused_by_the_product_limit_does_not_count_for_its_key(alice, monkeypatch):
    monkeypatch.setattr(PerKeyRateThrottle, "THROTTLE_RATES", {"per_key": "2/min", "per_product": "2/min"})
    second = client_for(api_key_create(product=alice.product, name="second").plaintext)
    assert alice.get(URL).status_code == 200 and alice.get(URL).status_code == 200
    for _ in range(3):
        assert_envelope(second.get(URL), 429, "rate_limited")
    monkeypatch.setattr(PerKeyRateThrottle, "THROTTLE_RATES", {"per_key": "2/min", "per_product": "10/min"})
    assert second.get(URL).status_code == 200 and second.get(URL).status_code == 200  # its refusals did not count


# --- failed authentication, by address ----------------------------------------------------------------------------

ATTACKER, NEIGHBOUR = "203.0.113.5", "198.51.100.7"


@pytest.fixture
def three_failures(settings):
    rates = {**settings.REST_FRAMEWORK["DEFAULT_THROTTLE_RATES"], "auth_failures": "3/min"}
    settings.REST_FRAMEWORK = {**settings.REST_FRAMEWORK, "DEFAULT_THROTTLE_RATES": rates}


def test_unknown_keys_from_one_address_are_throttled_after_the_limit(alice, three_failures):
    guesses = [client_for(f"mhk_{n:012x}_guess", REMOTE_ADDR=ATTACKER) for n in range(5)]
    for guess in guesses[:3]:
        assert_envelope(guess.get(URL), 401, "unauthenticated")
    throttled = guesses[3].get(URL)
    message = assert_envelope(throttled, 429, "rate_limited")["message"]
    assert 1 <= int(throttled["Retry-After"]) <= 61
    # two sentences, as a key's "Request was throttled. Expected available in N seconds."
    assert re.fullmatch(
        r"Too many failed authentications from this address\. Expected available in \d+ seconds?\.", message
    )
    blocked = assert_envelope(guesses[4].get(URL), 429, "rate_limited")["message"]  # refused before any lookup
    assert blocked.startswith("Too many failed authentications from this address. Expected available in ")
    assert_envelope(client_for("mht_forged", REMOTE_ADDR=ATTACKER).get("/v1/tools"), 429, "rate_limited")
    assert_envelope(client_for("garbage", REMOTE_ADDR=NEIGHBOUR).get(URL), 401, "unauthenticated")  # its own count


def test_a_blocked_address_refuses_unverified_keys_before_any_lookup(alice, three_failures, django_assert_num_queries):
    assert client_for(alice.key, REMOTE_ADDR=ATTACKER).get(URL).status_code == 200  # verified by this process
    for n in range(4):
        client_for(f"mhk_{n:012x}_guess", REMOTE_ADDR=ATTACKER).get(URL)
    unseen = api_key_create(product=alice.product, name="unseen").plaintext
    with django_assert_num_queries(0):
        assert_envelope(client_for("mhk_000000000009_guess", REMOTE_ADDR=ATTACKER).get(URL), 429, "rate_limited")
        assert_envelope(client_for(unseen, REMOTE_ADDR=ATTACKER).get(URL), 429, "rate_limited")
    assert client_for(alice.key, REMOTE_ADDR=ATTACKER).get(URL).status_code == 200  # a working client keeps working
    assert client_for(unseen, REMOTE_ADDR=NEIGHBOUR).get(URL).status_code == 200


@pytest.mark.django_db
def test_forged_tool_tokens_at_mcp_count_against_the_address(client, three_failures):
    def initialize(token: str):
        body = {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {}}
        headers = {"HTTP_AUTHORIZATION": f"Bearer {token}", "HTTP_ACCEPT": "application/json, text/event-stream"}
        return client.post("/mcp", body, content_type="application/json", REMOTE_ADDR=ATTACKER, **headers)

    for n in range(3):
        assert initialize(f"mht_forged{n}").status_code == 401
    throttled = initialize("mht_forged3")
    assert_envelope(throttled, 429, "rate_limited")
    assert int(throttled["Retry-After"]) >= 1

"""Concurrent writers through the HTTP API (docs/contract.md): exactly one winner per revision, no lost update.

PostgreSQL only: the SQLite test database is an in-memory shared-cache database whose table locks
("database table is locked") do not wait for the busy timeout, so threads there measure the test
harness, not memoryhub.
"""

from __future__ import annotations

import threading
from collections import Counter
from collections.abc import Callable

import pytest
from django.db import connection
from rest_framework.test import APIClient

from tests.support.api import client_for

URL = "/v1/users/racer/conversations/c1/memory"
RACERS = 16
WRITERS, INCREMENTS = 8, 10


def run_threads(count: int, key: str, target: Callable[[int, APIClient], object]) -> list:
    """Run `target(index, client)` in `count` threads, each with its own client and DB connection."""
    results: list = [None] * count
    errors: list[BaseException] = []

    def worker(index: int, key: str) -> None:
        client = client_for(key)
        try:
            results[index] = target(index, client)
        except BaseException as exc:  # surfaced in the main thread below
            errors.append(exc)
        finally:
            connection.close()

    threads = [threading.Thread(target=worker, args=(i, key)) for i in range(count)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=120)
    assert not any(thread.is_alive() for thread in threads), "a writer hung"
    assert not errors, errors
    return results


def race_from(alice, expected: int) -> list[int]:
    barrier = threading.Barrier(RACERS)

    def racer(index: int, client: APIClient) -> tuple[int, dict]:
        barrier.wait(timeout=30)
        response = client.put(URL, {"expectedRevision": expected, "memory": {"winner": index}}, format="json")
        return response.status_code, response.json()

    return run_threads(RACERS, alice.key, racer)


def assert_exactly_one_winner(alice, results: list, expected: int) -> None:
    assert Counter(status for status, _ in results) == {200: 1, 409: RACERS - 1}, results
    winner = next(body for status, body in results if status == 200)
    assert winner == {"revision": expected + 1}
    for status, body in results:
        if status == 409:
            assert body["error"]["code"] == "revision_conflict"
            assert body["error"]["details"]["currentRevision"] == expected + 1
    stored = alice.get(URL).json()
    assert stored["revision"] == expected + 1
    history = alice.get(URL + "/revisions", data={"limit": 200}).json()["results"]
    assert [row["revision"] for row in history] == list(range(expected + 1, 0, -1))
    assert history[0]["memory"] == stored["memory"]


def counting_writers(alice) -> tuple[int, int]:
    """WRITERS threads each add 1 to a counter INCREMENTS times, re-reading on 409; return (writes, conflicts)."""
    barrier = threading.Barrier(WRITERS)

    def writer(index: int, client: APIClient) -> tuple[int, int]:
        barrier.wait(timeout=30)
        done = conflicts = 0
        while done < INCREMENTS:
            current = client.get(URL).json()
            count = (current["memory"] or {}).get("count", 0)
            memory = {"count": count + 1, "last": index}
            response = client.put(URL, {"expectedRevision": current["revision"], "memory": memory}, format="json")
            if response.status_code == 200:
                done += 1
            elif response.status_code == 409:
                conflicts += 1
            else:
                raise AssertionError((response.status_code, response.content))
        return done, conflicts

    results = run_threads(WRITERS, alice.key, writer)
    return sum(done for done, _ in results), sum(conflicts for _, conflicts in results)


def assert_no_lost_update(alice, writes: int) -> None:
    assert writes == WRITERS * INCREMENTS
    stored = alice.get(URL).json()
    assert stored["revision"] == writes
    assert stored["memory"]["count"] == writes
    history = alice.get(URL + "/revisions", data={"limit": 200}).json()["results"]
    assert [row["memory"]["count"] for row in history] == list(range(writes, 0, -1))


@pytest.fixture
def seeded(alice):
    assert alice.put(URL, {"expectedRevision": 0, "memory": {"seed": True}}).status_code == 200
    return alice


@pytest.mark.requires_postgres
@pytest.mark.django_db(transaction=True)
def test_sixteen_writers_racing_to_create_one_wins(alice):
    assert_exactly_one_winner(alice, race_from(alice, 0), 0)


@pytest.mark.requires_postgres
@pytest.mark.django_db(transaction=True)
def test_sixteen_writers_racing_from_one_revision_one_wins(seeded):
    assert_exactly_one_winner(seeded, race_from(seeded, 1), 1)


@pytest.mark.requires_postgres
@pytest.mark.django_db(transaction=True)
def test_retrying_writers_lose_no_update(alice):
    writes, conflicts = counting_writers(alice)
    assert_no_lost_update(alice, writes)
    assert conflicts > 0  # the writers really did collide


@pytest.mark.requires_postgres
@pytest.mark.django_db(transaction=True)
def test_concurrent_retries_with_one_idempotency_key_commit_once(alice):
    barrier = threading.Barrier(RACERS)
    body = {"expectedRevision": 0, "memory": {"once": True}}

    def retry(index: int, client: APIClient) -> tuple[int, dict, bool]:
        barrier.wait(timeout=30)
        response = client.put(URL, body, format="json", HTTP_IDEMPOTENCY_KEY="same-op")
        return response.status_code, response.json(), "Idempotent-Replayed" in response

    results = run_threads(RACERS, alice.key, retry)
    assert {(status, str(body)) for status, body, _ in results} == {(200, str({"revision": 1}))}, results
    assert sum(1 for _, _, replayed in results if not replayed) == 1
    assert alice.get(URL).json() == {"revision": 1, "memory": {"once": True}}
    assert len(alice.get(URL + "/revisions").json()["results"]) == 1

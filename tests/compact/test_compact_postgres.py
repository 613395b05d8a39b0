"""On PostgreSQL: two compactions at once keep one; the background compaction on a real Celery worker."""

from __future__ import annotations

import threading
from collections.abc import Callable

import pytest
from django.db import connection

from memories.compact import services
from memories.compact.policy import CompactPolicy
from memories.compact.services import compaction_run
from memoryhub.addresses import ConversationAddress
from tests.support.api import client_for
from tests.support.processes import wait_for

from .support import CONV, compactions, create_scenario, events, history_source, play, text

L = 90


def _at_once(*calls: Callable[[], object]) -> list[object]:
    """Run the calls in threads released together; each thread closes its own connection."""
    barrier, results = threading.Barrier(len(calls)), [None] * len(calls)

    def run(index: int, call: Callable[[], object]) -> None:
        try:
            barrier.wait()
            results[index] = call()
        except Exception as exc:  # reported by the assertions, not lost in the thread
            results[index] = exc
        finally:
            connection.close()

    threads = [threading.Thread(target=run, args=(i, call)) for i, call in enumerate(calls)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=60)
    return results


@pytest.fixture
def summaries_meet(monkeypatch):
    """Both compactions read the same previous version before either saves: their summarisers wait for each other."""
    meeting = threading.Barrier(2, timeout=20)
    real = services.compaction_summarizer

    class Meeting:
        def __init__(self, inner):
            self.inner, self.name = inner, inner.name

        def summarize(self, *args, **kwargs):
            meeting.wait()
            return self.inner.summarize(*args, **kwargs)

    monkeypatch.setattr(services, "compaction_summarizer", lambda limit: Meeting(real(limit)))


def _full_conversation(api) -> None:
    create_scenario(api, budget=2000, keep=2)
    for n in range(1, 11):
        play(api, text(L, f"u{n}"), text(L, f"a{n}"))


@pytest.mark.requires_postgres
@pytest.mark.django_db(transaction=True)
def test_two_prepares_that_must_compact_at_once_keep_one_compaction(alice, summaries_meet) -> None:
    _full_conversation(alice)

    def prepare_later(message: str) -> Callable[[], object]:  # a request to send from its own thread
        client = client_for(alice.key)
        return lambda: client.post(f"{CONV}/turns", {"scenarioId": "chat", "userMessage": message}, format="json")

    first, second = _at_once(prepare_later(text(40, "one")), prepare_later(text(40, "two")))
    assert first.status_code == second.status_code == 201, (first.content, second.content)
    [kept] = compactions(alice)
    assert kept["version"] == 1
    assert len(events(alice, "compact.created")) == 1 and events(alice, "compact.failed") == []
    used = [history_source(r.json())["details"] for r in (first, second)]
    assert [u["compaction"]["id"] for u in used] == [kept["id"], kept["id"]]  # the loser used the winner's
    assert sorted(u.get("compacted", "-") for u in used) == ["-", "inline"]
    assert all(u["inputChars"] <= 2000 for u in used)


@pytest.mark.requires_postgres
@pytest.mark.django_db(transaction=True)
def test_two_background_compactions_at_once_keep_one(alice, summaries_meet) -> None:
    _full_conversation(alice)
    address = ConversationAddress(alice.product, "u1", "c1")

    def run() -> str:
        return compaction_run(address=address, policy=CompactPolicy(2000, 2), trigger="threshold").outcome

    assert sorted(_at_once(run, run)) == ["conflict", "created"]
    assert len(compactions(alice)) == 1


@pytest.mark.requires_worker
@pytest.mark.django_db(transaction=True)
def test_the_commit_past_80_percent_compacts_on_the_real_worker(alice, celery_worker_process) -> None:
    create_scenario(alice, budget=2000, keep=2)
    turns = [play(alice, text(L, f"u{n}"), text(L, f"a{n}")) for n in range(1, 10)]
    assert turns[-1]["completion"]["memoryWrite"]["status"] == "pending"
    [compaction] = wait_for(lambda: compactions(alice), timeout=150, message="the worker's compaction")
    assert compaction["trigger"] == "threshold" and compaction["turnId"] == turns[-1]["turnId"]
    assert compaction["summarizer"] == "extractive" and compaction["messageCount"] == 16
    done = wait_for(
        lambda: alice.get(f"{CONV}/turns/{turns[-1]['turnId']}").json()["memoryWrite"]["status"] == "done",
        timeout=30,
        message="the turn's memoryWrite to be done",
    )
    assert done
    turn = alice.post(f"{CONV}/turns", {"scenarioId": "chat", "userMessage": "next"}).json()
    assert history_source(turn)["details"]["compaction"]["id"] == compaction["id"]

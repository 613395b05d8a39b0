"""A `complete` retried after its commit failed commits the turn (docs/contract.md, "Turns").

`complete` stores the reply in one transaction and commits in a second. When the database goes away between
the two (bench/load.py's PostgreSQL restart met it), the answer is 503 and the turn stays completed but not
committed; the client's retry with the same reply now commits it — no second round, no second pair of
messages — instead of answering 409 and leaving the round without its memory work.
"""

from __future__ import annotations

import pytest
from django.db import OperationalError

from memories.models import Message, Turn
from tests.support.api import assert_envelope
from tests.support.registry import only_commit_hooks

CONV = "/v1/users/u1/conversations/c1"
SCENARIO = {
    "id": "gate",
    "name": "City gate",
    "memorySources": [{"id": "s1", "agentRef": "json-memory", "variable": "jsonMemory"}],
    "template": "Memory: {{jsonMemory}}\nUser: {{userMessage}}",
}


@pytest.fixture
def flaky_commit() -> list[int]:
    """A commit hook that fails once as a vanished database would, then records the turns it commits."""
    committed: list[int] = []

    def hook(pk: int) -> bool:
        if not committed and pk not in flaky_commit_failed:
            flaky_commit_failed.add(pk)
            raise OperationalError("server closed the connection unexpectedly")
        committed.append(pk)
        return False

    flaky_commit_failed: set[int] = set()
    only_commit_hooks({"flaky": hook})
    return committed


def prepared(alice, scenario: dict) -> int:
    assert alice.post("/v1/scenarios", scenario).status_code == 201
    response = alice.post(f"{CONV}/turns", {"scenarioId": scenario["id"], "userMessage": "开门"})
    assert response.status_code == 201, response.json()
    return response.json()["turnId"]


@pytest.mark.django_db
def test_the_same_reply_again_commits_the_turn_once(alice, flaky_commit):
    turn_id = prepared(alice, SCENARIO)
    failed = alice.post(f"{CONV}/turns/{turn_id}/complete", {"assistantMessage": "请进。"})
    assert_envelope(failed, 503, "storage_unavailable")
    assert Turn.objects.get(pk=turn_id).status == "completed"  # the reply is stored, the commit is not

    retried = alice.post(f"{CONV}/turns/{turn_id}/complete", {"assistantMessage": "请进。"})
    assert retried.status_code == 200, retried.json()
    assert (retried.json()["status"], retried.json()["round"]) == ("committed", 1)
    assert flaky_commit == [turn_id]
    assert Message.objects.filter(turn_id=turn_id).count() == 2  # one user and one assistant message, once
    # Once more (the answer of the retry was lost too): the committed turn as it is, nothing done twice.
    again = alice.post(f"{CONV}/turns/{turn_id}/complete", {"assistantMessage": "请进。"})
    assert again.status_code == 200 and again.json() == retried.json()
    assert flaky_commit == [turn_id] and Message.objects.filter(turn_id=turn_id).count() == 2
    other = alice.post(f"{CONV}/turns/{turn_id}/complete", {"assistantMessage": "另一个回答"})
    error = assert_envelope(other, 409, "turn_already_completed")
    assert "replacesTurnId" in error["message"] and error["details"] == {"turnId": turn_id, "status": "committed"}


@pytest.mark.django_db
def test_another_reply_is_still_a_conflict(alice, flaky_commit):
    turn_id = prepared(alice, SCENARIO)
    assert alice.post(f"{CONV}/turns/{turn_id}/complete", {"assistantMessage": "请进。"}).status_code == 503
    other = alice.post(f"{CONV}/turns/{turn_id}/complete", {"assistantMessage": "不行。"})
    assert_envelope(other, 409, "turn_already_completed")


@pytest.mark.django_db
def test_the_same_reply_again_answers_a_turn_waiting_for_accept_without_committing_it(alice, flaky_commit):
    """commitOn "accepted": a retry whose first answer was lost gets that answer again, and nothing commits."""
    waiting = prepared(alice, {**SCENARIO, "id": "gate2", "commitOn": "accepted"})
    first = alice.post(f"{CONV}/turns/{waiting}/complete", {"assistantMessage": "请进。"})
    assert first.status_code == 200, first.json()
    repeated = alice.post(f"{CONV}/turns/{waiting}/complete", {"assistantMessage": "请进。"})
    assert repeated.status_code == 200 and repeated.json() == first.json()
    assert (repeated.json()["status"], repeated.json()["memoryWrite"]["status"]) == ("completed", "pending")
    assert flaky_commit == [] and Message.objects.filter(turn_id=waiting).count() == 2  # stored once, not committed
    assert_envelope(alice.post(f"{CONV}/turns/{waiting}/complete", {"assistantMessage": "不行。"}), 409,
                    "turn_already_completed")  # fmt: skip

    assert alice.post(f"{CONV}/turns/{waiting}/accept", {}).status_code == 503  # the flaky hook fails once
    accepted = alice.post(f"{CONV}/turns/{waiting}/accept", {})
    assert accepted.status_code == 200 and accepted.json()["status"] == "committed"
    after = alice.post(f"{CONV}/turns/{waiting}/complete", {"assistantMessage": "请进。"})
    assert after.status_code == 200 and after.json()["status"] == "committed"
    assert flaky_commit == [waiting] and Message.objects.filter(turn_id=waiting).count() == 2


def _prepared(alice, **scenario) -> int:
    assert alice.post("/v1/scenarios", {**SCENARIO, **scenario}).status_code == 201
    return alice.post(f"{CONV}/turns", {"scenarioId": "gate", "userMessage": "Open?"}).json()["turnId"]


def test_a_retry_that_loses_the_commit_to_the_request_it_repeats_answers_the_committed_turn(alice):
    """Two identical completes at once (a client retrying while its first request still runs): the one that
    loses the claim answers the committed turn, as a sequential retry does — not 409 turn_already_committed.
    The race is replayed in order: the retry read the turn before the first request claimed it."""
    from memories.services.turns import LostCommit, turn_commit

    turn_id = _prepared(alice)
    done = alice.post(f"{CONV}/turns/{turn_id}/complete", {"assistantMessage": "It opens."})
    stale = Turn.objects.select_related("scenario").get(pk=turn_id)
    stale.status = "completed"  # as the retry read it, before the first request's claim
    assert turn_commit(turn=stale, retry=True).status == "committed"
    with pytest.raises(LostCommit) as lost:
        turn_commit(turn=stale)  # not a retry of the same reply: still a conflict
    assert lost.value.code == "turn_already_committed"
    assert Turn.objects.get(pk=turn_id).memory_write == done.json()["memoryWrite"]
    assert Message.objects.filter(turn_id=turn_id).count() == 2


def test_an_accept_that_loses_to_a_concurrent_accept_is_turn_not_acceptable_like_a_later_one(alice, monkeypatch):
    from memories.services import turns as turns_service

    turn_id = _prepared(alice, commitOn="accepted")
    completed = alice.post(f"{CONV}/turns/{turn_id}/complete", {"assistantMessage": "It opens."}).json()
    assert completed["memoryWrite"] == {"status": "pending", "reason": "waiting for accept"}
    retried = alice.post(f"{CONV}/turns/{turn_id}/complete", {"assistantMessage": "It opens."}).json()
    assert retried["memoryWrite"] == completed["memoryWrite"]  # stored with the reply: whole for any reader

    def lost_to_another_accept(*, turn, retry=False):  # its claim found the turn committed by the other one
        raise turns_service.LostCommit(turn.pk, "committed")

    monkeypatch.setattr(turns_service, "turn_commit", lost_to_another_accept)
    error = assert_envelope(alice.post(f"{CONV}/turns/{turn_id}/accept", {}), 409, "turn_not_acceptable")
    assert error["details"] == {"turnId": turn_id, "status": "committed"}
    monkeypatch.undo()
    assert alice.post(f"{CONV}/turns/{turn_id}/accept", {}).status_code == 200
    assert_envelope(alice.post(f"{CONV}/turns/{turn_id}/accept", {}), 409, "turn_not_acceptable")  # the same code

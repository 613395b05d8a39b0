"""The admin's failed-Hinos-commit list and its re-send action (never a blind replay)."""

from __future__ import annotations

import pytest
from django.urls import reverse

from memories.hinos.models import FailedHinosCommit
from memories.models import Event, Turn
from memoryhub.runtimes import registry
from tests.factories import EventFactory
from tests.hinos.support import COMMIT
from tests.support.admin import log_messages, staff_client
from tests.support.http_server import Reply

CONV = "/v1/users/u1/conversations/c1"
SCENARIO = {
    "id": "gate",
    "name": "City gate",
    "memoryRuntime": "hinos",
    "template": "{{hinosMemory}} {{userMessage}}",
    "memorySources": [{"id": "external-memory", "agentRef": "hinos", "variable": "hinosMemory"}],
}
CHANGELIST = reverse("admin:hinos_failedhinoscommit_changelist")


def failed_turn(api, hinos, ingest: str) -> Turn:
    """A turn whose Hinos commit was refused (committed: false)."""
    hinos.route("POST", COMMIT, Reply(200, {"committed": False}))
    assert api.post("/v1/scenarios", {**SCENARIO, "memoryIngest": ingest}).status_code == 201
    turn_id = api.post(f"{CONV}/turns", {"scenarioId": "gate", "userMessage": "我答应明天归还铜钥匙"}).json()["turnId"]
    api.post(f"{CONV}/turns/{turn_id}/complete", {"assistantMessage": "守卫点头"})
    return Turn.objects.get(pk=turn_id)


def resend(admin_client, *events: Event):
    return admin_client.post(
        CHANGELIST, {"action": "resend_commit", "_selected_action": [e.pk for e in events]}, follow=True
    )


def commits(hinos) -> list[dict]:
    return [r.json() for r in hinos.requests if r.path == COMMIT]


def test_the_list_shows_only_failed_hinos_commits(admin_client, alice, hinos):
    failed_turn(alice, hinos, "best_effort")
    EventFactory(product=alice.product, type="diary.failed")
    response = admin_client.get(CHANGELIST)
    assert response.status_code == 200
    assert list(response.context["cl"].queryset.values_list("type", flat=True)) == ["memory.write_failed"]
    assert b"claim-1" in response.content


def test_resend_of_a_best_effort_turn_records_the_receipt_and_never_sends_twice(admin_client, alice, hinos):
    turn = failed_turn(alice, hinos, "best_effort")
    event = Event.objects.get(type="memory.write_failed")
    hinos.route("POST", COMMIT, Reply(200, {"committed": True}))
    response = resend(admin_client, event)
    assert "1 committed" in response.content.decode()
    turn.refresh_from_db()
    assert turn.runtime_state["hinos"]["committed"] is True and turn.memory_write["status"] == "committed"
    [resent] = Event.objects.filter(type="memory.write_resent")
    assert resent.details["claim_id"] == "claim-1" and resent.details["eventId"] == event.pk
    assert "already committed" in resend(admin_client, event).content.decode()
    assert commits(hinos) == [{"claim_id": "claim-1", "user": "我答应明天归还铜钥匙", "assistant": "守卫点头"}] * 2


def test_resend_of_a_required_turn_commits_it_with_its_background_work(admin_client, alice, hinos):
    scheduled: list[int] = []
    registry.register_commit_hook("probe", scheduled.append)
    turn = failed_turn(alice, hinos, "required")
    assert turn.status == "completed" and scheduled == []
    hinos.route("POST", COMMIT, Reply(200, {"committed": True}))
    resend(admin_client, Event.objects.get(type="memory.write_failed"))
    turn.refresh_from_db()
    assert turn.status == "committed" and turn.memory_write == {"status": "committed"}
    assert scheduled == [turn.pk]
    assert Event.objects.filter(type="turn.completed", turn=turn).count() == 1
    assert len(commits(hinos)) == 2  # the failed one and the re-sent one; committing did not send a third


def test_a_resend_that_fails_again_is_recorded_and_reported(admin_client, alice, hinos):
    failed_turn(alice, hinos, "required")
    event = Event.objects.get(type="memory.write_failed")
    hinos.route("POST", COMMIT, Reply(503, {"error": "busy"}))
    page = resend(admin_client, event).content.decode()
    assert "1 failed" in page and "failed again" in page
    again = Event.objects.filter(type="memory.write_failed").exclude(pk=event.pk).get()
    assert again.details["resendOf"] == event.pk and again.details["claim_id"] == "claim-1"
    assert Turn.objects.get().status == "completed"


@pytest.mark.parametrize("tamper", ["claim", "runtime"])
def test_an_event_that_does_not_match_its_turn_is_not_resent(admin_client, alice, hinos, tamper):
    turn = failed_turn(alice, hinos, "best_effort")
    event = Event.objects.get(type="memory.write_failed")
    if tamper == "claim":
        Event.objects.filter(pk=event.pk).update(details={**event.details, "claim_id": "someone-else"})
    else:
        Turn.objects.filter(pk=turn.pk).update(runtime="personalization")
    sent = len(commits(hinos))
    assert "1 not resendable" in resend(admin_client, event).content.decode()
    assert len(commits(hinos)) == sent


@pytest.mark.parametrize("where", ["bulk action", "console page"])
def test_resending_needs_the_change_permission_and_is_logged(alice, hinos, where):
    failed_turn(alice, hinos, "best_effort")
    event = FailedHinosCommit.objects.get()
    hinos.route("POST", COMMIT, Reply(200, {"committed": True}))

    def attempt(client):
        if where == "bulk action":
            return resend(client, event)
        return client.post(reverse("console:resend", args=[event.pk]))

    denied = attempt(staff_client("hinos.view_failedhinoscommit"))
    assert len(commits(hinos)) == 1 and log_messages(event) == []  # view only: nothing sent again
    assert where == "bulk action" or denied.status_code == 403

    attempt(staff_client("hinos.view_failedhinoscommit", "hinos.change_failedhinoscommit"))
    assert len(commits(hinos)) == 2
    [message] = log_messages(event)
    assert message.startswith("Re-sent the Hinos commit: committed")

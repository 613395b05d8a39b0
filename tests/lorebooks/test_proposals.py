"""Proposed entry edits through HTTP: stored pending, committed under compare-and-set with history when
accepted, never when rejected; visible and decidable in the admin (docs/roleplay.md)."""

from __future__ import annotations

import pytest
from django.urls import reverse

from lorebooks.models import LorebookEntryProposal
from tests.support.admin import log_messages, staff_client
from tests.support.api import assert_envelope

from .support import import_world

pytestmark = pytest.mark.django_db

P = "/v1/lorebooks/eldoria/proposals"


def propose(api, uid="1", base=1, **fields) -> dict:
    response = api.post(P, {"uid": uid, "baseRevision": base, "entry": fields or {"order": 7}})
    assert response.status_code == 201, response.json()
    return response.json()


def test_a_proposal_waits_then_commits_on_its_base_revision_with_history(alice):
    import_world(alice)
    proposal = propose(alice, comment="the guild, renamed")
    assert (proposal["status"], proposal["revision"], proposal["decidedAt"]) == ("pending", None, None)
    assert alice.get("/v1/lorebooks/eldoria/entries/1").json()["revision"] == 1
    assert alice.get(f"{P}/{proposal['id']}").json() == proposal
    accepted = alice.post(f"{P}/{proposal['id']}/accept", {}).json()
    assert (accepted["status"], accepted["revision"]) == ("accepted", 2) and accepted["decidedBy"]
    entry = alice.get("/v1/lorebooks/eldoria/entries/1").json()
    assert (entry["revision"], entry["entry"]["comment"]) == (2, "the guild, renamed")
    [newest, *_] = alice.get("/v1/lorebooks/eldoria/entries/1/versions").json()["results"]
    assert newest["cause"] == "proposal" and f"proposal {proposal['id']}" in newest["actor"]
    again = assert_envelope(alice.post(f"{P}/{proposal['id']}/accept", {}), 409)
    assert again["code"] == "proposal_decided"


def test_an_entry_changed_since_is_a_conflict_and_the_proposal_stays_pending(alice):
    import_world(alice)
    first, second = propose(alice, order=1), propose(alice, order=2)
    assert alice.post(f"{P}/{first['id']}/accept", {}).status_code == 200
    error = assert_envelope(alice.post(f"{P}/{second['id']}/accept", {}), 409)
    assert error["code"] == "revision_conflict"
    assert alice.get(f"{P}/{second['id']}").json()["status"] == "pending"
    assert alice.get("/v1/lorebooks/eldoria/entries/1").json()["entry"]["order"] == 1
    rejected = alice.post(f"{P}/{second['id']}/reject", {"note": "out of date"}).json()
    assert (rejected["status"], rejected["note"], rejected["revision"]) == ("rejected", "out of date", None)
    assert [p["id"] for p in alice.get(f"{P}?status=rejected").json()["results"]] == [second["id"]]
    assert alice.get(f"{P}?status=pending").json()["results"] == []


def test_bad_proposals_are_refused_and_nothing_is_stored(alice, bob):
    import_world(alice)
    stale = assert_envelope(alice.post(P, {"uid": "1", "baseRevision": 3, "entry": {"order": 1}}), 409)
    assert stale["code"] == "revision_conflict"
    assert_envelope(alice.post(P, {"uid": "1", "baseRevision": 1, "entry": {"order": "high"}}), 400)
    assert_envelope(alice.post(P, {"uid": "1", "baseRevision": 1, "entry": {"nope": 1}}), 400)
    assert_envelope(alice.post(P, {"uid": "99", "baseRevision": 1, "entry": {"order": 1}}), 404)
    assert_envelope(alice.get(f"{P}?status=maybe"), 400)
    assert LorebookEntryProposal.objects.count() == 0
    mine = propose(alice)
    assert_envelope(bob.get(f"{P}/{mine['id']}"), 404)  # another product's lorebook is not found
    assert_envelope(bob.post(f"{P}/{mine['id']}/accept", {}), 404)
    assert_envelope(alice.post(f"{P}/{mine['id']}/accept", {"note": "x"}), 400)


def test_the_admin_lists_proposals_and_accepts_them(alice, admin_client):
    import_world(alice)
    proposal = propose(alice, order=33)
    listing = admin_client.get(reverse("admin:lorebooks_lorebookentryproposal_changelist"))
    assert listing.status_code == 200 and b"pending" in listing.content
    url = reverse("admin:lorebooks_lorebookentryproposal_changelist")
    done = admin_client.post(url, {"action": "accept", "_selected_action": [proposal["id"]]}, follow=True)
    assert done.status_code == 200
    assert alice.get(f"{P}/{proposal['id']}").json()["status"] == "accepted"
    assert alice.get("/v1/lorebooks/eldoria/entries/1").json()["entry"]["order"] == 33
    page = admin_client.get(reverse("admin:lorebooks_lorebookentryproposal_change", args=[proposal["id"]]))
    assert page.status_code == 200 and b"operator" in page.content


@pytest.mark.parametrize("action", ["accept", "reject"])
def test_a_view_only_operator_is_neither_offered_nor_allowed_to_decide_a_proposal(alice, action):
    """docs/security.md: a state-changing admin action needs the change permission of what it changes."""
    import_world(alice)
    proposal = propose(alice, order=33)
    viewer = staff_client("lorebooks.view_lorebookentryproposal", "lorebooks.view_lorebookentry")
    url = reverse("admin:lorebooks_lorebookentryproposal_changelist")
    listing = viewer.get(url)
    assert listing.status_code == 200 and f'value="{action}"'.encode() not in listing.content
    viewer.post(url, {"action": action, "_selected_action": [proposal["id"]]})
    assert alice.get(f"{P}/{proposal['id']}").json()["status"] == "pending"
    assert alice.get("/v1/lorebooks/eldoria/entries/1").json()["revision"] == 1
    decider = staff_client(
        "lorebooks.view_lorebookentryproposal",
        "lorebooks.change_lorebookentryproposal",
        "lorebooks.change_lorebookentry",
    )
    decider.post(url, {"action": action, "_selected_action": [proposal["id"]]})
    assert alice.get(f"{P}/{proposal['id']}").json()["status"] == f"{action}ed"
    assert log_messages(LorebookEntryProposal.objects.get(pk=proposal["id"])) == [f"{action}ed"]


def test_a_uid_may_be_sent_as_the_integer_world_info_files_write(alice):
    import_world(alice)
    proposal = alice.post(P, {"uid": 1, "baseRevision": 1, "entry": {"order": 8}})
    assert proposal.status_code == 201 and proposal.json()["uid"] == "1", proposal.json()
    created = alice.post("/v1/lorebooks/eldoria/entries", {"uid": 40, "entry": {"key": ["x"], "content": "X"}})
    assert created.status_code == 201 and created.json()["uid"] == "40", created.json()
    for bad in (-1, True, 1.5):
        assert_envelope(alice.post(P, {"uid": bad, "baseRevision": 1, "entry": {"order": 8}}), 400, "invalid_request")

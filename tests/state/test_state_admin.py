"""The operator console for conversation state: history visible, edits compare-and-set (issue 11, "For all three")."""

from __future__ import annotations

import html
import json

import pytest
from django.contrib.admin.models import LogEntry
from django.contrib.admin.utils import quote
from django.contrib.messages import get_messages
from django.urls import reverse

from memories.state.models import ConversationState, ConversationStateRevision
from tests.support.metrics import metric
from tests.support.turns import prepare

from .support import SECTION, STATE, candidate, state_scenario, submit, upsert

pytestmark = pytest.mark.django_db


@pytest.fixture(autouse=True)
def _fast_password_hashing(settings):
    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]


@pytest.fixture
def written(alice):
    state_scenario(alice)
    submit(alice, candidate(0, text="first notes", upsert=[upsert("inventory", "lamp", "broken")]))
    submit(alice, candidate(1, text="second notes", upsert=[upsert("relationships", "innkeeper", "wary")]))
    return alice


def change_url(row) -> str:
    return reverse("admin:state_conversationstate_change", args=[quote(row.pk)])


def save(admin_client, row, text: str, records: list, loaded: int):
    data = {"text": text, "records": json.dumps(records), "loaded_revision": str(loaded), "_save": "Save"}
    return admin_client.post(change_url(row), data)


def test_the_list_and_the_page_show_the_state_and_its_history(admin_client, written):
    assert "u1" in admin_client.get(reverse("admin:state_conversationstate_changelist")).content.decode()
    page = admin_client.get(change_url(ConversationState.objects.get())).content.decode()
    assert "first notes" in page and "second notes" in page  # both revisions in the history
    assert "r2" in page and "r1" in page and "innkeeper" in page


def test_an_admin_edit_commits_the_next_revision(admin_client, written):
    row = ConversationState.objects.get()
    response = save(admin_client, row, "edited", [{"category": "inventory", "key": "rope", "value": 3}], 2)
    assert response.status_code == 302
    state = written.get(STATE).json()
    assert state["revision"] == 3 and state["text"] == "edited"
    assert [(r["key"], r["value"]) for r in state["records"]] == [("rope", 3)]
    latest = written.get(f"{STATE}/revisions").json()["results"][0]
    assert latest["actor"].startswith("operator:") and latest["changes"]["deleted"]


def test_a_stale_admin_edit_is_refused_visibly_and_saves_nothing(admin_client, written):
    row = ConversationState.objects.get()
    conflicts = metric("memoryhub_conflicts_total", kind="conversation_state")
    response = save(admin_client, row, "stale", [], 1)
    assert response.status_code == 200  # the form again, with the error
    body = response.content.decode()
    assert "changed while you edited it" in body
    assert metric("memoryhub_conflicts_total", kind="conversation_state") == conflicts + 1
    assert written.get(STATE).json()["revision"] == 2 and written.get(STATE).json()["text"] == "second notes"


def test_a_lost_race_after_the_form_check_is_reported(admin_client, written, monkeypatch):
    from memories.state import forms

    monkeypatch.setattr(forms.StateForm, "clean", lambda self: self.cleaned_data)  # the race slips past clean()
    row = ConversationState.objects.get()
    response = save(admin_client, row, "late", [], 1)
    assert response.status_code == 302
    messages = [str(m) for m in get_messages(response.wsgi_request)]
    assert any(m.startswith("Not saved:") for m in messages), messages
    assert written.get(STATE).json()["revision"] == 2


def test_invalid_records_are_refused_by_the_form(admin_client, written):
    row = ConversationState.objects.get()
    response = save(admin_client, row, "x", [{"category": "inventory", "key": ""}], 2)
    assert response.status_code == 200 and "records[0]" in response.content.decode()
    assert written.get(STATE).json()["revision"] == 2


CURRENT = [upsert("inventory", "lamp", "broken"), upsert("relationships", "innkeeper", "wary")]


def refused(admin_client, written, response) -> str:
    """The form again with its error, nothing stored and nothing in the admin's history."""
    assert response.status_code == 200
    state = written.get(STATE).json()
    assert state["revision"] == 2 and state["text"] == "second notes" and len(state["records"]) == 2
    assert not LogEntry.objects.exists()
    return html.unescape(response.content.decode())


@pytest.mark.parametrize(
    "text, records, error",
    [
        ("x" * 201, CURRENT, "text: 201 characters; the scenario allows 200"),
        (
            "second notes",
            [*CURRENT, upsert("weather", "sky", "grey")],
            "records[2].category: unknown category; the scenario declares: relationships, inventory, director_notes",
        ),
        (
            "second notes",
            [*CURRENT, *(upsert("relationships", f"k{i}", i) for i in range(3))],
            "records[4]: category 'relationships' would hold 4 records; its maxRecords is 3",
        ),
    ],
    ids=["text over maxTextChars", "undeclared category", "over maxRecords"],
)
def test_an_edit_the_api_would_refuse_is_refused_by_the_form(admin_client, written, text, records, error):
    row = ConversationState.objects.get()
    as_candidate = candidate(2, text=text, **({"upsert": records[2:]} if records[2:] else {}))
    api_error = submit(written, as_candidate).json()["error"]  # the same change through the API
    assert api_error["code"] == "invalid_state_candidate"
    body = refused(admin_client, written, save(admin_client, row, text, records, 2))
    assert error in body and api_error["details"]["errors"][0]["message"] in body


def test_every_rule_broken_at_once_is_named(admin_client, written):
    records = [*CURRENT, *(upsert("relationships", f"k{i}", i) for i in range(5)), upsert("undeclared", "k", 1)]
    body = refused(admin_client, written, save(admin_client, ConversationState.objects.get(), "x" * 500, records, 2))
    assert "text: 500 characters" in body and "records[7].category: unknown category" in body


def test_an_edit_at_the_scenarios_limits_is_saved_and_names_the_scenario(admin_client, written):
    records = [*CURRENT, *(upsert("relationships", f"k{i}", i) for i in range(2))]
    response = save(admin_client, ConversationState.objects.get(), "x" * 200, records, 2)
    assert response.status_code == 302
    assert written.get(STATE).json()["revision"] == 3
    assert written.get(f"{STATE}/revisions").json()["results"][0]["scenarioId"] == "tavern"


def test_the_page_says_which_scenarios_rules_an_edit_is_checked_against(admin_client, written):
    page = html.unescape(admin_client.get(change_url(ConversationState.objects.get())).content.decode())
    assert "scenario 'tavern': a text of at most 200 characters" in page
    assert "relationships (at most 3 records)" in page


def test_records_of_a_category_the_scenario_dropped_are_kept_or_removed_but_not_changed(admin_client, written):
    body = {
        "id": "tavern",
        "name": "Tavern",
        "memoryRuntime": "personalization",
        "memorySources": [{"id": "st", "agentRef": "state", "variable": "conversationState"}],
        "template": "State:\n{{conversationState}}\nUser: {{userMessage}}",
        "state": {**SECTION, "categories": [c for c in SECTION["categories"] if c["name"] != "inventory"]},
    }
    assert written.put("/v1/scenarios/tavern", body).status_code == 200
    row = ConversationState.objects.get()
    changed = [upsert("inventory", "lamp", "mended"), CURRENT[1]]
    assert "records[0].category: unknown category" in refused(
        admin_client, written, save(admin_client, row, "second notes", changed, 2)
    )
    kept = [CURRENT[0], upsert("relationships", "innkeeper", "friendly")]
    assert save(admin_client, row, "second notes", kept, 2).status_code == 302
    assert save(admin_client, row, "second notes", kept[1:], 3).status_code == 302  # the repair
    assert [r["key"] for r in written.get(STATE).json()["records"]] == ["innkeeper"]


def test_without_a_scenario_only_the_shape_and_the_widest_limits_are_checked(admin_client, written):
    assert written.delete("/v1/scenarios/tavern").status_code == 204
    row = ConversationState.objects.get()
    assert "no scenario" in admin_client.get(change_url(row)).content.decode()
    response = save(admin_client, row, "x" * 100_001, [], 2)
    assert response.status_code == 200 and "at most 100000 characters" in response.content.decode()
    assert written.get(STATE).json()["revision"] == 2
    assert save(admin_client, row, "x" * 100_000, [upsert("weather", "sky", None)], 2).status_code == 302
    assert written.get(STATE).json()["records"][0]["value"] is None


def test_when_no_revision_names_a_scenario_the_latest_turns_is_used(admin_client, written):
    ConversationStateRevision.objects.update(scenario_slug="")  # e.g. imported, or only operator edits so far
    row = ConversationState.objects.get()
    assert "no scenario" in admin_client.get(change_url(row)).content.decode()
    prepare(written, "tavern", "Where is the letter?")
    assert "text: 201 characters" in refused(admin_client, written, save(admin_client, row, "x" * 201, CURRENT, 2))

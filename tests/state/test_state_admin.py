"""The operator console for conversation state: history visible, edits compare-and-set (issue 11, "For all three")."""

from __future__ import annotations

import json

import pytest
from django.contrib.admin.utils import quote
from django.contrib.messages import get_messages
from django.urls import reverse

from memories.state.models import ConversationState
from tests.support.metrics import metric

from .support import STATE, candidate, state_scenario, submit, upsert

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


def test_text_longer_than_any_scenario_allows_is_refused_by_the_form(admin_client, written):
    row = ConversationState.objects.get()
    response = save(admin_client, row, "x" * 100_001, [], 2)
    assert response.status_code == 200 and "at most 100000 characters" in response.content.decode()
    assert written.get(STATE).json()["revision"] == 2
    assert save(admin_client, row, "x" * 100_000, [], 2).status_code == 302

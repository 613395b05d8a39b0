"""The operator console for story snapshots: the snapshot, its `story` text and every version, read-only."""

from __future__ import annotations

import pytest
from django.contrib.admin.utils import quote
from django.urls import reverse

from memories.story.models import StorySnapshot

from .support import settle, settlement, story_scenario, turn

pytestmark = pytest.mark.django_db


@pytest.fixture(autouse=True)
def _fast_password_hashing(settings):
    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]


def test_the_snapshot_page_shows_the_story_and_its_history_with_rollbacks(admin_client, alice):
    story_scenario(alice)
    first = turn(alice)
    settle(alice, settlement(0, first["assistantMessageId"], setFacts={"gate": "closed"}))
    second = turn(alice, "I climb.", "You reach the wall.")
    settle(alice, settlement(1, second["assistantMessageId"], appendEvents=[{"text": "Climbed the wall."}]))
    turn(alice, "I climb.", "You fall.", replaces=second["turnId"])
    row = StorySnapshot.objects.get()
    listing = admin_client.get(reverse("admin:story_storysnapshot_changelist")).content.decode()
    assert "u1" in listing and "c1" in listing
    page = admin_client.get(reverse("admin:story_storysnapshot_change", args=[quote(row.pk)]))
    assert page.status_code == 200
    body = page.content.decode()
    assert "gate: closed" in body and "Climbed the wall." in body  # the current text and v2 in the history
    assert "rollback (restored v1)" in body and "rolled back" in body
    versions = admin_client.get(reverse("admin:story_storyversion_changelist")).content.decode()
    assert "rollback" in versions

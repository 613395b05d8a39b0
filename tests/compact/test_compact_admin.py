"""The admin lists compactions with what they cover; they cannot be edited or added there."""

from __future__ import annotations

import pytest
from django.test import Client

from memories.compact.models import Compaction
from tests.factories import SuperuserFactory
from tests.support.turns import post_turn

from .support import create_scenario, play, text

pytestmark = pytest.mark.django_db


@pytest.fixture
def operator() -> Client:
    client = Client()
    client.force_login(SuperuserFactory(username="op"))
    return client


def test_the_list_and_the_page_show_what_a_compaction_covers(alice, operator) -> None:
    create_scenario(alice, budget=2000, keep=2)
    for n in range(1, 11):
        play(alice, text(90, f"u{n}"), text(90, f"a{n}"))
    post_turn(alice, "chat", text(40, "now"))
    compaction = Compaction.objects.get()
    covers = f"messages {compaction.from_message_id}–{compaction.through_message_id} (rounds 1–9, 18 messages)"
    listing = operator.get("/admin/compact/compaction/")
    assert listing.status_code == 200 and covers in listing.content.decode()
    assert operator.get("/admin/compact/compaction/?invalidated__exact=0&trigger=inline").status_code == 200
    page = operator.get(f"/admin/compact/compaction/{compaction.pk}/change/").content.decode()
    assert covers in page and compaction.summary[:40] in page and "compacted inline by a prepare" in page
    assert operator.post(f"/admin/compact/compaction/{compaction.pk}/change/", {"summary": "x"}).status_code == 403
    assert operator.get("/admin/compact/compaction/add/").status_code == 403

"""A settlement racing the regeneration of its anchor reply (PostgreSQL, real connections).

Whichever commits first, the story never ends up anchored on the superseded reply: either the settlement
commits first and the regeneration rolls it back, or the regeneration commits first and the settlement is
refused (409: the anchor is superseded, or the version moved on).
"""

from __future__ import annotations

import threading

import pytest

from memories.models import Event
from tests.memories.test_documents_concurrency import run_threads

from .support import CONV, SETTLE, STORY, settlement, story_scenario, turn

pytestmark = [pytest.mark.requires_postgres, pytest.mark.django_db(transaction=True)]


@pytest.mark.parametrize("attempt", range(4))
def test_the_story_is_never_left_on_a_superseded_reply(alice, attempt):
    story_scenario(alice)
    first = turn(alice)
    settle = alice.post(SETTLE, settlement(0, first["assistantMessageId"], setFacts={"round": 1}))
    assert settle.status_code == 201
    second = turn(alice, "next", "the reply to be replaced")
    regenerate = alice.post(
        f"{CONV}/turns", {"scenarioId": "saga", "userMessage": "next", "replacesTurnId": second["turnId"]}
    ).json()["turnId"]
    barrier = threading.Barrier(2)

    def racer(index: int, client) -> tuple[str, int, dict]:
        barrier.wait(timeout=30)
        if index == 0:
            body = settlement(1, second["assistantMessageId"], setFacts={"round": 2})
            response = client.post(SETTLE, body, format="json")
            return "settle", response.status_code, response.json()
        response = client.post(f"{CONV}/turns/{regenerate}/complete", {"assistantMessage": "again"}, format="json")
        return "regenerate", response.status_code, response.json()

    (_, settled, body), (_, regenerated, _) = run_threads(2, alice.key, racer)
    assert regenerated == 200
    story = alice.get(STORY).json()
    assert story["anchorMessageId"] == first["assistantMessageId"] and story["worldFacts"] == {"round": 1}
    rolled_back = Event.objects.filter(type="story.rolled_back").count()
    if settled == 201:
        assert rolled_back == 1 and story["version"] == 3
    else:
        assert settled == 409 and body["error"]["code"] in {"anchor_conflict", "revision_conflict"}
        assert rolled_back == 0 and story["version"] == 1

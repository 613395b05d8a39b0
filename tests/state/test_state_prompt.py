"""`conversationState` in a turn's prompt: the actor projection as text, fresh after every commit (issue 11 §1)."""

from __future__ import annotations

import pytest

from tests.support.turns import prepare

from .support import candidate, state_scenario, submit, upsert

pytestmark = pytest.mark.django_db


@pytest.mark.parametrize("runtime", ["personalization", "axon_shadow"])
def test_the_prompt_shows_the_actor_projection_and_each_commit_at_once(alice, runtime):
    state_scenario(alice, runtime=runtime)
    empty = prepare(alice, "tavern", "Where is the letter?")
    assert empty["variables"]["conversationState"] == ""
    assert empty["sources"][0]["status"] == "empty" and empty["sources"][0]["revision"] == 0
    submit(
        alice,
        candidate(
            0,
            text="secret notes",
            upsert=[
                upsert("relationships", "innkeeper", "wary of the player"),
                upsert("inventory", "lamp", {"lit": False}),
                upsert("director_notes", "twist", "the letter is forged"),
            ],
        ),
    )
    turn = prepare(alice, "tavern", "Where is the letter?")
    text = turn["variables"]["conversationState"]
    assert (
        text == 'relationships (who trusts whom):\n- innkeeper: wary of the player\ninventory:\n- lamp: {"lit": false}'
    )
    assert "forged" not in turn["prompt"] and "secret notes" not in turn["prompt"]  # background only
    assert turn["prompt"].startswith(f"State:\n{text}\nUser: Where is the letter?")
    assert turn["sources"][0]["status"] == "ok" and turn["sources"][0]["revision"] == 1
    submit(alice, candidate(1, upsert=[upsert("relationships", "innkeeper", "trusts the player")]))
    again = prepare(
        alice, "tavern", "Where is the letter?"
    )  # the commit invalidated the working-set entry: no stale state
    assert "trusts the player" in again["variables"]["conversationState"]
    assert again["sources"][0]["revision"] == 2

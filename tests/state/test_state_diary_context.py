"""The diary summariser is given the state's background projection as context (issue 11 §1)."""

from __future__ import annotations

import pytest

from diaries.services import diary_plan_and_write
from diaries.summarizers import ExtractiveSummarizer, build_prompt
from tests.diaries.test_diary_summarizer_http import PATH, _due_turn, completion, server  # noqa: F401  (fixture)

from .support import candidate, state_scenario, submit, upsert

pytestmark = pytest.mark.django_db


def test_the_summariser_prompt_carries_the_background_projection(alice, server):  # noqa: F811
    state_scenario(alice)
    body = candidate(
        0,
        text="The innkeeper is the thief.",
        upsert=[upsert("director_notes", "twist", "the letter is forged"), upsert("inventory", "lamp", "broken")],
    )
    assert submit(alice, body).status_code == 201
    server.route("POST", PATH, completion('{"summary": "They talked.", "diary": "Dear diary."}'))
    assert diary_plan_and_write(turn_pk=_due_turn(alice.product).pk).outcome == "written"
    prompt = server.requests[-1].json()["messages"][-1]["content"]
    assert "Background state of the conversation" in prompt
    # Everything, actor or not: the background projection.
    assert "Notes:\nThe innkeeper is the thief." in prompt
    assert "director_notes:\n- twist: the letter is forged" in prompt and "- lamp: broken" in prompt
    assert prompt.index("Background state") < prompt.index("Transcript of rounds")


def test_without_state_the_prompt_is_unchanged(alice, server):  # noqa: F811
    server.route("POST", PATH, completion('{"summary": "They talked.", "diary": "Dear diary."}'))
    diary_plan_and_write(turn_pk=_due_turn(alice.product).pk)
    assert "Background state" not in server.requests[-1].json()["messages"][-1]["content"]


def test_the_extractive_summariser_quotes_only_the_transcript():
    messages = [{"role": "user", "content": "The lamp is broken."}, {"role": "assistant", "content": "I fix it."}]
    plain = ExtractiveSummarizer().summarize(messages, 1, 1, True)
    with_context = ExtractiveSummarizer().summarize(messages, 1, 1, True, context="secret director notes")
    assert plain == with_context
    assert "Background" not in build_prompt(messages, 1, 1, False)[-1]["content"]

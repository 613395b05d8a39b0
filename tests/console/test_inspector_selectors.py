"""The inspector and timeline selectors on a conversation made through the real API (jobs run in-process)."""

from __future__ import annotations

import pytest

from memories.console.inspector import turn_inspection
from memories.console.timeline import conversation_timeline
from memories.models import ScenarioVersion, Turn
from memoryhub.errors import NotFound
from tests.console.inspector_data import seed_conversation
from tests.factories import ProductFactory, ScenarioFactory, TurnFactory


@pytest.fixture
def story(transactional_db):
    return seed_conversation()


def test_a_turn_shows_its_prompt_spans_variables_sources_aftermath_and_changes(story):
    first, second = story.turns[0], story.turns[1]
    seen = turn_inspection(product=story.product, turn_id=second.pk)

    assert seen.prompt.exact and seen.prompt.prompt == second.prompt
    assert "".join(s.text for s in seen.prompt.segments) == second.prompt
    spans = [s for s in seen.prompt.segments if s.variable]
    assert [s.variable for s in spans] == [
        "jsonMemory", "memoryTable", "compassMemory", "conversationState", "story", "userMessage"
    ]  # fmt: skip
    assert all(second.prompt[s.start : s.end] == s.text for s in spans)
    assert len({s.colour for s in spans}) == len(spans)

    assert [v.name for v in seen.unreferenced] == ["preferences"]
    state = next(v for v in seen.referenced if v.name == "conversationState")
    assert state.source["status"] == "ok" and state.source["revision"] == 1 and "keeper" in state.text

    after = seen.aftermath
    assert after.memory_write["status"] == "done"
    assert after.table_edit.outcome == "updated"
    assert [s["source"] for s in after.table_edit.skipped] == ["deleteRow(0, 7)"]
    assert "does not exist" in after.table_edit.skipped[0]["reason"]
    assert [(p.decision, p.outcome) for p in after.diary_plans] == [("summary_and_diary", "written")]
    assert [v.version for v in after.story_versions] == [1]
    assert {"turn.completed", "table.updated", "diary.written", "story.settled"} <= {e.type for e in after.events}

    assert seen.comparison.previous == first
    assert {"jsonMemory", "memoryTable", "conversationState", "userMessage"} <= set(seen.comparison.changed_names)
    assert "preferences" not in seen.comparison.changed_names
    assert seen.comparison.prompt_changed
    assert "\n".join(x.text for x in seen.comparison.prompt_lines if x.kind != "removed") == second.prompt

    round_one = turn_inspection(product=story.product, turn_id=first.pk).aftermath
    assert [r.revision for r in round_one.state_revisions] == [1]
    assert [r.revision for r in round_one.document_revisions] == [2]  # written between turn 1 and turn 2
    assert turn_inspection(product=story.product, turn_id=first.pk).comparison.previous is None


def test_another_products_turn_and_conversation_are_not_found(story):
    other = ProductFactory()
    with pytest.raises(NotFound):
        turn_inspection(product=other, turn_id=story.turns[0].pk)
    with pytest.raises(NotFound):
        conversation_timeline(product=other, conversation_pk=story.conversation.pk)


def test_the_timeline_puts_every_artefact_in_its_round(story):
    line = conversation_timeline(product=story.product, conversation_pk=story.conversation.pk)
    by_round = {r.number: r for r in line.rounds}
    assert sorted(by_round) == [0, 1, 2, 3]
    assert [i.row.version for i in by_round[0].of("table")] == [1, 1]  # both tables created before round 1
    assert [i.row.revision for i in by_round[0].of("document")] == [1]
    assert [i.row.revision for i in by_round[1].of("document")] == [2]
    assert [i.row.revision for i in by_round[1].of("state")] == [1]
    assert [(i.row.round_from, i.row.round_to) for i in by_round[2].of("diary")] == [(1, 2)]
    assert [i.row.version for i in by_round[2].of("story")] == [1]
    assert [i.row.status for i in by_round[3].of("turn")] == ["superseded", "committed"]
    assert [i.row.superseded for i in by_round[3].of("message")] == [True, True, False, False]
    assert line.count("message") == 8 and line.count("turn") == 4


@pytest.mark.django_db
def test_a_turn_of_an_older_scenario_version_is_highlighted_from_that_versions_template():
    scenario = ScenarioFactory(template="Old: {{userMessage}}", version=1)
    ScenarioVersion.objects.create(
        scenario=scenario, version=1, snapshot={"template": "Old: {{userMessage}}"}, actor="t"
    )
    turn = TurnFactory(scenario=scenario, user_message="hi", prompt="Old: hi")
    scenario.template, scenario.version = "New: {{userMessage}}", 2
    scenario.save()

    prompt = turn_inspection(product=scenario.product, turn_id=turn.pk).prompt
    assert prompt.exact and [(s.variable, s.text) for s in prompt.segments] == [(None, "Old: "), ("userMessage", "hi")]


@pytest.mark.django_db
def test_a_prompt_that_cannot_be_reproduced_is_shown_whole_with_the_reason():
    scenario = ScenarioFactory(template="T: {{userMessage}}", version=3)  # version 3 was never snapshotted
    turn = TurnFactory(scenario=scenario, user_message="hi", prompt="T: hi")
    Turn.objects.filter(pk=turn.pk).update(prompt="T: hi (edited)")
    prompt = turn_inspection(product=scenario.product, turn_id=turn.pk).prompt
    assert not prompt.exact and "does not reproduce" in prompt.problem
    assert [s.text for s in prompt.segments] == ["T: hi (edited)"]

    Turn.objects.filter(pk=turn.pk).update(scenario_version=2)  # neither the snapshot nor the current version
    prompt = turn_inspection(product=scenario.product, turn_id=turn.pk).prompt
    assert not prompt.exact and "no longer kept" in prompt.problem


def test_a_long_conversation_is_shown_a_page_of_rounds_at_a_time(story):
    conversation = story.conversation
    page = conversation_timeline(product=story.product, conversation_pk=conversation.pk, size=2)
    assert (page.first, page.last, page.latest) == (2, 3, 3)
    assert [r.number for r in page.rounds] == [2, 3]
    assert (page.earlier, page.later) == (1, None)
    assert [i.row.version for i in page.rounds[0].of("story")] == [1]  # placed by its anchor's round

    older = conversation_timeline(product=story.product, conversation_pk=conversation.pk, until=1, size=2)
    assert [r.number for r in older.rounds] == [0, 1]
    assert (older.earlier, older.later) == (None, 3)
    assert [i.row.revision for i in older.rounds[0].of("document")] == [1]
    assert [i.row.revision for i in older.rounds[1].of("document")] == [2]
    assert older.count("diary") == 0 and older.count("story") == 0

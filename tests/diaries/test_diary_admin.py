from __future__ import annotations

import json

import pytest
from django.test import Client

from diaries.models import DiaryEntry, DiaryPlanRecord, DiaryState
from diaries.services import diary_plan_and_write
from diaries.summarizers import SummarizerConfigError
from memories.models import Scenario
from tests.factories import DiaryScenarioFactory, SuperuserFactory, TurnFactory
from tests.support.admin import log_messages, staff_client

from .support import SMALL_POLICY

pytestmark = pytest.mark.django_db


@pytest.fixture
def operator() -> Client:
    client = Client()
    client.force_login(SuperuserFactory(username="op"))
    return client


def _conversation(product, rounds: int) -> DiaryState:
    scenario = DiaryScenarioFactory(product=product, diary=SMALL_POLICY)
    for _ in range(rounds):
        diary_plan_and_write(turn_pk=TurnFactory(scenario=scenario).pk)
    return DiaryState.objects.get(product=product, conversation_id="c1")


def test_conversation_page_shows_entries_and_plan_decisions_with_reasons(alice, operator) -> None:
    state = _conversation(alice.product, 3)
    page = operator.get(f"/admin/diaries/diarystate/{state.pk}/change/").content.decode()
    assert "round 1 &lt; minRounds 3" in page and "round 2 &lt; minRounds 3" in page
    assert "due; free diary quota available" in page and "summary_and_diary" in page
    assert DiaryEntry.objects.get().summary[:20] in page
    assert operator.get("/admin/diaries/diarystate/").status_code == 200
    assert operator.get("/admin/diaries/diaryentry/").status_code == 200
    assert operator.get("/admin/diaries/diaryplanrecord/?outcome=skipped").status_code == 200


def test_entries_cannot_be_edited_or_added(alice, operator) -> None:
    _conversation(alice.product, 3)
    entry = DiaryEntry.objects.get()
    response = operator.post(f"/admin/diaries/diaryentry/{entry.pk}/change/", {"summary": "rewritten"})
    assert response.status_code == 403
    entry.refresh_from_db()
    assert entry.summary != "rewritten"
    assert operator.get("/admin/diaries/diaryentry/add/").status_code == 403


def test_replan_action_appends_the_missing_diary(alice, operator, settings) -> None:
    settings.SUMMARIZER_BASE_URL, settings.SUMMARIZER_MODEL = "http://127.0.0.1:9", ""
    scenario = DiaryScenarioFactory(product=alice.product, diary=SMALL_POLICY)
    turns = [TurnFactory(scenario=scenario) for _ in range(3)]
    for turn in turns[:2]:
        diary_plan_and_write(turn_pk=turn.pk)
    with pytest.raises(SummarizerConfigError):
        diary_plan_and_write(turn_pk=turns[2].pk)
    settings.SUMMARIZER_BASE_URL = None
    state = DiaryState.objects.get()
    response = operator.post(
        "/admin/diaries/diarystate/", {"action": "replan", "_selected_action": [state.pk]}, follow=True
    )
    assert "Re-planned 1 conversation(s): written 1." in response.content.decode()
    assert log_messages(state) == ["Re-planned the diary: written"]
    assert [(e.round_from, e.round_to) for e in DiaryEntry.objects.all()] == [(1, 3)]
    assert DiaryPlanRecord.objects.filter(trigger="admin", outcome="written").count() == 1


def test_replan_failure_is_reported(alice, operator, settings) -> None:
    state = _conversation(alice.product, 2)
    TurnFactory(scenario=DiaryScenarioFactory(product=alice.product, slug="other", diary=SMALL_POLICY))
    settings.SUMMARIZER_BASE_URL, settings.SUMMARIZER_MODEL = "http://127.0.0.1:9", ""
    response = operator.post(
        "/admin/diaries/diarystate/", {"action": "replan", "_selected_action": [state.pk]}, follow=True
    )
    page = response.content.decode()
    assert "generation failed" in page and "failed 1" in page
    assert not DiaryEntry.objects.exists()


def _scenario_form(product, diary: dict) -> dict:
    return {
        "product": product.pk,
        "slug": "story",
        "name": "Story",
        "memory_runtime": "axon_go",
        "template": "{{compassMemory}} {{userMessage}}",
        "memory_ingest": "best_effort",
        "commit_on": "completed",
        "tool_updates": "on",
        "memory_schema": "null",
        "sections": json.dumps({"diary": diary}),
        "sources-TOTAL_FORMS": "1",
        "sources-INITIAL_FORMS": "0",
        "versions-TOTAL_FORMS": "0",
        "versions-INITIAL_FORMS": "0",
        "sources-0-source_id": "diary",
        "sources-0-agent_ref": "diary-orchestrator",
        "sources-0-variable": "compassMemory",
        "sources-0-priority": "",
    }


def test_scenario_admin_validates_the_diary_policy_like_the_api(alice, operator) -> None:
    refused = operator.post("/admin/memories/scenario/add/", _scenario_form(alice.product, {"minRounds": -1}))
    assert refused.status_code == 200 and "diary.minRounds" in refused.content.decode()
    assert not Scenario.objects.filter(product=alice.product).exists()
    saved = operator.post("/admin/memories/scenario/add/", _scenario_form(alice.product, {"minRounds": 5}))
    assert saved.status_code == 302
    policy = alice.get("/v1/scenarios/story").json()["diary"]
    assert (policy["minRounds"], policy["freeRoundsPerDiary"]) == (5, 10)


def test_replanning_needs_the_change_permission(alice) -> None:
    state = _conversation(alice.product, 2)
    viewer = staff_client("diaries.view_diarystate")
    viewer.post("/admin/diaries/diarystate/", {"action": "replan", "_selected_action": [state.pk]})
    assert not DiaryPlanRecord.objects.filter(trigger="admin").exists() and log_messages(state) == []

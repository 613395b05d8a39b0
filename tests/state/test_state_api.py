"""Conversation state through HTTP (issue 11 §1): validation, version check, commit, projections, history, replay."""

from __future__ import annotations

import pytest

from memories.models import Event
from memories.state.models import ConversationState, ConversationStateRevision
from tests.support.api import assert_envelope
from tests.support.scenarios import refused

from .support import STATE, candidate, state_scenario, submit, upsert

pytestmark = pytest.mark.django_db


@pytest.fixture
def api(alice):
    state_scenario(alice)
    return alice


def test_never_written_state_is_the_empty_shape(api):
    empty = {"revision": 0, "text": "", "records": []}
    assert api.get(STATE).json() == empty
    assert api.get(STATE, data={"view": "actor", "scenario": "tavern"}).json() == empty
    assert api.get(f"{STATE}/revisions").json() == {"results": [], "next": None}
    assert not ConversationState.objects.exists()  # reading never creates a row


def test_a_candidate_commits_revision_plus_one_and_both_projections_show_it(api):
    body = candidate(
        0,
        text="The innkeeper hides a letter.",
        upsert=[
            upsert("relationships", "innkeeper", {"trust": 2}),
            upsert("inventory", "lamp", "broken"),
            upsert("director_notes", "twist", "the letter is forged"),
        ],
    )
    response = submit(api, body)
    assert response.status_code == 201 and response.json() == {"revision": 1}
    background = api.get(STATE, data={"view": "background"}).json()
    assert background["revision"] == 1 and background["text"] == "The innkeeper hides a letter."
    assert [(r["category"], r["key"], r["value"], r["updatedRound"]) for r in background["records"]] == [
        ("director_notes", "twist", "the letter is forged", 0),
        ("inventory", "lamp", "broken", 0),
        ("relationships", "innkeeper", {"trust": 2}, 0),
    ]
    assert api.get(STATE).json() == background  # background is the default view
    actor = api.get(STATE, data={"view": "actor", "scenario": "tavern"}).json()
    # Only actor categories, in the scenario's order; the text is the background's notes.
    assert actor == {
        "revision": 1,
        "text": "",
        "records": [
            {"category": "relationships", "key": "innkeeper", "value": {"trust": 2}, "updatedRound": 0},
            {"category": "inventory", "key": "lamp", "value": "broken", "updatedRound": 0},
        ],
    }
    event = Event.objects.get(type="state.committed")
    assert event.details["revision"] == 1 and event.details["upserted"][0] == ["relationships", "innkeeper"]


def test_upserts_replace_deletes_remove_and_text_is_kept_when_omitted(api):
    submit(api, candidate(0, text="notes", upsert=[upsert("inventory", "lamp", 1), upsert("inventory", "rope", 1)]))
    response = submit(
        api, candidate(1, upsert=[upsert("inventory", "lamp", 2)], delete=[{"category": "inventory", "key": "rope"}])
    )
    assert response.json() == {"revision": 2}
    state = api.get(STATE).json()
    assert state["text"] == "notes"
    assert [(r["key"], r["value"]) for r in state["records"]] == [("lamp", 2)]


def test_revisions_are_listed_newest_first_with_their_changes(api):
    for base in range(3):
        submit(api, candidate(base, text=f"v{base + 1}"))
    results = api.get(f"{STATE}/revisions").json()["results"]
    assert [r["revision"] for r in results] == [3, 2, 1]
    assert [r["text"] for r in results] == ["v3", "v2", "v1"]
    assert results[0]["actor"].startswith("api_key:") and results[0]["scenarioId"] == "tavern"
    page = api.get(f"{STATE}/revisions", data={"limit": 2}).json()
    assert [r["revision"] for r in page["results"]] == [3, 2] and page["next"]
    rest = api.get(f"{STATE}/revisions", data={"cursor": page["next"]}).json()
    assert [r["revision"] for r in rest["results"]] == [1]


def test_a_stale_base_revision_is_409_with_the_current_revision(api):
    submit(api, candidate(0, text="one"))
    submit(api, candidate(1, text="two"))
    error = assert_envelope(submit(api, candidate(1, text="late")), 409, "revision_conflict")
    assert error["details"]["currentRevision"] == 2
    assert api.get(STATE).json()["text"] == "two"
    error = assert_envelope(submit(api, candidate(5, text="ahead")), 409, "revision_conflict")
    assert error["details"]["currentRevision"] == 2
    assert ConversationStateRevision.objects.count() == 2


@pytest.mark.parametrize(
    ("body", "path"),
    [
        (candidate(0, upsert=[upsert("weather", "sky", "grey")]), "upsert[0].category"),
        (candidate(0, delete=[{"category": "weather", "key": "sky"}]), "delete[0].category"),
        (candidate(0, text="x" * 201), "text"),
        (candidate(0, upsert=[upsert("inventory", "big", "x" * 8200)]), "upsert[0].value"),
        (candidate(0, upsert=[upsert("relationships", f"p{i}", i) for i in range(4)]), "upsert[3]"),
        (candidate(0, upsert=[{"category": "inventory", "key": "lamp"}]), "upsert[0].value"),
        (candidate(0, upsert=[{"category": "inventory", "key": "", "value": 1}]), "upsert[0].key"),
        (candidate(0, upsert=[upsert("inventory", "a", 1), upsert("inventory", "a", 2)]), "upsert[1]"),
        (candidate(0, upsert="lamp"), "upsert"),
        (candidate(0, delete=[upsert("inventory", "a", 1)]), "delete[0].value"),
        (candidate(0, text=5), "text"),
        (candidate(0, colour="red"), "colour"),
        ({"baseRevision": 0}, "scenarioId"),
        (candidate(-1), "baseRevision"),
        (candidate(True), "baseRevision"),
        (candidate(0, operationId="has space"), "operationId"),
        (candidate(0, scenarioId="plain"), "scenarioId"),
        ([1, 2], ""),
    ],
)
def test_invalid_candidates_are_422_naming_the_path_and_store_nothing(api, body, path):
    from tests.support.scenarios import create

    create(api, {"id": "plain", "name": "No state", "template": "{{userMessage}}", "memorySources": []})
    error = assert_envelope(submit(api, body), 422, "invalid_state_candidate")
    assert error["details"]["path"] == path, error
    assert error["details"]["errors"][0]["path"] == path
    assert not ConversationStateRevision.objects.exists()
    assert not Event.objects.filter(type="state.committed").exists()


def test_validation_comes_before_the_version_check(api):
    submit(api, candidate(0, text="one"))
    error = assert_envelope(submit(api, candidate(0, upsert=[upsert("weather", "sky", 1)])), 422)
    assert error["details"]["path"] == "upsert[0].category"


def test_max_records_counts_what_is_stored_already(api):
    submit(api, candidate(0, upsert=[upsert("relationships", f"p{i}", i) for i in range(3)]))
    error = assert_envelope(submit(api, candidate(1, upsert=[upsert("relationships", "p9", 9)])), 422)
    assert error["details"]["path"] == "upsert[0]"
    # Replacing one and deleting another keeps the category within its limit.
    ok = submit(
        api,
        candidate(1, upsert=[upsert("relationships", "p9", 9)], delete=[{"category": "relationships", "key": "p0"}]),
    )
    assert ok.json() == {"revision": 2}


def test_an_unknown_scenario_is_404(api):
    assert_envelope(submit(api, candidate(0, scenarioId="nowhere")), 404, "not_found")


def test_operation_id_repeats_return_the_first_result(api):
    body = candidate(0, text="once", operationId="op-state-1")
    first = submit(api, body)
    assert first.status_code == 201 and first.json() == {"revision": 1}
    submit(api, candidate(1, text="later"))
    again = submit(api, body)  # its baseRevision is stale now: the stored result is replayed, nothing written
    assert again.status_code == 201 and again.json() == {"revision": 1}
    assert again.headers["Operation-Replayed"] == "true"
    assert ConversationStateRevision.objects.count() == 2
    reused = submit(api, candidate(2, text="other", operationId="op-state-1"))
    assert_envelope(reused, 422, "operation_id_reused")


def test_the_actor_view_needs_a_scenario_and_a_known_view(api):
    assert_envelope(api.get(STATE, data={"view": "actor"}), 400, "invalid_request")
    assert_envelope(api.get(STATE, data={"view": "director"}), 400, "invalid_request")
    assert_envelope(api.get(STATE, data={"view": "actor", "scenario": "nowhere"}), 404, "not_found")


def test_foreign_conversations_are_not_found_and_never_shared(api, bob):
    submit(api, candidate(0, text="alice's secret", upsert=[upsert("inventory", "key", "gold")]))
    assert bob.get(STATE).json() == {"revision": 0, "text": "", "records": []}
    assert bob.get(f"{STATE}/revisions").json()["results"] == []
    # bob has no scenario "tavern": his candidate names a scenario that is not found
    assert_envelope(submit(bob, candidate(1, text="overwrite")), 404, "not_found")
    assert_envelope(bob.get(STATE, data={"view": "actor", "scenario": "tavern"}), 404, "not_found")
    assert api.get(STATE).json()["text"] == "alice's secret"


@pytest.mark.parametrize(
    ("section", "field"),
    [
        ({"categories": []}, "state.categories"),
        ({"categories": [{"name": "a"}], "maxTextChars": 0}, "state.maxTextChars"),
        ({"categories": [{"name": "a", "actor": "yes"}]}, "state.categories[0].actor"),
        ({"categories": [{"name": "a", "maxRecords": 0}]}, "state.categories[0].maxRecords"),
        ({"categories": [{"name": "a"}, {"name": "a"}]}, "state.categories[1].name"),
        ({"categories": [{"name": "bad name"}]}, "state.categories[0].name"),
        ({"categories": [{"name": "a", "colour": 1}]}, "state.categories[0].colour"),
        ({"categories": [{"name": "a"}], "extra": 1}, "state.extra"),
        ("on", "state"),
    ],
)
def test_the_state_section_is_validated_like_every_section(alice, section, field):
    body = {"id": "s", "name": "S", "template": "{{userMessage}}", "memorySources": [], "state": section}
    assert field in refused(alice, body)


def test_the_section_is_stored_with_defaults(alice):
    body = {"id": "s", "name": "S", "template": "{{userMessage}}", "state": {"categories": [{"name": "a"}]}}
    created = alice.post("/v1/scenarios", body).json()
    assert created["state"] == {"categories": [{"name": "a", "actor": False, "maxRecords": 100}], "maxTextChars": 4000}


def test_the_source_needs_agent_ref_state_and_an_accepting_runtime(alice):
    source = {"id": "st", "agentRef": "other", "variable": "conversationState"}
    body = {"id": "s", "name": "S", "template": "{{userMessage}}", "memorySources": [source]}
    assert "memorySources[0].agentRef" in refused(alice, body)
    for runtime in ("axon_go",):
        fields = refused(alice, {**body, "memoryRuntime": runtime, "memorySources": [{**source, "agentRef": "state"}]})
        assert "memorySources[0].variable" in fields
    for runtime in ("personalization", "axon_shadow"):
        ok = alice.post(
            "/v1/scenarios",
            {**body, "id": runtime, "memoryRuntime": runtime, "memorySources": [{**source, "agentRef": "state"}]},
        )
        assert ok.status_code == 201, ok.json()

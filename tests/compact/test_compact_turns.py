"""Compact history through the HTTP API: the section, the `history` variable, inline compaction and the budget."""

from __future__ import annotations

import pytest

from tests.support.api import assert_envelope
from tests.support.scenarios import refused
from tests.support.turns import post_turn

from .support import (
    CONV,
    compactions,
    create_scenario,
    events,
    history_source,
    messages,
    play,
    scenario_body,
    text,
)

pytestmark = pytest.mark.django_db

# With messages of 90 characters a round adds (90 + 6) + (90 + 11) characters and two line breaks: 199.
L = 90


def _rounds(api, count: int, *, start: int = 1, **kwargs) -> list[dict]:
    return [play(api, text(L, f"u{n}"), text(L, f"a{n}"), **kwargs) for n in range(start, start + count)]


# ---------------------------------------------------------------- the scenario section and the variable


def test_the_section_is_normalized_and_invalid_fields_are_400_naming_them(alice) -> None:
    body = scenario_body()
    del body["compact"]
    created = alice.post("/v1/scenarios", {**body, "compact": {"budgetChars": 5000}})
    assert created.status_code == 201, created.json()
    assert created.json()["compact"] == {"budgetChars": 5000, "keepRecentMessages": 8, "checkpointEveryRounds": 0}
    fields = refused(
        alice,
        {**scenario_body(slug="bad"), "compact": {"budgetChars": 10, "keepRecentMessages": -1, "every": 3}},
    )
    assert set(fields) == {"compact.budgetChars", "compact.keepRecentMessages", "compact.every"}
    assert set(refused(alice, {**scenario_body(slug="bad"), "compact": [1]})) == {"compact"}
    assert set(refused(alice, {**scenario_body(slug="bad"), "compact": {"budgetChars": True}})) == {
        "compact.budgetChars"
    }


def test_the_history_source_names_agent_ref_history_and_a_runtime_with_a_chat_history(alice) -> None:
    body = scenario_body(slug="bad")
    body["memorySources"][0]["agentRef"] = "chat-log"
    assert "memorySources[0].agentRef" in refused(alice, body)
    assert "memorySources[0].variable" in refused(alice, scenario_body(slug="bad", runtime="axon_go"))
    create_scenario(alice, slug="shadow", runtime="axon_shadow")
    create_scenario(alice, slug="personal")


def test_the_history_variable_carries_the_raw_messages_oldest_first(alice) -> None:
    create_scenario(alice)
    first = post_turn(alice, "chat", "Hello gate").json()
    assert history_source(first)["status"] == "empty"
    assert first["prompt"] == "History:\n\nUser: Hello gate"
    play(alice, "Who holds the key?", "The guard does.")
    play(alice, "And the lantern?", "On the wall.")
    turn = post_turn(alice, "chat", "Thanks").json()
    assert turn["prompt"] == (
        "History:\nuser: Who holds the key?\nassistant: The guard does.\nuser: And the lantern?\n"
        "assistant: On the wall.\nUser: Thanks"
    )
    source = history_source(turn)
    assert source["status"] == "ok"
    assert source["details"]["compaction"] is None and source["details"]["rawMessages"] == 4
    assert source["details"]["inputChars"] == len(turn["variables"]["history"]) + len("Thanks")


# ---------------------------------------------------------------- inline compaction only when it must


def test_a_prepare_compacts_inline_only_when_the_input_would_not_fit(alice) -> None:
    create_scenario(alice, budget=2000, keep=2)
    _rounds(alice, 10)  # 1,989 characters of history: past the 80 % trigger, the task never ran here
    fits = post_turn(alice, "chat", "ok").json()  # 1,989 + 2 ≤ 2,000
    assert history_source(fits)["details"]["historyChars"] == 1989
    assert "compacted" not in history_source(fits)["details"] and compactions(alice) == []
    must = post_turn(alice, "chat", text(40, "now")).json()  # 1,989 + 40 > 2,000
    details = history_source(must)["details"]
    assert details["compacted"] == "inline"
    assert details["inputChars"] <= 2000
    [compaction] = compactions(alice)
    assert compaction["trigger"] == "inline" and compaction["turnId"] is None
    assert details["compaction"] == {
        "id": compaction["id"],
        "version": 1,
        "throughMessageId": compaction["throughMessageId"],
    }
    # Everything but the two newest messages is covered, and the prompt says so.
    stored = messages(alice)
    assert compaction["throughMessageId"] == stored[-3]["id"] and compaction["messageCount"] == 18
    assert (compaction["roundFrom"], compaction["roundTo"]) == (1, 9)
    history = must["variables"]["history"]
    assert history.startswith("Summary of the earlier conversation:\n" + compaction["summary"])
    assert history.endswith(f"user: {stored[-2]['content']}\nassistant: {stored[-1]['content']}")
    assert must["prompt"].startswith("History:\nSummary of the earlier conversation:")
    [created] = events(alice, "compact.created")
    assert created["details"]["compactionId"] == compaction["id"] and created["details"]["trigger"] == "inline"
    # The turn keeps which compaction its input used.
    stored_turn = alice.get(f"{CONV}/turns/{must['turnId']}").json()
    assert history_source(stored_turn)["details"]["compaction"]["id"] == compaction["id"]


def test_the_next_prepare_uses_the_compaction_without_compacting_again(alice) -> None:
    create_scenario(alice, budget=2000, keep=2)
    _rounds(alice, 10)
    inline = play(alice, text(40, "now"), text(L, "reply"))
    [compaction] = compactions(alice)
    turn = post_turn(alice, "chat", "and then?").json()
    details = history_source(turn)["details"]
    assert details["compaction"]["id"] == compaction["id"] and "compacted" not in details
    assert details["rawMessages"] == 4  # the two kept, and the round that used the compaction
    assert history_source(inline)["details"]["compacted"] == "inline"
    assert len(compactions(alice)) == 1


def test_a_message_longer_than_the_budget_is_422_budget_exceeded_and_nothing_is_stored(alice) -> None:
    create_scenario(alice, budget=600, keep=2)
    error = assert_envelope(post_turn(alice, "chat", "x" * 601), 422, "budget_exceeded")
    assert error["details"] == {"budgetChars": 600, "userMessageChars": 601}
    assert post_turn(alice, "chat", "x" * 600).status_code == 201  # no history yet: the message alone fits
    assert alice.get(f"{CONV}/events", data={"type": "compact.failed"}).json()["results"] == []


def test_a_message_that_leaves_no_room_for_the_summary_is_422_and_no_message_is_dropped(alice) -> None:
    create_scenario(alice, budget=600, keep=2)
    play(alice, text(200, "u1"), text(200, "a1"))
    before = messages(alice)
    # 600 - 560 leaves 40 characters, minus the heading: less than the shortest summary.
    error = assert_envelope(post_turn(alice, "chat", "y" * 560), 422, "budget_exceeded")
    assert error["details"]["minimumSummaryChars"] == 64
    assert messages(alice) == before and compactions(alice) == []


def test_the_summary_and_the_kept_messages_fit_beside_a_long_message(alice) -> None:
    create_scenario(alice, budget=2000, keep=8)
    _rounds(alice, 6)
    # 1,193 characters of history; this message leaves 500: the recent window shrinks below 8 to fit.
    turn = post_turn(alice, "chat", text(1500, "long")).json()
    details = history_source(turn)["details"]
    assert details["compacted"] == "inline" and details["inputChars"] <= 2000
    [compaction] = compactions(alice)
    assert compaction["messageCount"] + details["rawMessages"] == 12


# ---------------------------------------------------------------- tenancy and the list


def test_compactions_of_a_foreign_or_unknown_conversation_are_404(alice, bob) -> None:
    create_scenario(alice, budget=2000, keep=2)
    _rounds(alice, 10)
    post_turn(alice, "chat", text(40, "now"))
    assert len(compactions(alice)) == 1
    assert_envelope(bob.get(f"{CONV}/compactions"), 404, "not_found")
    assert_envelope(alice.get("/v1/users/u1/conversations/nope/compactions"), 404, "not_found")
    assert_envelope(alice.get("/v1/users/u2/conversations/c1/compactions"), 404, "not_found")
    create_scenario(bob)
    play(bob, "hi", "hello")
    assert compactions(bob) == []  # bob's own c1 knows nothing of alice's


def test_the_list_is_newest_first_and_paged(alice) -> None:
    create_scenario(alice, budget=2000, keep=0)
    _rounds(alice, 10)
    play(alice, text(40, "now"), text(L, "reply"))
    _rounds(alice, 9, start=12)
    post_turn(alice, "chat", text(40, "again"))
    listed = compactions(alice)
    assert [c["version"] for c in listed] == [2, 1]
    assert listed[0]["previousId"] == listed[1]["id"]
    assert listed[0]["fromMessageId"] == listed[1]["fromMessageId"]
    page = alice.get(f"{CONV}/compactions", data={"limit": 1}).json()
    assert [c["id"] for c in page["results"]] == [listed[0]["id"]] and page["next"]
    rest = alice.get(f"{CONV}/compactions", data={"limit": 1, "cursor": page["next"]}).json()
    assert [c["id"] for c in rest["results"]] == [listed[1]["id"]] and rest["next"] is None


def test_the_openapi_schema_documents_the_list(db) -> None:
    from rest_framework.test import APIClient

    schema = APIClient().get("/api/schema/", {"format": "json"}).json()
    operation = schema["paths"]["/v1/users/{user_id}/conversations/{conversation_id}/compactions"]["get"]
    assert operation["operationId"] == "compactions_list"


def test_a_prepare_reads_as_much_for_a_long_compacted_conversation_as_for_a_short_one(alice) -> None:
    from django.core.cache import cache
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    create_scenario(alice, budget=2000, keep=2)
    _rounds(alice, 40, conv="/v1/users/u1/conversations/long")
    _rounds(alice, 5, conv="/v1/users/u1/conversations/short")
    assert compactions(alice, "/v1/users/u1/conversations/long") and not compactions(
        alice, "/v1/users/u1/conversations/short"
    )
    counts = {}
    for conv in ("long", "short"):
        cache.clear()  # every entry rebuilt from the database
        with CaptureQueriesContext(connection) as captured:
            response = post_turn(alice, "chat", "ok", conv=f"/v1/users/u1/conversations/{conv}")
        assert response.status_code == 201
        counts[conv] = len(captured.captured_queries)
    assert counts["long"] == counts["short"]

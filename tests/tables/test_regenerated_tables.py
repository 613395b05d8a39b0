"""A regenerated reply's prompt shows the memory tables as the rollback of the reply it replaces will leave them,
also where that rollback conflicts (docs/tables.md "Replaced and regenerated replies", docs/roleplay.md "What a
regeneration is prompted with"), so the indices the new reply writes mean the table it is applied to."""

from __future__ import annotations

import pytest

from tests.memories.roleplay_support import CONV, settled_turn

pytestmark = pytest.mark.django_db(transaction=True)

SCENARIO = {
    "id": "mid",
    "name": "m",
    "memorySources": [{"id": "t", "agentRef": "table-agent", "variable": "memoryTable"}],
    "tables": [{"name": "T", "columns": ["a"]}, {"name": "U", "columns": ["b"]}],
    "template": "{{memoryTable}}\nU: {{userMessage}}",
}


@pytest.fixture(autouse=True)
def _worker(request, settings):
    if not settings.CELERY_TASK_ALWAYS_EAGER:
        request.getfixturevalue("celery_worker_process")


def edit(calls: str) -> str:
    return f"reply <tableEdit>{calls}</tableEdit>"


def prepare(api, message: str, **extra) -> dict:
    response = api.post(f"{CONV}/turns", {"scenarioId": "mid", "userMessage": message, **extra})
    assert response.status_code == 201, response.json()
    return response.json()


def complete(api, turn_id: int, answer: str) -> dict:
    response = api.post(f"{CONV}/turns/{turn_id}/complete", {"assistantMessage": answer})
    assert response.status_code == 200 and response.json()["status"] == "committed", response.json()
    return settled_turn(api, turn_id)


def rows(api) -> list[list[list[str]]]:
    return [t["rows"] for t in api.get(f"{CONV}/tables").json()["tables"]]


def rounds(api, *replies: str) -> list[int]:
    assert api.post("/v1/scenarios", SCENARIO).status_code == 201
    return [complete(api, prepare(api, f"u{i}")["turnId"], answer)["turnId"] for i, answer in enumerate(replies, 1)]


def test_a_middle_round_whose_rollback_conflicts_is_prompted_with_what_the_rollback_keeps(alice):
    _, t2, _ = rounds(alice, *(edit(f'insertRow(0, {{0: "r{i}"}})') for i in (1, 2, 3)))
    regen = prepare(alice, "u2", replacesTurnId=t2)
    # round 3 wrote T after round 2: the rollback keeps r2, so the prompt shows r1, r2, r3 with their indices
    assert "rowIndex,0:a\n0,r1\n1,r2\n2,r3\n" in regen["variables"]["memoryTable"], regen["variables"]
    details = regen["sources"][0]["details"]
    table_t = alice.get(f"{CONV}/tables").json()["tables"][0]
    assert details["asBeforeRound"] is True
    assert [(c["id"], c["name"], c["currentVersion"]) for c in details["rollbackConflicts"]] == [
        (table_t["id"], "T", table_t["version"])
    ]
    assert "by turn" in details["rollbackConflicts"][0]["reason"]
    assert details["versions"][str(table_t["id"])] == table_t["version"]
    # the model corrects the row it was shown as row 1: the discarded reply's row, kept by the conflict
    complete(alice, regen["turnId"], edit('updateRow(0, 1, {0: "r2b"})'))
    rollback = alice.get(f"{CONV}/turns/{t2}").json()["rollback"]
    assert rollback["kinds"]["tables"]["status"] == "conflict"
    assert [c["reason"] for c in rollback["kinds"]["tables"]["conflicts"]] == [
        details["rollbackConflicts"][0]["reason"]
    ]
    assert rows(alice) == [[["r1"], ["r2b"], ["r3"]], []]


def test_a_newest_round_without_conflict_is_still_prompted_as_before_the_round(alice):
    _, t2 = rounds(alice, edit('insertRow(0, {0: "r1"})'), edit('insertRow(0, {0: "r2"})'))
    regen = prepare(alice, "u2", replacesTurnId=t2)
    assert "rowIndex,0:a\n0,r1\n【" in regen["variables"]["memoryTable"], regen["variables"]
    details = regen["sources"][0]["details"]
    assert details["asBeforeRound"] is True and "rollbackConflicts" not in details
    assert regen["sources"][0]["cached"] is False
    complete(alice, regen["turnId"], edit('insertRow(0, {0: "r2b"})'))
    assert rows(alice) == [[["r1"], ["r2b"]], []]


def test_a_table_written_only_by_a_later_round_is_prompted_as_the_rollback_leaves_it(alice):
    """The replaced reply never wrote U, so its rollback leaves round 3's row there: the prompt shows it."""
    _, t2, _ = rounds(
        alice, edit('insertRow(0, {0: "r1"})'), edit('insertRow(0, {0: "r2"})'), edit('insertRow(1, {0: "u3"})')
    )
    regen = prepare(alice, "u2", replacesTurnId=t2)
    text = regen["variables"]["memoryTable"]
    assert "rowIndex,0:a\n0,r1\n【" in text and "rowIndex,0:b\n0,u3\n" in text, text
    assert "rollbackConflicts" not in regen["sources"][0]["details"]
    complete(alice, regen["turnId"], edit('updateRow(1, 0, {0: "u3b"})'))
    assert alice.get(f"{CONV}/turns/{t2}").json()["rollback"]["kinds"]["tables"]["status"] == "rolled_back"
    assert rows(alice) == [[["r1"]], [["u3b"]]]

from __future__ import annotations

import pytest
from rest_framework.test import APIClient

from diaries.planning import DiaryPlan
from diaries.services import diary_append
from diaries.summarizers import SummaryResult
from tests.factories import DiaryScenarioFactory, TurnFactory
from tests.support.api import assert_envelope

pytestmark = pytest.mark.django_db

URL = "/v1/users/u1/conversations/c1/diaries"


def _store(product, count: int, *, kind: str = "summary_and_diary") -> None:
    scenario = DiaryScenarioFactory(product=product)
    for n in range(1, count + 1):
        turn = TurnFactory(scenario=scenario)
        diary = f"diary {n}" if kind == "summary_and_diary" else None
        plan = DiaryPlan(kind, "test", turn.round, turn.round)
        diary_append(turn=turn, plan=plan, category="plus", result=SummaryResult(f"summary {n}", diary, "extractive"))


def test_lists_newest_first_with_every_field(alice) -> None:
    _store(alice.product, 2)
    body = alice.get(URL).json()
    assert [e["summary"] for e in body["results"]] == ["summary 2", "summary 1"]
    assert body["next"] is None
    first = body["results"][0]
    assert set(first) == {
        "id",
        "roundFrom",
        "roundTo",
        "kind",
        "summary",
        "diary",
        "summarizer",
        "subscriptionCategory",
        "agentRef",
        "createdAt",
    }
    assert (first["roundFrom"], first["roundTo"], first["kind"], first["diary"]) == (
        2,
        2,
        "summary_and_diary",
        "diary 2",
    )
    assert first["createdAt"].endswith("Z") and first["subscriptionCategory"] == "plus"


def test_oldest_first_on_request(alice) -> None:
    _store(alice.product, 2)
    assert [e["summary"] for e in alice.get(URL, data={"order": "oldest"}).json()["results"]] == [
        "summary 1",
        "summary 2",
    ]


def test_summary_only_entries_have_a_null_diary(alice) -> None:
    _store(alice.product, 1, kind="summary_only")
    entry = alice.get(URL).json()["results"][0]
    assert (entry["kind"], entry["diary"]) == ("summary_only", None)


def test_paginates_with_a_cursor(alice) -> None:
    _store(alice.product, 5)
    seen, cursor = [], None
    while True:
        body = alice.get(URL, data={"limit": 2, **({"cursor": cursor} if cursor else {})}).json()
        seen += [e["summary"] for e in body["results"]]
        cursor = body["next"]
        if cursor is None:
            break
    assert seen == [f"summary {n}" for n in (5, 4, 3, 2, 1)]


def test_a_never_written_conversation_is_an_empty_list(alice) -> None:
    assert alice.get("/v1/users/nobody/conversations/none/diaries").json() == {"results": [], "next": None}


def test_another_product_sees_nothing_of_alices_diaries(alice, bob) -> None:
    _store(alice.product, 2)
    assert bob.get(URL).json() == {"results": [], "next": None}
    assert len(alice.get(URL).json()["results"]) == 2


@pytest.mark.parametrize(
    ("path", "params", "field"),
    [
        ("/v1/users/bad:id/conversations/c1/diaries", {}, "userId"),
        ("/v1/users/u1/conversations/" + "x" * 129 + "/diaries", {}, "conversationId"),
        (URL, {"order": "sideways"}, "order"),
        (URL, {"limit": "0"}, "limit"),
        (URL, {"cursor": "%%%"}, "cursor"),
    ],
)
def test_bad_input_is_400(alice, path: str, params: dict, field: str) -> None:
    error = assert_envelope(alice.get(path, data=params), 400)
    assert error["details"]["field"] == field


def test_requires_a_product_key(db) -> None:
    assert_envelope(APIClient().get(URL), 401, "unauthenticated")

"""`GET /v1/memory-kinds` is a keyset-paginated list in name order (docs/contract.md, Lists and paging)."""

from __future__ import annotations

import json

import pytest

from memoryhub.pagination import encode_cursor
from tests.longterm.kind_support import KINDS_URL, define
from tests.memories.test_list_order import oldest_first_lists
from tests.support.api import assert_envelope

pytestmark = pytest.mark.django_db


def names(api, **params) -> tuple[list[str], str | None]:
    response = api.get(KINDS_URL, data=params)
    assert response.status_code == 200, response.json()
    body = response.json()
    assert set(body) == {"results", "next"}, body
    return [kind["name"] for kind in body["results"]], body["next"]


def every_name(api, limit: int) -> list[str]:
    seen, cursor = [], None
    while True:
        page, cursor = names(api, limit=limit, **({"cursor": cursor} if cursor else {}))
        seen += page
        if cursor is None:
            return seen


def test_kinds_are_paged_in_name_order_and_next_continues(alice):
    for name in ("tone", "diet", "units"):
        define(alice, name=name)
    first, cursor = names(alice, limit=1)
    assert first == ["diet"] and cursor
    assert names(alice, limit=1, cursor=cursor)[0] == ["tone"]
    assert every_name(alice, limit=2) == ["diet", "tone", "units"]
    assert names(alice) == (["diet", "tone", "units"], None)  # the default page holds them all: next is null


def test_contract_names_the_kinds_list_and_its_order():
    assert "One list is **by name**: `GET /v1/memory-kinds`" in " ".join(oldest_first_lists().split())


@pytest.mark.parametrize("query", ["limit=0", "limit=201", "limit=abc", "limit=true", "cursor=%%%", "cursor=MQ"])
def test_bad_paging_parameters_are_400_with_the_envelope(alice, query):
    define(alice)
    error = assert_envelope(alice.get(f"{KINDS_URL}?{query}"), 400, "invalid_request")
    assert error["details"]["field"] == query.split("=")[0], error


def test_limit_200_is_accepted(alice):
    define(alice)
    assert names(alice, limit=200) == (["diet"], None)


def test_a_kind_created_between_two_pages_is_neither_repeated_nor_skipping_another(alice):
    for name in ("b_kind", "d_kind", "f_kind"):
        define(alice, name=name)
    first, cursor = names(alice, limit=2)
    assert first == ["b_kind", "d_kind"]
    define(alice, name="a_kind")  # before the cursor: not on a later page
    define(alice, name="c_kind")  # before the cursor too
    define(alice, name="e_kind")  # after it: on the next page, in its place
    rest, cursor = names(alice, limit=2, cursor=cursor)
    assert rest == ["e_kind", "f_kind"] and cursor is None


def test_a_kind_deleted_after_its_page_does_not_break_the_cursor(alice):
    for name in ("b_kind", "d_kind", "f_kind"):
        define(alice, name=name)
    _, cursor = names(alice, limit=2)
    assert alice.delete(f"{KINDS_URL}/d_kind").status_code == 204
    assert names(alice, limit=2, cursor=cursor) == (["f_kind"], None)


def test_another_products_kinds_never_appear(alice, bob):
    define(alice, name="diet")
    define(bob, name="bob_only")
    define(bob, name="diet")
    assert every_name(alice, limit=1) == ["diet"]
    _, cursor = names(bob, limit=1)
    assert names(alice, limit=1, cursor=cursor) == (["diet"], None)  # a cursor is a name, not a way into bob's
    assert every_name(bob, limit=1) == ["bob_only", "diet"]


def test_openapi_declares_the_paging_like_the_scenarios_list(client):
    schema = client.get("/api/schema/?format=json").json()

    def paging(path: str) -> tuple[dict, dict]:
        operation = schema["paths"][path]["get"]
        parameters = {p["name"]: p["schema"] for p in operation["parameters"] if p["in"] == "query"}
        page = operation["responses"]["200"]["content"]["application/json"]["schema"]["$ref"].rsplit("/", 1)[-1]
        return parameters, schema["components"]["schemas"][page]["properties"]["next"]

    assert paging("/v1/memory-kinds") == paging("/v1/scenarios")
    parameters, next_schema = paging("/v1/memory-kinds")
    assert set(parameters) == {"limit", "cursor"} and next_schema["nullable"] is True


@pytest.mark.parametrize("forged", ['"\\u0000"', '"a\\u0000"', '"\\ud800"', '["diet"]', "1", "true"])
def test_a_forged_cursor_is_400_not_a_database_error(alice, forged):
    define(alice)
    response = alice.get(KINDS_URL, data={"cursor": encode_cursor(json.loads(forged))})
    assert assert_envelope(response, 400, "invalid_request")["details"]["field"] == "cursor"


def test_a_cursor_of_a_name_no_kind_has_is_a_position_in_name_order(alice):
    define(alice)
    assert names(alice, cursor=encode_cursor("dia")) == (["diet"], None)
    assert names(alice, cursor=encode_cursor("x" * 5000)) == ([], None)

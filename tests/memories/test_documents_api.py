"""JSON memory documents through the HTTP API (docs/contract.md)."""

from __future__ import annotations

import json
from datetime import UTC, datetime

import pytest

from tests.support.api import assert_envelope

URL = "/v1/users/u1/conversations/c1/memory"
REVISIONS = URL + "/revisions"
EMPTY = {"revision": 0, "memory": None}
MAX_SAFE_INTEGER = 9_007_199_254_740_991


def compact_size(value: object) -> int:
    return len(json.dumps(value, separators=(",", ":"), ensure_ascii=False).encode("utf-8"))


def chinese_memory(size: int) -> dict:
    """A document whose compact UTF-8 serialization is exactly `size` bytes, mostly 3-byte characters."""
    overhead = compact_size({"笔记": ""})
    hanzi, ascii_tail = divmod(size - overhead, 3)
    memory = {"笔记": "记" * hanzi + "a" * ascii_tail}
    assert compact_size(memory) == size
    return memory


def nested(depth: int, leaf: object | None = None) -> dict:
    """A root object at depth 1 with alternating arrays and objects below it, `depth` levels in all."""
    node: object = [] if leaf is None else [leaf]
    for level in range(depth - 2):
        node = [node] if level % 2 else {"k": node}
    return {"a": node} if depth > 1 else {}


def revision_count(api, url: str = REVISIONS) -> int:
    return len(api.get(url, data={"limit": 200}).json()["results"])


def write(api, expected: int, memory: object, url: str = URL, **extra):
    return api.put(url, {"expectedRevision": expected, "memory": memory}, **extra)


# --- M1 -----------------------------------------------------------------------------------------


def test_never_written_document_reads_as_revision_zero_and_null(alice):
    response = alice.get(URL)
    assert response.status_code == 200
    assert response.json() == EMPTY


def test_empty_object_is_a_real_document_distinct_from_the_empty_shape(alice):
    assert write(alice, 0, {}).json() == {"revision": 1}
    assert alice.get(URL).json() == {"revision": 1, "memory": {}}


# --- M2 -----------------------------------------------------------------------------------------


def test_write_returns_next_revision_and_reads_back(alice):
    response = write(alice, 0, {"mood": "开心", "n": 1})
    assert response.status_code == 200
    assert response.json() == {"revision": 1}
    assert alice.get(URL).json() == {"revision": 1, "memory": {"mood": "开心", "n": 1}}
    assert write(alice, 1, {"n": 2}).json() == {"revision": 2}
    assert alice.get(URL).json() == {"revision": 2, "memory": {"n": 2}}


def test_stale_revision_is_409_and_changes_nothing(alice):
    write(alice, 0, {"v": 1})
    write(alice, 1, {"v": 2})
    error = assert_envelope(write(alice, 1, {"v": "lost"}), 409, "revision_conflict")
    assert error["details"]["currentRevision"] == 2
    assert alice.get(URL).json() == {"revision": 2, "memory": {"v": 2}}
    assert revision_count(alice) == 2


def test_revision_ahead_of_the_store_is_409(alice):
    write(alice, 0, {"v": 1})
    error = assert_envelope(write(alice, 5, {"v": "x"}), 409, "revision_conflict")
    assert error["details"]["currentRevision"] == 1
    assert alice.get(URL).json() == {"revision": 1, "memory": {"v": 1}}


def test_nonzero_revision_on_a_never_written_document_is_409_and_creates_nothing(alice):
    error = assert_envelope(write(alice, 3, {"v": 1}), 409, "revision_conflict")
    assert error["details"]["currentRevision"] == 0
    assert alice.get(URL).json() == EMPTY
    assert revision_count(alice) == 0


def test_second_create_from_revision_zero_is_409(alice):
    write(alice, 0, {"first": True})
    error = assert_envelope(write(alice, 0, {"second": True}), 409, "revision_conflict")
    assert error["details"]["currentRevision"] == 1
    assert alice.get(URL).json() == {"revision": 1, "memory": {"first": True}}


# --- M3 -----------------------------------------------------------------------------------------


def test_write_is_full_replacement_never_a_merge(alice):
    write(alice, 0, {"keep": 1, "drop": {"deep": [1, 2]}, "list": [1, 2, 3]})
    write(alice, 1, {"keep": 2, "list": [9]})
    assert alice.get(URL).json()["memory"] == {"keep": 2, "list": [9]}


# --- M4 -----------------------------------------------------------------------------------------


@pytest.mark.parametrize("memory", [[], [{"a": 1}], None, "text", "", 42, 1.5, True])
def test_memory_that_is_not_an_object_is_400_invalid_memory(alice, memory):
    assert_envelope(write(alice, 0, memory), 400, "invalid_memory")
    assert alice.get(URL).json() == EMPTY


def test_memory_of_exactly_65536_compact_bytes_is_accepted(alice):
    memory = chinese_memory(65_536)
    assert write(alice, 0, memory).json() == {"revision": 1}
    assert alice.get(URL).json() == {"revision": 1, "memory": memory}


def test_memory_of_65537_compact_bytes_is_413_and_not_stored(alice):
    error = assert_envelope(write(alice, 0, chinese_memory(65_537)), 413, "memory_too_large")
    assert error["details"]["bytes"] == 65_537
    assert alice.get(URL).json() == EMPTY


def test_memory_size_ignores_the_request_formatting(alice):
    # Pretty-printed and \u-escaped on the wire, 65,536 bytes once stored compactly with the characters kept.
    memory = chinese_memory(65_536)
    body = json.dumps({"expectedRevision": 0, "memory": memory}, indent=4, ensure_ascii=True)
    assert len(body.encode()) > 65_536 * 2
    response = alice.client.generic("PUT", URL, body, content_type="application/json")
    assert response.status_code == 200, response.content[:300]


@pytest.mark.parametrize("depth", [1, 2, 31, 32])
def test_memory_up_to_depth_32_is_accepted(alice, depth):
    memory = nested(depth)
    assert write(alice, 0, memory).json() == {"revision": 1}
    assert alice.get(URL).json()["memory"] == memory


@pytest.mark.parametrize("depth", [33, 34, 200])
def test_memory_deeper_than_32_is_400_invalid_memory(alice, depth):
    error = assert_envelope(write(alice, 0, nested(depth)), 400, "invalid_memory")
    assert error["details"]["depth"] == depth
    assert alice.get(URL).json() == EMPTY


def test_scalars_do_not_count_towards_depth(alice):
    # 32 containers with scalars inside the innermost one: still depth 32.
    assert write(alice, 0, nested(32, leaf="叶")).json() == {"revision": 1}
    assert_envelope(write(alice, 1, nested(33, leaf="叶")), 400, "invalid_memory")


def test_depth_counts_from_the_root_object_as_one(alice):
    assert write(alice, 0, {"a": {"b": []}}).status_code == 200  # depth 3
    assert write(alice, 1, {"a": 1}).status_code == 200  # depth 1


# --- M5 -----------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "expected", ["1", "0", True, False, 1.5, 0.5, -1, MAX_SAFE_INTEGER, MAX_SAFE_INTEGER + 1, None, [0], {}]
)
def test_expected_revision_of_wrong_type_or_range_is_400(alice, expected):
    write(alice, 0, {"v": 1})
    error = assert_envelope(write(alice, expected, {"v": 2}), 400, "invalid_request")
    assert "expectedRevision" in error["details"]["fields"]
    assert alice.get(URL).json() == {"revision": 1, "memory": {"v": 1}}


def test_largest_allowed_expected_revision_is_a_valid_type_and_conflicts(alice):
    error = assert_envelope(write(alice, MAX_SAFE_INTEGER - 1, {"v": 1}), 409, "revision_conflict")
    assert error["details"]["currentRevision"] == 0


@pytest.mark.parametrize(
    "body",
    [
        {},
        {"memory": {}},
        {"expectedRevision": 0},
        {"expectedRevision": 0, "memory": {}, "extra": 1},
        {"expectedrevision": 0, "memory": {}},
        {"expectedRevision": 0, "memory": {}, "revision": 1},
    ],
)
def test_missing_or_unknown_fields_are_400(alice, body):
    assert_envelope(alice.put(URL, body), 400, "invalid_request")
    assert alice.get(URL).json() == EMPTY


def test_unknown_field_is_named_in_details(alice):
    error = assert_envelope(alice.put(URL, {"expectedRevision": 0, "memory": {}, "memroy": {}}), 400)
    assert "memroy" in error["details"]["fields"]


# --- M6 -----------------------------------------------------------------------------------------


SCHEMA = {
    "type": "object",
    "properties": {
        "mood": {"enum": ["happy", "sad"]},
        "profile": {"type": "object", "properties": {"age": {"type": "integer", "minimum": 0}}},
    },
    "required": ["mood"],
}


@pytest.fixture
def schema_product(alice):
    alice.product.memory_schema = SCHEMA
    alice.product.save()
    return alice


def test_memory_passing_the_product_schema_is_stored(schema_product):
    assert write(schema_product, 0, {"mood": "happy", "profile": {"age": 3}}).json() == {"revision": 1}


@pytest.mark.parametrize(
    "memory, path",
    [({"mood": "angry"}, "/mood"), ({"mood": "sad", "profile": {"age": "three"}}, "/profile/age"), ({}, "/")],
)
def test_memory_failing_the_product_schema_is_422_naming_the_path_and_not_stored(schema_product, memory, path):
    error = assert_envelope(write(schema_product, 0, memory), 422, "rejected_by_policy")
    assert error["details"]["path"] == path
    assert schema_product.get(URL).json() == EMPTY
    assert revision_count(schema_product) == 0


def test_schema_rejection_keeps_the_previous_document(schema_product):
    write(schema_product, 0, {"mood": "happy"})
    assert_envelope(write(schema_product, 1, {"mood": "furious"}), 422, "rejected_by_policy")
    assert schema_product.get(URL).json() == {"revision": 1, "memory": {"mood": "happy"}}


def test_schema_of_one_product_does_not_apply_to_another(schema_product, bob):
    assert write(bob, 0, {"mood": "angry"}).status_code == 200


# --- M8 -----------------------------------------------------------------------------------------


def test_idempotent_repeat_returns_the_first_response_and_commits_nothing(alice):
    first = write(alice, 0, {"v": 1}, HTTP_IDEMPOTENCY_KEY="op-1")
    assert first.status_code == 200
    assert "Idempotent-Replayed" not in first
    again = write(alice, 0, {"v": 1}, HTTP_IDEMPOTENCY_KEY="op-1")
    assert again.status_code == 200
    assert again.json() == first.json() == {"revision": 1}
    assert again["Idempotent-Replayed"] == "true"
    assert alice.get(URL).json() == {"revision": 1, "memory": {"v": 1}}
    assert revision_count(alice) == 1


def test_idempotent_repeat_after_later_writes_still_replays_without_a_bump(alice):
    write(alice, 0, {"v": 1}, HTTP_IDEMPOTENCY_KEY="op-1")
    write(alice, 1, {"v": 2})
    again = write(alice, 0, {"v": 1}, HTTP_IDEMPOTENCY_KEY="op-1")
    assert again.json() == {"revision": 1}
    assert alice.get(URL).json() == {"revision": 2, "memory": {"v": 2}}
    assert revision_count(alice) == 2


def test_same_idempotency_key_with_another_body_is_422(alice):
    write(alice, 0, {"v": 1}, HTTP_IDEMPOTENCY_KEY="op-1")
    assert_envelope(write(alice, 0, {"v": 999}, HTTP_IDEMPOTENCY_KEY="op-1"), 422)
    assert alice.get(URL).json() == {"revision": 1, "memory": {"v": 1}}
    assert revision_count(alice) == 1


def test_same_idempotency_key_on_another_conversation_is_422(alice):
    write(alice, 0, {"v": 1}, HTTP_IDEMPOTENCY_KEY="op-1")
    other = "/v1/users/u1/conversations/c2/memory"
    assert_envelope(write(alice, 0, {"v": 1}, url=other, HTTP_IDEMPOTENCY_KEY="op-1"), 422)
    assert alice.get(other).json() == EMPTY


def test_products_use_the_same_idempotency_key_independently(alice, bob):
    assert write(alice, 0, {"who": "alice"}, HTTP_IDEMPOTENCY_KEY="shared").json() == {"revision": 1}
    response = write(bob, 0, {"who": "bob"}, HTTP_IDEMPOTENCY_KEY="shared")
    assert response.status_code == 200
    assert "Idempotent-Replayed" not in response
    assert bob.get(URL).json() == {"revision": 1, "memory": {"who": "bob"}}
    assert alice.get(URL).json() == {"revision": 1, "memory": {"who": "alice"}}


def test_failed_write_with_an_idempotency_key_is_not_remembered(alice):
    write(alice, 0, {"v": 1})
    assert_envelope(write(alice, 0, {"v": 2}, HTTP_IDEMPOTENCY_KEY="retry-me"), 409, "revision_conflict")
    assert write(alice, 1, {"v": 2}, HTTP_IDEMPOTENCY_KEY="retry-me-2").json() == {"revision": 2}


def test_overlong_idempotency_key_is_400(alice):
    assert_envelope(write(alice, 0, {"v": 1}, HTTP_IDEMPOTENCY_KEY="k" * 256), 400, "invalid_request")
    assert alice.get(URL).json() == EMPTY


# --- M9 -----------------------------------------------------------------------------------------


def test_revisions_of_a_never_written_document_are_an_empty_page(alice):
    response = alice.get(REVISIONS)
    assert response.status_code == 200
    assert response.json() == {"results": [], "next": None}


def test_revisions_list_every_commit_newest_first_with_actor_and_utc_time(alice):
    for revision, value in enumerate(["a", "b", "c"]):
        write(alice, revision, {"v": value})
    results = alice.get(REVISIONS).json()["results"]
    assert [(r["revision"], r["memory"]) for r in results] == [(3, {"v": "c"}), (2, {"v": "b"}), (1, {"v": "a"})]
    prefix = alice.key.split("_")[1]
    for row in results:
        assert row["actor"] == {"type": "api_key", "id": prefix}
        assert row["createdAt"].endswith("Z")
        created = datetime.fromisoformat(row["createdAt"])
        assert created.utcoffset().total_seconds() == 0
        assert abs((datetime.now(UTC) - created).total_seconds()) < 60


def test_revisions_record_which_key_wrote(alice):
    from memories.services.products import api_key_create

    second = api_key_create(product=alice.product, name="second").plaintext
    write(alice, 0, {"v": 1})
    alice.client.credentials(HTTP_AUTHORIZATION=f"Bearer {second}")
    write(alice, 1, {"v": 2})
    actors = [r["actor"]["id"] for r in alice.get(REVISIONS).json()["results"]]
    assert actors == [second.split("_")[1], alice.key.split("_")[1]]


def test_revisions_paginate_with_the_next_cursor(alice):
    for revision in range(5):
        write(alice, revision, {"v": revision + 1})
    seen, url, params = [], REVISIONS, {"limit": 2}
    pages = 0
    while True:
        body = alice.get(url, data=params).json()
        seen += [row["revision"] for row in body["results"]]
        pages += 1
        if body["next"] is None:
            break
        params = {"limit": 2, "cursor": body["next"]}
    assert seen == [5, 4, 3, 2, 1]
    assert pages == 3


def test_revisions_page_size_equal_to_the_count_has_no_next(alice):
    for revision in range(2):
        write(alice, revision, {"v": revision})
    body = alice.get(REVISIONS, data={"limit": 2}).json()
    assert len(body["results"]) == 2
    assert body["next"] is None


@pytest.mark.parametrize("limit", ["1", "200"])
def test_revisions_limit_bounds_are_accepted(alice, limit):
    write(alice, 0, {"v": 1})
    assert alice.get(REVISIONS, data={"limit": limit}).status_code == 200


@pytest.mark.parametrize("limit", ["0", "201", "x", "-1", "1.5", "true"])
def test_revisions_limit_out_of_bounds_is_400(alice, limit):
    assert_envelope(alice.get(REVISIONS, data={"limit": limit}), 400, "invalid_request")


@pytest.mark.parametrize("cursor", ["!!!", "bm90LWpzb24", "InN0cmluZyI"])
def test_revisions_bad_cursor_is_400(alice, cursor):
    assert_envelope(alice.get(REVISIONS, data={"cursor": cursor}), 400, "invalid_request")


# --- T3: ids --------------------------------------------------------------------------------------

BAD_IDS = ["x" * 129, "a:b", "a%20b", "%C3%A9t%C3%A9", "%E8%AE%B0", "a%2Bb", "%00", "a%3Fb"]


@pytest.mark.parametrize("bad", BAD_IDS)
@pytest.mark.parametrize("template", ["/v1/users/{}/conversations/c1/memory", "/v1/users/u1/conversations/{}/memory"])
def test_bad_ids_are_400_on_read_write_and_history(alice, bad, template):
    url = template.format(bad)
    assert_envelope(alice.get(url), 400)
    assert_envelope(write(alice, 0, {"v": 1}, url=url), 400)
    assert_envelope(alice.get(url + "/revisions"), 400)


def test_ids_of_128_allowed_characters_work(alice):
    user = ("Az09_.@-" * 16)[:128]
    url = f"/v1/users/{user}/conversations/{'c' * 128}/memory"
    assert write(alice, 0, {"v": 1}, url=url).json() == {"revision": 1}
    assert alice.get(url).json() == {"revision": 1, "memory": {"v": 1}}
    assert len(alice.get(url + "/revisions").json()["results"]) == 1


def test_documents_are_per_user_and_per_conversation(alice):
    write(alice, 0, {"who": "u1/c1"})
    assert alice.get("/v1/users/u1/conversations/c2/memory").json() == EMPTY
    assert alice.get("/v1/users/u2/conversations/c1/memory").json() == EMPTY


# --- T2: tenancy ----------------------------------------------------------------------------------


def test_another_product_reads_the_empty_shape_for_the_same_ids(alice, bob):
    write(alice, 0, {"secret": "alice's"})
    assert bob.get(URL).json() == EMPTY
    assert bob.get(REVISIONS).json() == {"results": [], "next": None}


def test_another_products_write_does_not_touch_the_document(alice, bob):
    write(alice, 0, {"secret": "alice's"})
    write(alice, 1, {"secret": "alice's v2"})
    assert write(bob, 0, {"mine": "bob's"}).json() == {"revision": 1}
    assert write(bob, 1, {"mine": "bob's v2"}).json() == {"revision": 2}
    assert write(bob, 2, {"x": 1}).json() == {"revision": 3}
    assert_envelope(write(bob, 5, {"x": 2}), 409, "revision_conflict")
    assert alice.get(URL).json() == {"revision": 2, "memory": {"secret": "alice's v2"}}
    assert [r["memory"] for r in alice.get(REVISIONS).json()["results"]] == [
        {"secret": "alice's v2"},
        {"secret": "alice's"},
    ]
    assert [r["memory"] for r in bob.get(REVISIONS).json()["results"]] == [
        {"x": 1},
        {"mine": "bob's v2"},
        {"mine": "bob's"},
    ]


def test_another_product_cannot_conflict_with_or_see_the_revision(alice, bob):
    write(alice, 0, {"v": 1})
    write(alice, 1, {"v": 2})
    error = assert_envelope(write(bob, 2, {"v": 3}), 409, "revision_conflict")
    assert error["details"]["currentRevision"] == 0  # bob learns nothing about alice's revision

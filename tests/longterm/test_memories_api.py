"""Long-term memories through the API: admission, compare-and-set, operation ids, delete, isolation."""

from __future__ import annotations

import pytest

from memories.longterm.models import AdmissionRefusal, LongTermMemory, LongTermMemoryVersion
from memories.models import RunOnceRecord
from tests.longterm.support import (
    PREFERENCE_EN,
    PREFERENCE_ZH,
    create,
    memories_url,
    proposal,
    update_body,
)
from tests.support.api import assert_envelope

pytestmark = pytest.mark.django_db


def test_create_returns_the_record_with_its_namespaced_key_at_version_1(alice):
    record = create(alice)
    assert set(record) == {
        *("id", "key", "kind", "content", "evidence", "source", "version", "createdAt", "updatedAt"),
        *("expiresAt", "supersededBy", "supersededAt", "turnId", "rolledBackAt"),
    }
    assert record["expiresAt"] is None and record["supersededBy"] is None
    assert record["turnId"] is None and record["rolledBackAt"] is None  # nobody's turn: never rolled back
    assert record["id"].startswith("mem_") and record["version"] == 1 and record["kind"] == "preference"
    assert record["key"] == f"{alice.product.pk}:u1:memory:{record['id']}"
    assert record["content"] == {"language": "zh", "detail": "brief", "text": "用户喜欢简短的中文回答"}
    assert record["createdAt"].endswith("Z")
    assert alice.get(f"{memories_url()}/{record['id']}").json() == record
    assert LongTermMemoryVersion.objects.filter(memory_id=record["id"], action="created", version=1).count() == 1


def test_content_is_normalised_by_the_kind_rules(alice):
    record = create(alice, proposal(content={"language": "Chinese", "detail": "BRIEF"}))
    assert record["content"] == {"language": "zh", "detail": "brief"}


REFUSALS = [
    ("no consent", dict(consent=False), "no_consent"),
    ("evidence not in source", dict(evidence="请用简洁的中文回答"), "evidence_not_in_source"),
    ("password in source", dict(source="以后请用简短的中文回答我。我的密码是 hunter2abc"), "secret_detected"),
    (
        "api key in content",
        dict(content={"language": "zh", "text": "key sk-proj-abcdefghijklmnop1234567890"}),
        "secret_detected",
    ),
    (
        "card number in evidence",
        dict(
            source="以后请用简短的中文回答我 4111 1111 1111 1111",
            evidence="以后请用简短的中文回答我 4111 1111 1111 1111",
        ),
        "secret_detected",
    ),
    (
        "card number half in full-width digits in source",  # an outside check: stored before
        dict(source="以后请用简短的中文回答我。4111１１１１1111 1111"),
        "secret_detected",
    ),
    (
        "chit-chat",
        dict(source="今天天气不错", evidence="今天天气不错", content={"language": "zh"}),
        "not_durable_preference/not_stated",
    ),
    (
        "a guess",
        dict(source="我可能更喜欢中文吧", evidence="我可能更喜欢中文吧", content={"language": "zh"}),
        "not_durable_preference/hedge",
    ),
    (
        "a one-off request",
        dict(source="这次请用中文回答", evidence="这次请用中文回答", content={"language": "zh"}),
        "not_durable_preference/one_off",
    ),
    ("claim not stated by the evidence", dict(content={"language": "en"}), "not_durable_preference/not_stated"),
    ("content without language or detail", dict(content={"text": "hello"}), "invalid_content"),
    ("unsupported language", dict(content={"language": "klingon"}), "invalid_content"),
    ("unknown kind", dict(kind="password"), "unknown_kind"),
]


@pytest.mark.parametrize("changes,code", [r[1:] for r in REFUSALS], ids=[r[0] for r in REFUSALS])
def test_admission_refusals_are_422_with_the_reason_and_write_nothing(alice, changes, code):
    code, _, reason = code.partition("/")  # a not_durable_preference refusal names its reason
    error = assert_envelope(alice.post(memories_url(), proposal(**changes)), 422, "rejected_by_policy")
    assert error["details"]["reason"] == (reason or code)
    assert error["details"].get("code") == (code if reason else None)
    assert not LongTermMemory.objects.exists() and not RunOnceRecord.objects.exists()
    refusal = AdmissionRefusal.objects.get()
    assert refusal.code == code and refusal.user_id == "u1" and refusal.product == alice.product


@pytest.mark.parametrize(
    "changes, path",
    [
        (dict(content={"language": "zh", "text": "card 4111111111111111"}), "/content/text"),
        (dict(content={"language": "zh", "text": "key sk-proj-abcdefghijklmnop1234567890"}), "/content/text"),
        (dict(source="以后请用简短的中文回答我。我的密码是 hunter2abc"), "/source"),
        (dict(content={"language": "zh", "sk-proj-abcdefghijklmnop1234567890": "x"}), "/content"),  # never echoed
    ],
)
def test_a_secret_is_refused_with_the_pointer_of_the_string_holding_it(alice, changes, path):
    error = assert_envelope(alice.post(memories_url(), proposal(**changes)), 422, "rejected_by_policy")
    assert error["details"] == {"reason": "secret_detected", "path": path}
    assert not LongTermMemory.objects.exists()


def test_a_refused_secret_is_not_copied_into_the_refusal_log(alice):
    source = "以后请用简短的中文回答我。我的密码是 hunter2abc"
    assert_envelope(alice.post(memories_url(), proposal(source=source)), 422, "rejected_by_policy")
    refusal = AdmissionRefusal.objects.get()
    assert refusal.evidence == "" and refusal.content is None
    assert "hunter2abc" not in refusal.reason


@pytest.mark.parametrize(
    "changes",
    [
        dict(consent="true"),
        dict(consent=None),
        dict(content="zh"),
        dict(content=["zh"]),
        dict(evidence=""),
        dict(kind=7),
        dict(operationId="has space"),
        dict(extra=1),
    ],
)
def test_malformed_bodies_are_400_and_write_nothing(alice, changes):
    assert_envelope(alice.post(memories_url(), proposal(**changes)), 400, "invalid_request")
    assert not LongTermMemory.objects.exists()


def test_missing_consent_is_400(alice):
    body = proposal()
    del body["consent"]
    assert_envelope(alice.post(memories_url(), body), 400, "invalid_request")


def test_bad_user_id_is_400(alice):
    assert_envelope(alice.post("/v1/users/a:b/memories", proposal()), 400, "invalid_id")


# --- update: compare-and-set --------------------------------------------------------------------


def test_patch_with_the_current_version_bumps_it_and_replaces_the_content(alice):
    record = create(alice)
    response = alice.patch(f"{memories_url()}/{record['id']}", update_body(expected=1))
    assert response.status_code == 200, response.json()
    updated = response.json()
    assert updated["id"] == record["id"] and updated["version"] == 2
    assert updated["content"]["language"] == "en" and updated["evidence"] == PREFERENCE_EN["evidence"]
    assert alice.get(f"{memories_url()}/{record['id']}").json() == updated
    history = LongTermMemoryVersion.objects.filter(memory_id=record["id"]).order_by("version")
    assert [(h.version, h.action) for h in history] == [(1, "created"), (2, "updated")]


def test_patch_with_a_stale_version_is_409_with_the_current_version_and_changes_nothing(alice):
    record = create(alice)
    assert alice.patch(f"{memories_url()}/{record['id']}", update_body(expected=1)).status_code == 200
    stale = update_body(PREFERENCE_ZH, expected=1)
    error = assert_envelope(alice.patch(f"{memories_url()}/{record['id']}", stale), 409, "revision_conflict")
    assert error["details"] == {"currentRevision": 2, "currentVersion": 2}
    assert alice.get(f"{memories_url()}/{record['id']}").json()["content"]["language"] == "en"


def test_patch_needs_expected_version(alice):
    record = create(alice)
    body = update_body(expected=1)
    del body["expectedVersion"]
    assert_envelope(alice.patch(f"{memories_url()}/{record['id']}", body), 400, "invalid_request")
    assert_envelope(alice.patch(f"{memories_url()}/{record['id']}", update_body(expected=True)), 400)
    assert LongTermMemory.objects.get().version == 1


@pytest.mark.parametrize("missing", ["expectedVersion", "content", "evidence", "source", "consent"])
def test_openapi_marks_what_a_patch_needs_as_required(alice, missing):
    """A PATCH is validated whole; the OpenAPI said every field was optional (an outside check)."""
    schema = alice.get("/api/schema/", HTTP_ACCEPT="application/json").json()
    operation = schema["paths"]["/v1/users/{user_id}/memories/{memory_id}"]["patch"]
    ref = operation["requestBody"]["content"]["application/json"]["schema"]["$ref"].rsplit("/", 1)[-1]
    assert missing in schema["components"]["schemas"][ref]["required"]
    record = create(alice)
    body = update_body(expected=1)
    del body[missing]
    response = alice.patch(f"{memories_url()}/{record['id']}", body)
    assert_envelope(response, 400, "invalid_request")
    assert missing in response.json()["error"]["details"]["fields"]


def test_a_patch_refused_by_admission_leaves_the_record_as_it_was(alice):
    record = create(alice)
    body = update_body(expected=1, consent=False)
    error = assert_envelope(alice.patch(f"{memories_url()}/{record['id']}", body), 422, "rejected_by_policy")
    assert error["details"]["reason"] == "no_consent"
    assert alice.get(f"{memories_url()}/{record['id']}").json() == record
    assert AdmissionRefusal.objects.get().memory_id == record["id"]


# --- operation ids --------------------------------------------------------------------------------


def test_repeating_a_create_operation_returns_the_original_and_writes_nothing(alice):
    body = proposal(operationId="op-create-1")
    first = alice.post(memories_url(), body)
    second = alice.post(memories_url(), body)
    assert first.status_code == second.status_code == 201
    assert second.json() == first.json() and second.headers["Operation-Replayed"] == "true"
    assert LongTermMemory.objects.count() == 1 and LongTermMemoryVersion.objects.count() == 1


def test_the_same_operation_id_with_another_body_is_422(alice):
    alice.post(memories_url(), proposal(operationId="op-1"))
    other = proposal(PREFERENCE_EN, operationId="op-1")
    assert_envelope(alice.post(memories_url(), other), 422, "operation_id_reused")
    assert LongTermMemory.objects.count() == 1


def test_repeating_an_update_operation_returns_its_result_without_a_second_bump(alice):
    record = create(alice)
    body = update_body(expected=1, operationId="op-update-1")
    first = alice.patch(f"{memories_url()}/{record['id']}", body)
    again = alice.patch(f"{memories_url()}/{record['id']}", body)
    assert first.status_code == again.status_code == 200
    assert again.json() == first.json() and again.json()["version"] == 2
    assert LongTermMemory.objects.get().version == 2
    assert LongTermMemoryVersion.objects.filter(action="updated").count() == 1


def test_operation_ids_are_per_product(alice, bob):
    body = proposal(operationId="shared-op")
    mine, theirs = alice.post(memories_url(), body).json(), bob.post(memories_url(), body).json()
    assert mine["id"] != theirs["id"] and LongTermMemory.objects.count() == 2


# --- delete ---------------------------------------------------------------------------------------


def test_delete_removes_the_record_and_keeps_its_history(alice):
    record = create(alice)
    assert alice.delete(f"{memories_url()}/{record['id']}").status_code == 204
    assert_envelope(alice.get(f"{memories_url()}/{record['id']}"), 404, "not_found")
    assert_envelope(alice.delete(f"{memories_url()}/{record['id']}"), 404, "not_found")
    assert LongTermMemoryVersion.objects.filter(memory_id=record["id"], action="deleted").count() == 1


def test_delete_with_a_stale_expected_version_is_409(alice):
    record = create(alice)
    error = assert_envelope(alice.delete(f"{memories_url()}/{record['id']}?expectedVersion=2"), 409)
    assert error["details"] == {"currentRevision": 1, "currentVersion": 1}
    for bad in ("x", "³", "١", "1" * 16):  # a superscript and an Arabic-Indic digit are digits to isdigit()
        assert_envelope(alice.delete(f"{memories_url()}/{record['id']}?expectedVersion={bad}"), 400)
    assert alice.delete(f"{memories_url()}/{record['id']}?expectedVersion=1").status_code == 204


# --- listing and isolation ------------------------------------------------------------------------


def test_list_is_newest_first_with_cursor_pagination_and_a_kind_filter(alice, note_kind):
    ids = [create(alice)["id"] for _ in range(3)]
    note = create(alice, {"kind": "note", "content": {"text": "x"}, "evidence": "x", "source": "x", "consent": True})
    first = alice.get(f"{memories_url()}?limit=2").json()
    assert [r["id"] for r in first["results"]] == [note["id"], ids[2]]
    rest = alice.get(f"{memories_url()}?limit=2&cursor={first['next']}").json()
    assert [r["id"] for r in rest["results"]] == [ids[1], ids[0]] and rest["next"] is None
    only = alice.get(f"{memories_url()}?kind=preference").json()["results"]
    assert [r["id"] for r in only] == ids[::-1]


def test_another_user_of_the_product_cannot_read_update_or_delete(alice):
    record = create(alice)
    url = f"{memories_url('u2')}/{record['id']}"
    assert_envelope(alice.get(url), 404, "not_found")
    assert_envelope(alice.patch(url, update_body(expected=1)), 404, "not_found")
    assert_envelope(alice.delete(url), 404, "not_found")
    assert alice.get(memories_url("u2")).json() == {"results": [], "next": None}
    assert LongTermMemory.objects.get().version == 1


def test_another_product_gets_404_for_every_memory_endpoint(alice, bob):
    record = create(alice)
    url = f"{memories_url()}/{record['id']}"
    assert_envelope(bob.get(url), 404, "not_found")
    assert_envelope(bob.patch(url, update_body(expected=1)), 404, "not_found")
    assert_envelope(bob.delete(url), 404, "not_found")
    assert bob.get(memories_url()).json() == {"results": [], "next": None}
    assert bob.post(f"{memories_url()}/search", {"query": "中文", "mode": "keyword"}).json()["results"] == []
    assert alice.get(url).json() == record


def test_unauthenticated_requests_are_401(client):
    assert client.get(memories_url()).status_code == 401

"""An import restores only the user-data kinds, each value checked as the API checks it (docs/security.md).

The file is the tenant's: it may name any model of the app registry and any field value. Before the allow-list,
a product key imported an `auth.User` superuser, outbox messages that ran chosen Celery tasks, admin log rows,
products, embedding indexes and run-once replays, and one long-term memory on a fresh install made every
product's long-term writes answer 503.
"""

from __future__ import annotations

import gzip
import json
import tracemalloc

import pytest
from django.apps import apps
from django.contrib.auth import get_user_model
from django.db import models

from memories.hinos.models import FailedHinosCommit
from memories.lifecycle.services.import_rules import IMPORTABLE_KINDS, NEVER_IMPORTED_OWNER_KINDS
from memories.lifecycle.services.walk import owner_models
from memories.longterm.models import AdmissionRefusal, EmbeddingIndex, LongTermMemory
from memoryhub.outbox.models import OutboxMessage
from tests.compact.support import eager_celery
from tests.longterm.support import PREFERENCE_EN, PREFERENCE_ZH, memories_url
from tests.support.api import assert_envelope

from .support import _sample

pytestmark = pytest.mark.django_db
USER = "imp-user"
HEADER = {"format": "memoryhub-export", "formatVersion": 1, "product": "prd_x", "user": "u", "counts": {}}


@pytest.fixture(autouse=True)
def _eager(monkeypatch, settings, tmp_path) -> None:
    eager_celery(monkeypatch)
    settings.EXPORT_DIR = str(tmp_path / "exports")


def export_file(records: list[dict], header: dict = HEADER) -> bytes:
    lines = [json.dumps(header)] + [json.dumps(r, default=str).replace('"__1e400__"', "1e400") for r in records]
    return gzip.compress(("\n".join(lines) + "\n").encode())


def record(kind: str, data: dict, refs: dict | None = None, record_id: object = 1) -> dict:
    return {"kind": kind, "id": record_id, "refs": refs or {}, "data": data}


def run_import(api, capture, content: bytes, user: str = USER) -> dict:
    with capture(execute=True):
        started = api.client.post(f"/v1/users/{user}/imports", content, content_type="application/gzip")
    assert started.status_code == 202, started.content
    job = api.get(f"/v1/imports/{started.json()['importId']}").json()
    assert job["status"] == "done", job
    return job["report"]


def sample_record(model: type[models.Model]) -> dict:
    data = {}
    for field in model._meta.concrete_fields:
        if field.primary_key or field.is_relation:
            continue
        value = _sample(field)
        data[field.name] = value.isoformat() if hasattr(value, "isoformat") else value
    data.update({"username": "mallory", "is_superuser": True, "is_staff": True, "is_active": True})
    return record(model._meta.label, {k: v for k, v in data.items() if k in {f.name for f in model._meta.fields}})


def counts() -> dict[str, int]:
    return {m._meta.label: m._base_manager.count() for m in apps.get_models() if not m._meta.proxy}


def test_one_record_of_every_model_lands_only_for_the_allow_list(bob, django_capture_on_commit_callbacks) -> None:
    every = [m for m in apps.get_models() if not m._meta.proxy and m._meta.managed]
    before = counts()
    report = run_import(bob, django_capture_on_commit_callbacks, export_file([sample_record(m) for m in every]))
    after = counts()
    refused = sorted(m._meta.label for m in every if m._meta.label not in IMPORTABLE_KINDS)
    assert report["unknownKinds"] == refused
    # The import's own rows, never the file's records: its job and outbox message, and the embedding work the
    # restored history entry schedules (its outbox message; the service's own index when none existed yet).
    own_rows = {"lifecycle.Import": 1, "outbox.OutboxMessage": 2, "longterm.EmbeddingIndex": 1}
    for label in refused:
        assert after[label] == before[label] + own_rows.get(label, 0), label
    for label in ("auth.User", "admin.LogEntry", "memories.Product", "memories.ApiKey", "longterm.EmbeddingIndex"):
        assert label in refused
    assert not get_user_model().objects.filter(username="mallory").exists()
    assert not OutboxMessage.objects.exclude(task__in=["lifecycle.import", "history.embed_entries"]).exists()
    landed = set(report["imported"]) | set(report["skipped"])
    assert landed <= IMPORTABLE_KINDS
    assert "memories.MemoryDocument" in report["imported"]  # the allow-list does restore data


def test_every_owner_model_is_either_importable_or_never_imported() -> None:
    """A model added later holding a user's data must be decided on (and checked), not restored by default."""
    owners = {m._meta.label for m in owner_models()}
    assert owners <= IMPORTABLE_KINDS | NEVER_IMPORTED_OWNER_KINDS
    assert not IMPORTABLE_KINDS & NEVER_IMPORTED_OWNER_KINDS


def test_an_imported_long_term_memory_on_a_fresh_install_keeps_every_product_writing(
    alice, bob, django_capture_on_commit_callbacks
) -> None:
    assert not EmbeddingIndex.objects.exists()  # a fresh install
    # A row any tenant can create (here: inserted without an index, as the old import did) decides nothing.
    LongTermMemory.objects.create(product=bob.product, user_id="x", kind="preference", content={}, version=1)
    assert alice.post(memories_url("u1"), PREFERENCE_ZH).status_code == 201
    search = {"query": "中文回答", "mode": "semantic"}
    assert alice.post(memories_url("u1") + "/search", search).status_code == 200


def test_a_long_term_memory_is_checked_and_indexed_again(alice, bob, django_capture_on_commit_callbacks) -> None:
    base = {
        "kind": "preference",
        "content": PREFERENCE_EN["content"],
        "evidence": PREFERENCE_EN["evidence"],
        "source": PREFERENCE_EN["source"],
        "version": 1,
        "memory_id": "ltm_imported_ok",
        "search_text": " forged ",
        "embedding": [0.0] * 3,
    }
    secret = {**base, "memory_id": "ltm_2", "source": base["source"] + " My password is hunter2hunter2!"}
    unquoted = {**base, "memory_id": "ltm_3", "evidence": "words the user never wrote"}
    unknown = {**base, "memory_id": "ltm_4", "kind": "no_such_kind"}
    bad_content = {**base, "memory_id": "ltm_5", "content": {"language": 7}}
    file = export_file(
        [
            record("longterm.LongTermMemory", d, record_id=n)
            for n, d in enumerate([base, secret, unquoted, unknown, bad_content])
        ]
    )
    report = run_import(bob, django_capture_on_commit_callbacks, file)
    assert report["imported"] == {"longterm.LongTermMemory": 1}, report
    assert report["skipped"] == {"longterm.LongTermMemory": 4}
    reasons = " | ".join(report["reasons"])
    assert "secret" in reasons and "hunter2" not in reasons
    assert "verbatim" in reasons and "no_such_kind" in reasons
    row = LongTermMemory.objects.get(product=bob.product, memory_id="ltm_imported_ok")
    assert row.embedding_index is not None and row.embedding_index.status == "active"
    assert "forged" not in row.search_text and "english" in row.search_text.lower()
    found = bob.post(memories_url(USER) + "/search", {"query": "answer in English", "mode": "semantic"}).json()
    assert [hit["id"] for hit in found["results"]] == ["ltm_imported_ok"]


def test_values_the_api_refuses_are_skipped_with_a_reason(bob, django_capture_on_commit_callbacks) -> None:
    doc = {"conversation_id": "c1", "revision": 1, "memory": {"ok": True}}
    big = {**doc, "conversation_id": "c2", "memory": {"text": "x" * 70_000}}
    deep = {**doc, "conversation_id": "c3", "memory": {"a": json.loads("[" * 40 + "]" * 40)}}
    bad_id = {**doc, "conversation_id": "not an id!"}
    nul = {**doc, "conversation_id": "c4", "memory": {"t": "a\x00b"}}
    infinite = {**doc, "conversation_id": "c6", "memory": {"n": "__1e400__"}}  # a double's overflow
    zero = {**doc, "conversation_id": "c5", "revision": 0}
    message = {"conversation_id": "c1", "round": 1, "role": "nobody", "content": "hi"}
    file = export_file(
        [
            record("memories.MemoryDocument", d, record_id=n)
            for n, d in enumerate([doc, big, deep, bad_id, nul, zero, infinite])
        ]
        + [record("memories.Message", message)]
    )
    report = run_import(bob, django_capture_on_commit_callbacks, file)
    assert report["imported"] == {"memories.MemoryDocument": 1}, report
    assert report["skipped"] == {"memories.MemoryDocument": 6, "memories.Message": 1}
    reasons = "\n".join(report["reasons"])
    for expected in (
        "65536",
        "nested",
        "conversation_id must be",
        "memory/t: a string contains U+0000",
        "at least 1",
        "role",
    ):
        assert expected in reasons, (expected, reasons)
    assert "INSERT" not in reasons and "Error" not in reasons
    assert bob.get(f"/v1/users/{USER}/conversations/c1/memory").json() == {"revision": 1, "memory": {"ok": True}}
    assert bob.get(f"/v1/users/{USER}/conversations/c2/memory").json()["revision"] == 0


def test_a_refusal_by_the_database_is_reported_by_its_rule(bob, django_capture_on_commit_callbacks) -> None:
    """A turn without its conversation breaks a required value, not a unique key; its events go with it."""
    data = {"conversation_id": "c1", "round": 1, "status": "prepared"}
    turn = record("memories.Turn", data, {"conversation_row": None})
    event = record("memories.Event", {"conversation_id": "c1", "type": "turn.prepared"}, {"turn": 1})
    report = run_import(bob, django_capture_on_commit_callbacks, export_file([turn, event]))
    assert report["imported"] == {} and report["skipped"] == {"memories.Turn": 1, "memories.Event": 1}, report
    assert "a required value is missing" in report["reasons"][0] and "unique" not in report["reasons"][0]
    assert "of the file, which was not restored" in report["reasons"][1]


@pytest.mark.parametrize("line", [[1, 2], "str", {"kind": 5}, {"no": "kind"}])
def test_a_line_that_is_not_a_record_makes_the_file_invalid(bob, line) -> None:
    content = export_file([record("memories.MemoryDocument", {"conversation_id": "c1", "revision": 1}), line])
    refused = bob.client.post(f"/v1/users/{USER}/imports", content, content_type="application/gzip")
    assert assert_envelope(refused, 400, "invalid_export")["message"] == (
        'line 3 is not a record (an object with a string "kind")'
    )


def test_a_table_is_checked_as_the_table_api_checks_it(bob, django_capture_on_commit_callbacks) -> None:
    table = {"conversation_id": "c1", "name": "People", "columns": ["name", "role"], "rows": [["Ann", "cook"]]}
    wide = {**table, "name": "Wide", "columns": [f"c{n}" for n in range(40)], "rows": []}
    ragged = {**table, "name": "Ragged", "rows": [["only one cell"]]}
    big_cell = {**table, "name": "Cells", "rows": [["x" * 2001, "y"]]}
    tables = [table, wide, ragged, big_cell]
    file = export_file([record("tables.MemoryTable", {**t, "position": n}, record_id=n) for n, t in enumerate(tables)])
    report = run_import(bob, django_capture_on_commit_callbacks, file)
    assert report["imported"] == {"tables.MemoryTable": 1}, report
    assert report["skipped"] == {"tables.MemoryTable": 3}
    reasons = "\n".join(report["reasons"])
    assert "at most 32" in reasons and "exactly 2 cells" in reasons and "2000 characters" in reasons, reasons


def test_a_reference_to_another_users_row_is_not_kept(bob, django_capture_on_commit_callbacks) -> None:
    from tests.compact.support import create_scenario, play

    create_scenario(bob)
    play(bob, "hello", "hi there", conv="/v1/users/victim/conversations/c1")
    from memories.models import Turn

    victim_turn = Turn.objects.get(product=bob.product, user_id="victim")
    message = {"conversation_id": "c1", "round": 1, "role": "user", "content": "mine"}
    report = run_import(
        bob,
        django_capture_on_commit_callbacks,
        export_file([record("memories.Message", message, {"turn": victim_turn.pk})]),
    )
    assert report["skipped"] == {"memories.Message": 1} and "does not have" in report["reasons"][0], report
    from memories.models import Message

    assert not Message.objects.filter(product=bob.product, user_id=USER).exists()
    assert Message.objects.filter(turn=victim_turn).count() == 2  # the victim's own two, nothing added


BLANK_LINES = b" " * 900_000 + b"\n"
LIMITS = {"IMPORT_MAX_BYTES": 10_000_000, "IMPORT_MAX_LINE_BYTES": 1_000_000, "IMPORT_MAX_RECORDS": 20}
PAST_LIMITS = {
    # 54 MB decompressed from a file of about 60 KB: refused once 10 MB have been read.
    "bytes": ({"IMPORT_MAX_RECORDS": 1000}, export_file([]) + gzip.compress(BLANK_LINES * 60)),
    "line": ({}, export_file([record("memories.Event", {"type": "x" * 3_000_000})])),
    "records": ({}, export_file([record("memories.Event", {"type": "x"}, record_id=n) for n in range(30)])),
    "newlines": ({}, export_file([]) + gzip.compress(b"\n" * 5_000_000)),
}


@pytest.mark.parametrize("case", sorted(PAST_LIMITS))
def test_a_file_past_a_limit_is_413_and_read_as_a_stream(bob, settings, case) -> None:
    overrides, content = PAST_LIMITS[case]
    for name, value in {**LIMITS, **overrides}.items():
        setattr(settings, name, value)
    tracemalloc.start()
    try:
        answer = bob.client.post(f"/v1/users/{USER}/imports", content, content_type="application/gzip")
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert_envelope(answer, 413, "import_too_large")
    assert answer.json()["error"]["details"]["maxBytes"] == 10_000_000
    assert peak < 40_000_000  # never the whole decompressed file (54 MB for "bytes")
    from memories.lifecycle.models import Import

    assert not Import.objects.exists()


def test_an_upload_past_its_limit_is_413(bob, settings) -> None:
    settings.IMPORT_MAX_UPLOAD_BYTES = 2048
    content = export_file([record("memories.Event", {"type": f"t{n}"}, record_id=n) for n in range(400)])
    assert len(content) > 2048
    answer = bob.client.post(f"/v1/users/{USER}/imports", content, content_type="application/gzip")
    assert_envelope(answer, 413, "import_too_large")


def test_task_json_past_the_apis_bounds_is_skipped(bob, django_capture_on_commit_callbacks) -> None:
    """A checkpoint's data nested 41 levels was restored and served; the API refuses past 32."""
    task = record("longterm.Task", {"task_id": "t1", "input": {"q": 1}}, record_id=1)
    shallow = record("longterm.TaskCheckpoint", {"stage": "s1", "data": {"ok": True}}, {"task": 1}, record_id=1)
    nested = json.loads("[" * 40 + "]" * 40)
    deep = record("longterm.TaskCheckpoint", {"stage": "s2", "data": {"a": nested}}, {"task": 1}, record_id=2)
    report = run_import(bob, django_capture_on_commit_callbacks, export_file([task, shallow, deep]))
    assert report["skipped"] == {"longterm.TaskCheckpoint": 1}, report
    assert "nested deeper than 32" in "\n".join(report["reasons"])
    stages = bob.get(f"/v1/users/{USER}/tasks/t1").json()["stages"]
    assert [s["stage"] for s in stages] == ["s1"], stages


def test_a_file_cannot_forge_operator_activity(bob, django_capture_on_commit_callbacks) -> None:
    """An outside check imported a failed Hinos commit (listed in the operators' queue), an operator's re-run and
    a memory revision by an operator: operations are the exporting installation's, operators this one's."""
    written = bob.put(f"/v1/users/{USER}/conversations/own/memory", {"expectedRevision": 0, "memory": {}})
    assert written.status_code == 200, written.json()
    (own,) = bob.get(f"/v1/users/{USER}/conversations/own/memory/revisions").json()["results"]
    at = {"conversation_id": "forged", "created_at": "2026-12-07T12:19:58Z", "user_id": "x"}
    failed = {"service": "hinos", "claim_id": "hc_FORGED", "code": "upstream_failed", "round": 1}
    events = [
        ("memory.write_failed", failed),
        ("memory.job_rerun", {"work": "tables", "rerun": 1, "actor": "operator:root"}),
        ("memory.write_resent", {"claim_id": "hc_FORGED", "actor": "operator:root"}),
        ("turn.completed", {"memoryWrite": {"status": "done"}}),
    ]
    records = [
        record("memories.Event", {**at, "type": kind, "details": details}, {"turn": None}, n)
        for n, (kind, details) in enumerate(events)
    ]
    revision = {**at, "memory": {"x": 1}, "actor": "root"}
    records += [
        record("memories.MemoryRevision", {**revision, "revision": 1, "actor_type": "operator"}, record_id=10),
        record("memories.MemoryRevision", {**revision, "revision": 2, "actor_type": "root"}, record_id=11),
    ]
    refusal = {"kind": "preference", "code": "no_consent", "reason": "r", "actor": "operator:root", "user_id": "x"}
    records.append(record("longterm.AdmissionRefusal", {**refusal, "created_at": at["created_at"]}, record_id=20))
    report = run_import(bob, django_capture_on_commit_callbacks, export_file(records))
    assert report["imported"] == {"memories.Event": 1, "memories.MemoryRevision": 1, "longterm.AdmissionRefusal": 1}
    assert report["skipped"] == {"memories.Event": 3, "memories.MemoryRevision": 1}, report
    conversation = f"/v1/users/{USER}/conversations/forged"
    assert [e["type"] for e in bob.get(f"{conversation}/events").json()["results"]] == ["turn.completed"]
    (restored,) = bob.get(f"{conversation}/memory/revisions").json()["results"]
    assert (restored["revision"], restored["actor"]) == (1, own["actor"])  # the importing key, not an operator
    assert not FailedHinosCommit.objects.exists()  # the operators' queue stays empty
    actor = f"{own['actor']['type']}:{own['actor']['id']}"
    assert list(AdmissionRefusal.objects.values_list("actor", flat=True)) == [actor]
    again = run_import(bob, django_capture_on_commit_callbacks, export_file(records))
    assert "longterm.AdmissionRefusal" not in again["imported"]  # the same refusal, as restored, is there already

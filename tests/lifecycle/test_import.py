"""Import: export → erase → import → export gives the same records and times (ignoring ids)."""

from __future__ import annotations

import gzip
import json

import pytest
from django.apps import apps
from django.db import models

from memories.lifecycle.services.export import exported_rows, records
from memories.lifecycle.services.import_rules import NEVER_IMPORTED_OWNER_KINDS
from memories.longterm.models import LongTermMemory
from tables.models import MemoryTable, MemoryTableVersion
from tests.compact.support import create_scenario, eager_celery, play
from tests.longterm.support import PREFERENCE_ZH, memories_url
from tests.support.api import assert_envelope

from .support import Filler

pytestmark = pytest.mark.django_db
USER = "rt-user-9k"


@pytest.fixture(autouse=True)
def _eager(monkeypatch, settings, tmp_path) -> None:
    eager_celery(monkeypatch)
    settings.EXPORT_DIR = str(tmp_path / "exports")


def _data(api) -> None:
    create_scenario(api)
    conv = f"/v1/users/{USER}/conversations/c1"
    for n in range(3):
        assert api.put(f"{conv}/memory", {"expectedRevision": n, "memory": {"n": n}}).status_code == 200
    for n in range(3):
        play(api, f"message {n}", f"reply {n}", conv=conv)
    made = Filler(api.product, USER, "cfill").fill()
    # The filler's long-term memory has a made-up kind, which an import refuses like the API: a real one instead.
    made[LongTermMemory].delete()
    # Its table has made-up columns too ({}): a table the table API would accept instead.
    MemoryTable.objects.filter(pk=made[MemoryTable].pk).update(columns=["name"], rows=[["Ann"]])
    MemoryTableVersion.objects.filter(pk=made[MemoryTableVersion].pk).update(rows=[["Ann"]])
    assert api.post(memories_url(USER), PREFERENCE_ZH).status_code == 201


def comparable(product, user_id: str, *, with_times: bool = False) -> list[str]:
    """Every importable record of the user without ids, foreign-key values and (unless asked) times, sorted."""
    out = []
    for record in records(exported_rows(product, user_id)):
        if record["kind"] in NEVER_IMPORTED_OWNER_KINDS:
            continue
        model = apps.get_model(record["kind"])
        times = {f.name for f in model._meta.concrete_fields if isinstance(f, models.DateTimeField)}
        times = set() if with_times else times
        # A history entry's search text and vector are derived again on import (never taken from the file).
        derived = {"embedding", "search_text"} if record["kind"] == "history.HistoryEntry" else set()
        data = {k: v for k, v in record["data"].items() if k not in times | derived}
        refs = sorted(set(record["refs"]) - ({"embedding_index"} if derived else set()))
        out.append(f"{record['kind']} {refs} {json.dumps(data, sort_keys=True)}")
    return sorted(out)


def _export(api, capture) -> bytes:
    with capture(execute=True):
        export_id = api.post(f"/v1/users/{USER}/exports").json()["exportId"]
    return b"".join(api.get(f"/v1/exports/{export_id}/download").streaming_content)


def _import(api, capture, content: bytes, user: str = USER) -> dict:
    with capture(execute=True):
        started = api.client.post(f"/v1/users/{user}/imports", content, content_type="application/gzip")
    assert started.status_code == 202, started.json()
    job = api.get(f"/v1/imports/{started.json()['importId']}").json()
    assert job["status"] == "done", job
    return {**job["report"], "importId": job["importId"]}


def test_round_trip_export_erase_import_export(alice, bob, django_capture_on_commit_callbacks) -> None:
    capture = django_capture_on_commit_callbacks
    _data(alice)
    before, times_before = comparable(alice.product, USER), comparable(alice.product, USER, with_times=True)
    content = _export(alice, capture)
    with capture(execute=True):
        alice.delete(f"/v1/users/{USER}")
    assert comparable(alice.product, USER) == []
    report = _import(alice, capture, content)
    never = sorted(
        NEVER_IMPORTED_OWNER_KINDS & set(json.loads(gzip.decompress(content).decode().splitlines()[0])["counts"])
    )
    assert report["skipped"] == {} and report["unknownKinds"] == never, report
    assert sum(report["imported"].values()) == len(before)
    assert comparable(alice.product, USER) == before
    assert comparable(alice.product, USER, with_times=True) == times_before  # created_at &c. as exported
    again = gzip.decompress(_export(alice, capture)).decode().splitlines()
    counts_before = json.loads(gzip.decompress(content).decode().splitlines()[0])["counts"]
    importable_before = {k: n for k, n in counts_before.items() if k not in NEVER_IMPORTED_OWNER_KINDS}
    assert json.loads(again[0])["counts"] == importable_before
    # Tenancy: another product's import id is not found.
    assert_envelope(bob.get(f"/v1/imports/{report['importId']}"), 404, "not_found")


def test_a_second_import_of_the_same_file_adds_nothing(alice, django_capture_on_commit_callbacks) -> None:
    """What the target has already is skipped, and so is everything that hangs off it: no event, history entry or
    orphan row twice (docs/data-lifecycle.md, "Import")."""
    capture = django_capture_on_commit_callbacks
    _data(alice)
    content = _export(alice, capture)
    with capture(execute=True):
        alice.delete(f"/v1/users/{USER}")
    _import(alice, capture, content)
    after_first = comparable(alice.product, USER)
    second = _import(alice, capture, content)
    assert comparable(alice.product, USER) == after_first
    assert second["imported"] == {}, second
    known = ("(a unique key)", "not restored", "has this record already")
    assert all(any(reason in r for reason in known) for r in second["reasons"]), second["reasons"]
    found = alice.post(f"/v1/users/{USER}/history/search", {"query": "message 1", "mode": "keyword"}).json()
    assert [hit["content"] for hit in found["results"]].count("message 1") == 1


def test_import_into_another_product_remaps_and_reports(alice, bob, django_capture_on_commit_callbacks) -> None:
    capture = django_capture_on_commit_callbacks
    _data(alice)
    content = _export(alice, capture)
    create_scenario(bob)
    report = _import(bob, capture, content, user="moved-user")
    assert report["imported"]["memories.MemoryRevision"] >= 3
    assert report["imported"]["memories.Turn"] >= 3  # the scenario found by its id ("chat") in bob's product
    messages = bob.get("/v1/users/moved-user/conversations/c1/messages").json()["results"]
    assert {m["content"] for m in messages} >= {"message 0", "reply 2"}
    assert bob.get("/v1/users/moved-user/conversations/c1/memory").json()["memory"] == {"n": 2}


def test_a_body_that_is_not_an_export_is_400_and_foreign_ids_404(alice, bob) -> None:
    bad = alice.client.post(f"/v1/users/{USER}/imports", b"not gzip", content_type="application/gzip")
    assert_envelope(bad, 400, "invalid_export")
    assert_envelope(bob.get("/v1/imports/imp_missing"), 404, "not_found")


def test_an_erasure_removes_a_pending_import_and_its_file(alice, django_capture_on_commit_callbacks) -> None:
    from memories.lifecycle.models import Import
    from memories.lifecycle.services import files
    from memories.lifecycle.services.imports import import_start

    content = _export(alice, django_capture_on_commit_callbacks)
    job = import_start(product=alice.product, user_id=USER, content=content, requested_by="t", schedule=False)
    assert files.path_of(job.file_name).exists()
    with django_capture_on_commit_callbacks(execute=True):
        erasure_id = alice.delete(f"/v1/users/{USER}").json()["erasureId"]
    counts = alice.get(f"/v1/erasures/{erasure_id}").json()["counts"]
    assert counts["importFiles"] == 1 and counts["lifecycle.Import"] == 1
    assert not files.path_of(job.file_name).exists() and not Import.objects.exists()


def test_a_storys_anchor_is_remapped_so_regenerating_the_reply_still_rolls_it_back(
    alice, django_capture_on_commit_callbacks
) -> None:
    """docs/data-lifecycle.md: references are re-mapped — the story's anchor is a message id in a plain column."""
    from tests.story.support import settlement, story_scenario
    from tests.story.support import turn as story_turn

    capture = django_capture_on_commit_callbacks
    story_scenario(alice)
    conv = f"/v1/users/{USER}/conversations/c1"
    story_turn(alice, "I knock.", "The door opens.", conv=conv)
    last = story_turn(alice, "I wait.", "A guard comes.", conv=conv)
    body = settlement(0, last["assistantMessageId"], setFacts={"gate": "open"}, appendEvents=[{"text": "seen"}])
    assert alice.post(f"{conv}/story/settlements", body).status_code == 201
    content = _export(alice, capture)
    with capture(execute=True):
        alice.delete(f"/v1/users/{USER}")
    report = _import(alice, capture, content)
    assert report["skipped"] == {}, report
    messages = alice.get(f"{conv}/messages", data={"limit": 200}).json()["results"]
    reply = [m for m in messages if m["role"] == "assistant"][-1]
    story = alice.get(f"{conv}/story").json()
    assert story["anchorMessageId"] == reply["id"] and story["events"][0]["messageId"] == reply["id"]
    again = alice.post(
        f"{conv}/turns", {"scenarioId": "saga", "userMessage": "I wait.", "replacesTurnId": reply["turnId"]}
    )
    assert "gate" not in again.json()["prompt"]
    completed = alice.post(f"{conv}/turns/{again.json()['turnId']}/complete", {"assistantMessage": "Nobody."})
    assert completed.status_code == 200
    assert alice.get(f"{conv}/story").json()["worldFacts"] == {}


def test_a_story_anchored_on_a_message_the_file_does_not_hold_is_refused(alice, django_capture_on_commit_callbacks):
    capture = django_capture_on_commit_callbacks
    from tests.story.support import settlement, story_scenario
    from tests.story.support import turn as story_turn

    story_scenario(alice)
    conv = f"/v1/users/{USER}/conversations/c1"
    reply = story_turn(alice, conv=conv)["assistantMessageId"]
    assert alice.post(f"{conv}/story/settlements", settlement(0, reply, setFacts={"a": "b"})).status_code == 201
    lines = gzip.decompress(_export(alice, capture)).decode().splitlines()
    forged = []
    for line in lines:
        record = json.loads(line)
        if record.get("kind", "").startswith("story."):
            record["data"]["anchor_message_id"] = 999_999_999
        forged.append(json.dumps(record))
    with capture(execute=True):
        alice.delete(f"/v1/users/{USER}")
    report = _import(alice, capture, gzip.compress("\n".join(forged).encode()))
    assert report["skipped"].get("story.StorySnapshot") == 1 and "anchor message" in " ".join(report["reasons"])
    assert alice.get(f"{conv}/story").json()["version"] == 0

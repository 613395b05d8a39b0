"""Export: a gzip JSON Lines file of every record of the user (every kind, found by the registry walk)."""

from __future__ import annotations

import gzip
import json
from datetime import timedelta
from io import StringIO

import pytest
from django.core.management import call_command
from django.utils import timezone

from memories.lifecycle.models import Export
from memories.lifecycle.services import files
from memories.lifecycle.services.export import delete_expired_exports
from memories.lifecycle.services.walk import owner_models
from tests.compact.support import create_scenario, eager_celery, play
from tests.support.api import assert_envelope

from .support import Filler

pytestmark = pytest.mark.django_db
USER = "ex-user-3d"


@pytest.fixture(autouse=True)
def _eager(monkeypatch, settings, tmp_path) -> None:
    eager_celery(monkeypatch)
    settings.EXPORT_DIR = str(tmp_path / "exports")


def _data(api) -> None:
    create_scenario(api)
    conv = f"/v1/users/{USER}/conversations/c1"
    assert api.put(f"{conv}/memory", {"expectedRevision": 0, "memory": {"pet": "cat"}}).status_code == 200
    assert api.put(f"{conv}/memory", {"expectedRevision": 1, "memory": {"pet": "dog"}}).status_code == 200
    play(api, "I keep a cat", "noted", conv=conv)
    assert api.post(f"{conv}/tool-tokens", {}).status_code == 201
    Filler(api.product, USER, "cfill").fill()


def read(content: bytes) -> tuple[dict, list[dict]]:
    lines = gzip.decompress(content).decode().splitlines()
    return json.loads(lines[0]), [json.loads(line) for line in lines[1:]]


def test_export_over_http_covers_every_kind(alice, bob, django_capture_on_commit_callbacks) -> None:
    _data(alice)
    with django_capture_on_commit_callbacks(execute=True):
        started = alice.post(f"/v1/users/{USER}/exports")
    assert started.status_code == 202 and set(started.json()) == {"exportId", "status"}
    export_id = started.json()["exportId"]
    status = alice.get(f"/v1/exports/{export_id}").json()
    assert status["status"] == "done" and status["downloadUrl"].endswith(f"/v1/exports/{export_id}/download")
    download = alice.get(f"/v1/exports/{export_id}/download")
    assert download.status_code == 200 and download["Content-Type"] == "application/gzip"
    header, records = read(b"".join(download.streaming_content))
    assert header["format"] == "memoryhub-export" and header["formatVersion"] == 1
    assert header["product"] == alice.product.pk and header["user"] == USER and header["counts"] == status["counts"]
    kinds = {r["kind"] for r in records}
    # SKIPPED_APPS: the export jobs themselves, and the webhook messages sent about the user; SKIPPED_MODELS:
    # tool tokens (credentials naming a key, erased with the user but never exported)
    skipped = {"lifecycle", "webhooks"}
    expected = {m._meta.label for m in owner_models() if m._meta.app_label not in skipped}
    assert expected - kinds == {"memories.IssuedToolToken"}, expected - kinds
    assert {"longterm.TaskCheckpoint", "memories.MemoryRevision", "memories.Message"} <= kinds
    assert sum(header["counts"].values()) == len(records)
    revisions = [r for r in records if r["kind"] == "memories.MemoryRevision" and r["data"]["conversation_id"] == "c1"]
    assert len(revisions) == 2
    turn = next(r for r in records if r["kind"] == "memories.Turn" and r["data"]["conversation_id"] == "c1")
    assert "I keep a cat" in turn["data"]["prompt"] + turn["data"]["user_message"]
    assert all(r["data"].get("user_id", USER) == USER for r in records)
    # Tenancy: another product's export id is not found.
    assert_envelope(bob.get(f"/v1/exports/{export_id}"), 404, "not_found")
    assert_envelope(bob.get(f"/v1/exports/{export_id}/download"), 404, "not_found")


def test_expired_exports_are_deleted_with_their_file(alice, django_capture_on_commit_callbacks) -> None:
    with django_capture_on_commit_callbacks(execute=True):
        export_id = alice.post(f"/v1/users/{USER}/exports").json()["exportId"]
    export = Export.objects.get()
    assert files.path_of(export.file_name).exists()
    assert export.expires_at - export.finished_at == timedelta(hours=24)
    assert delete_expired_exports(now=timezone.now()) == 0
    assert delete_expired_exports(now=timezone.now() + timedelta(hours=25)) == 1
    assert not files.path_of(export.file_name).exists() and not Export.objects.exists()
    assert_envelope(alice.get(f"/v1/exports/{export_id}"), 404, "not_found")


def test_the_command_writes_the_same_records(alice, tmp_path) -> None:
    _data(alice)
    output = tmp_path / "out.jsonl.gz"
    err = StringIO()
    call_command("export_user", product=alice.product.pk, user=USER, output=str(output), stdout=StringIO(), stderr=err)
    header, records = read(output.read_bytes())
    assert header["user"] == USER and sum(header["counts"].values()) == len(records) > 10
    assert "record" in err.getvalue()  # the tqdm bar

"""Erasure: every row of the user in every app goes (found by walking the app registry), a receipt stays."""

from __future__ import annotations

import pytest
from django.core.cache import cache

from memories.lifecycle.models import Erasure
from memories.lifecycle.services.erasure import erasure_run, erasure_start, subject_hash
from memories.lifecycle.services.walk import owner_models
from memories.models import Turn
from memoryhub.outbox.models import OutboxMessage
from memoryhub.working_set import Scope
from tests.compact.support import create_scenario, eager_celery, play
from tests.support.api import assert_envelope

from .support import Filler, reachable, rows_mentioning, working_set_keys

pytestmark = pytest.mark.django_db


@pytest.fixture(autouse=True)
def _eager(monkeypatch) -> None:
    eager_celery(monkeypatch)  # jobs run in-process at the commit (the real worker: test_erasure_worker.py)


GONE = "erase-me-7f3a"
KEPT = "keep-me-1b2c"


def _fill(api, user_id: str) -> Filler:
    filler = Filler(api.product, user_id, "cfill")
    filler.fill()
    assert not filler.failed, filler.failed
    return filler


def _play(api, user_id: str) -> None:
    conv = f"/v1/users/{user_id}/conversations/c1"
    assert api.put(f"{conv}/memory", {"expectedRevision": 0, "memory": {"pet": "cat"}}).status_code == 200
    assert api.put(f"{conv}/memory", {"expectedRevision": 1, "memory": {"pet": "dog"}}).status_code == 200
    for n in range(3):
        play(api, f"{user_id} says hello {n}", f"hello {user_id} {n}", conv=conv)


def test_erasure_leaves_no_row_of_the_user_in_any_model(alice, bob, django_capture_on_commit_callbacks) -> None:
    create_scenario(alice)
    create_scenario(bob)
    for user in (GONE, KEPT):
        _fill(alice, user)
        _play(alice, user)
    _fill(bob, GONE)  # the same user id in another product is another user
    before = reachable(alice.product, GONE)
    assert len(before) >= len([m for m in owner_models() if m._meta.app_label != "lifecycle"])
    kept_before = reachable(alice.product, KEPT)
    bobs_before = reachable(bob.product, GONE)
    turn_pks = set(Turn.objects.filter(product=alice.product, user_id=GONE).values_list("pk", flat=True))
    assert OutboxMessage.objects.filter(kwargs__turn_pk__in=list(turn_pks)).exists()

    with django_capture_on_commit_callbacks(execute=True):
        started = alice.delete(f"/v1/users/{GONE}")
    assert started.status_code == 202, started.json()
    assert set(started.json()) == {"erasureId", "status"}
    receipt = alice.get(f"/v1/erasures/{started.json()['erasureId']}").json()
    assert receipt["status"] == "done" and receipt["scope"] == "user" and receipt["requestedBy"].startswith("api_key:")
    assert receipt["counts"]["memories.Turn"] == len(before["memories.Turn"])

    # Nothing of the user, directly or through a foreign key, in any model of any app.
    assert reachable(alice.product, GONE) == {}
    for label, pks in before.items():
        from django.apps import apps

        model = apps.get_model(label)
        assert not model._base_manager.filter(pk__in=list(pks)).exists(), label
    assert rows_mentioning(GONE) == [f"memories.{m}" for m in []] or _only_bob(rows_mentioning(GONE), bob)
    assert not OutboxMessage.objects.filter(kwargs__turn_pk__in=list(turn_pks)).exists()
    # The other user and the other product's user are untouched.
    assert reachable(alice.product, KEPT) == kept_before
    assert reachable(bob.product, GONE) == bobs_before
    # The receipt holds no personal data.
    erasure = Erasure.objects.get()
    assert erasure.subject_hash == subject_hash(alice.product.pk, GONE) and GONE not in str(erasure.__dict__)
    # Everything reads as the empty shape.
    conv = f"/v1/users/{GONE}/conversations/c1"
    assert alice.get(f"{conv}/messages").json()["results"] == []
    assert alice.get(f"{conv}/events").json()["results"] == []


def _only_bob(hits: list[str], bob) -> bool:
    """Rows mentioning the id must all be the other product's (same id, different user)."""
    from django.apps import apps

    for hit in hits:
        label, pk = hit.split(":", 1)
        model = apps.get_model(label)
        row = model._base_manager.get(pk=pk)
        product_id = getattr(row, "product_id", None)
        assert product_id == bob.product.pk, hit
    return True


def test_working_set_keys_and_vectors_go_too(alice, django_capture_on_commit_callbacks) -> None:
    create_scenario(alice)
    _play(alice, GONE)
    _play(alice, KEPT)
    for user in (GONE, KEPT):  # on Redis, tombstones of the completions may expire before the erasure
        cache.set(Scope(alice.product.pk, user, "c1", "probe").key, "x", 300)
    assert working_set_keys(alice.product.pk, GONE)
    from memories.longterm.models import LongTermMemory

    Filler(alice.product, GONE, "cfill").fill()
    assert LongTermMemory.objects.filter(user_id=GONE).exists()
    with django_capture_on_commit_callbacks(execute=True):
        erasure = alice.delete(f"/v1/users/{GONE}").json()
    counts = alice.get(f"/v1/erasures/{erasure['erasureId']}").json()["counts"]
    assert counts["workingSetKeys"] >= 1
    assert working_set_keys(alice.product.pk, GONE) == []
    assert working_set_keys(alice.product.pk, KEPT)
    assert not LongTermMemory.objects.filter(user_id=GONE).exists()


def test_a_conversation_erasure_keeps_the_rest_of_the_user(alice, django_capture_on_commit_callbacks) -> None:
    create_scenario(alice)
    _play(alice, GONE)
    play(alice, "other", "reply", conv=f"/v1/users/{GONE}/conversations/c2")
    with django_capture_on_commit_callbacks(execute=True):
        started = alice.delete(f"/v1/users/{GONE}/conversations/c1").json()
    receipt = alice.get(f"/v1/erasures/{started['erasureId']}").json()
    assert receipt["scope"] == "conversation" and receipt["status"] == "done"
    assert alice.get(f"/v1/users/{GONE}/conversations/c1/messages").json()["results"] == []
    assert len(alice.get(f"/v1/users/{GONE}/conversations/c2/messages").json()["results"]) == 2


@pytest.mark.parametrize("scope", ["user", "conversation"])
def test_an_idempotency_key_retried_after_the_erasure_writes_anew(
    alice, scope, django_capture_on_commit_callbacks
) -> None:
    """An outside check: the key's record outlived the erasure, so a retry was "replayed" and nothing stored."""
    conv = f"/v1/users/{GONE}/conversations/c1"
    body = {"expectedRevision": 0, "memory": {"pet": "cat"}}
    assert alice.put(f"{conv}/memory", body, HTTP_IDEMPOTENCY_KEY="erase-k1").status_code == 200
    exported = _export_counts(alice, django_capture_on_commit_callbacks)
    assert exported["memories.RunOnceRecord"] == 1  # the record is the user's, so their export holds it
    with django_capture_on_commit_callbacks(execute=True):
        target = f"/v1/users/{GONE}" + ("/conversations/c1" if scope == "conversation" else "")
        started = alice.delete(target).json()
    receipt = alice.get(f"/v1/erasures/{started['erasureId']}").json()
    assert receipt["status"] == "done" and receipt["counts"]["memories.RunOnceRecord"] == 1
    again = alice.put(f"{conv}/memory", body, HTTP_IDEMPOTENCY_KEY="erase-k1")
    assert again.status_code == 200 and "Idempotent-Replayed" not in again.headers
    assert alice.get(f"{conv}/memory").json() == {"revision": 1, "memory": {"pet": "cat"}}


def _export_counts(api, capture) -> dict:
    with capture(execute=True):
        started = api.post(f"/v1/users/{GONE}/exports").json()
    return api.get(f"/v1/exports/{started['exportId']}").json()["counts"]


def test_requests_for_the_user_during_the_erasure_answer_409(alice) -> None:
    erasure = erasure_start(product=alice.product, user_id=GONE, requested_by="t", schedule=False)
    assert erasure.status == "pending"
    error = assert_envelope(alice.get(f"/v1/users/{GONE}/conversations/c1/messages"), 409, "erasure_in_progress")
    assert error["details"]["erasureId"].startswith("era_")
    assert_envelope(alice.delete(f"/v1/users/{GONE}"), 409, "erasure_in_progress")
    assert alice.get(f"/v1/users/{KEPT}/conversations/c1/messages").status_code == 200
    assert erasure_run(erasure_id=erasure.pk).status == "done"
    assert alice.get(f"/v1/users/{GONE}/conversations/c1/messages").status_code == 200


def test_a_conversation_being_erased_answers_409_but_the_rest_of_the_user_does_not(alice) -> None:
    erasure_start(product=alice.product, user_id=GONE, conversation_id="c1", requested_by="t", schedule=False)
    assert_envelope(alice.get(f"/v1/users/{GONE}/conversations/c1/messages"), 409, "erasure_in_progress")
    assert alice.get(f"/v1/users/{GONE}/conversations/c2/messages").status_code == 200
    assert alice.get(f"/v1/users/{GONE}/memories").status_code == 200


def test_another_products_erasure_is_not_found(alice, bob) -> None:
    erasure_id = alice.delete(f"/v1/users/{GONE}").json()["erasureId"]
    assert_envelope(bob.get(f"/v1/erasures/{erasure_id}"), 404, "not_found")
    assert alice.get(f"/v1/erasures/{erasure_id}").status_code == 200


def test_qdrant_points_of_the_user_go(alice, settings, django_capture_on_commit_callbacks) -> None:
    from memories.longterm.models import EmbeddingIndex, LongTermMemory
    from memories.longterm.services.vectors import qdrant_client, reset_qdrant_clients
    from tests.longterm.support import create

    reset_qdrant_clients()
    settings.QDRANT_URL = ":memory:"
    try:
        create(alice, user=GONE)
        kept = create(alice, user=KEPT)
        client = qdrant_client(":memory:")
        name = EmbeddingIndex.objects.get(status="active").storage_name
        gone_pk = LongTermMemory.objects.get(user_id=GONE).pk
        assert client.retrieve(name, ids=[gone_pk])
        with django_capture_on_commit_callbacks(execute=True):
            erasure = alice.delete(f"/v1/users/{GONE}").json()
        counts = alice.get(f"/v1/erasures/{erasure['erasureId']}").json()["counts"]
        assert counts["vectorPoints"] == 1
        assert client.retrieve(name, ids=[gone_pk]) == []
        kept_pk = LongTermMemory.objects.get(user_id=KEPT).pk
        assert client.retrieve(name, ids=[kept_pk]) and kept["id"]
    finally:
        reset_qdrant_clients()


def test_a_tool_call_for_the_user_during_the_erasure_answers_409(alice) -> None:
    from tests.support.api import client_for

    token = alice.post(f"/v1/users/{GONE}/conversations/c1/tool-tokens", {}).json()["token"]
    erasure_start(product=alice.product, user_id=GONE, requested_by="t", schedule=False)
    called = client_for(token).post("/v1/tools/call", {"name": "get_memory", "arguments": {}}, format="json")
    assert_envelope(called, 409, "erasure_in_progress")


def test_a_conversation_erasure_deletes_the_users_exports_which_hold_it(
    alice, settings, tmp_path, django_capture_on_commit_callbacks
) -> None:
    """docs/data-lifecycle.md: an erasure deletes the user's export files, a conversation's too (they hold it)."""
    settings.EXPORT_DIR = str(tmp_path / "exports")
    for conversation in ("c1", "c2"):
        body = {"expectedRevision": 0, "memory": {"secret": f"{conversation} zebrafish"}}
        assert alice.put(f"/v1/users/{GONE}/conversations/{conversation}/memory", body).status_code == 200
    with django_capture_on_commit_callbacks(execute=True):
        export = alice.post(f"/v1/users/{GONE}/exports").json()
    assert alice.get(f"/v1/exports/{export['exportId']}/download").status_code == 200
    with django_capture_on_commit_callbacks(execute=True):
        started = alice.delete(f"/v1/users/{GONE}/conversations/c1").json()
    receipt = alice.get(f"/v1/erasures/{started['erasureId']}").json()
    assert receipt["counts"]["exportFiles"] == 1 and receipt["counts"]["lifecycle.Export"] == 1
    assert_envelope(alice.get(f"/v1/exports/{export['exportId']}/download"), 404, "not_found")
    assert list((tmp_path / "exports").iterdir()) == []
    assert alice.get(f"/v1/users/{GONE}/conversations/c2/memory").json()["revision"] == 1

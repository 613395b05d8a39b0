"""langchain-tests' own VectorStoreIntegrationTests (sync and async), unchanged, against the live server."""

from __future__ import annotations

import uuid
from collections.abc import Iterator

import pytest
from conftest import LiveServer
from langchain_core.documents import Document
from langchain_tests.integration_tests import VectorStoreIntegrationTests
from memoryhub_client import MemoryHub, errors
from memoryhub_client.langchain import MemoryHubVectorStore, _ids_for


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

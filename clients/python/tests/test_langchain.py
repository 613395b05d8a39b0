"""langchain-tests' own VectorStoreIntegrationTests (sync and async), unchanged, against the live server."""

from __future__ import annotations

import uuid
from collections.abc import Iterator

import pytest
from conftest import LiveServer
from langchain_core.documents import Document
from langchain_tests.integration_tests import VectorStoreIntegrationTests
from memoryhub_client import MemoryHub, errors
from memoryhub_client.langchain import MemoryHubVectorStore


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

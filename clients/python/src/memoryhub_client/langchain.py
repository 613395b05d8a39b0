"""`MemoryHubVectorStore`: a LangChain vector store over long-term memories of a product-defined searchable kind.

What is stored (docs/clients.md, "LangChain"): each Document is one long-term memory of `kind` for `user_id`,
with content `{"docId": <the Document's id>, "text": <page_content>, "metadata": <metadata>}`. The kind's
`textField` is `text`, so memoryhub embeds the page content with its own embedder (the `embedding` given to
LangChain is kept but not used: memoryhub never takes vectors from clients). Every write goes through
admission like any memory: consent is given by the product backend that configures this store, and the
evidence is the fixed statement `ATTESTATION`; a document with a secret in it is refused (RejectedByPolicy).

Ids are the Document ids (generated when absent), not memoryhub's `mem_…` ids. They are content (`docId`), so
admission refuses one that looks like a secret (a hex digest, a card number): `letter_key_encoder` makes ids for
LangChain's indexing API that it does not. memoryhub has no lookup of a
memory by a content field, so `get_by_ids`, `delete` and an upsert list the user's memories of the kind
(keyset pages of 200): fine for the hundreds of documents per user memoryhub is built for, linear beyond.
Metadata filters (`filter={"k": v}`) are applied by the client to the semantic results.

Concurrent writers: memoryhub has no uniqueness on a content field, so two writers (two stores, two processes)
adding the same new id at the same time can each create a memory for it. The store converges: of the memories
of one id the current one is the most recently written (`current_copy`: the greatest `updatedAt`, then
`createdAt`, then `id`); `get_by_ids` and the searches answer only that one, an upsert updates it
(compare-and-set: changed or deleted since the listing is a RevisionConflict) and deletes the other copies, and
`delete` removes every copy, unconditionally (a racing write is deleted too).

`add_documents` writes the documents one by one, in order. When one fails (RejectedByPolicy for a secret, a
RevisionConflict, …) the ones before it stay written, it and the ones after it are not written, and the error
raised carries the ids written by this call in `error.written_ids`. Input judged by the client (`metadatas` or
`ids` not one per text, a document that is not JSON) raises ValueError before the first write.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import math
import secrets
import string
from collections.abc import Callable, Iterable, Sequence
from typing import Any

from langchain_core.documents import Document
from langchain_core.embeddings import Embeddings
from langchain_core.vectorstores import VectorStore

from ._async_client import AsyncMemoryHub
from ._copies import current_copy, deleted_since_listing
from ._kinds import ensure_kind as ensure_kind_defined
from ._storable import check_storable
from ._sync_client import MemoryHub
from .errors import MemoryHubError, NotFound, RevisionConflict
from .models import Memory, SearchResult

ATTESTATION = "I keep notes here."
DEFAULT_KIND = "langchain_document"
CONTENT_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "docId": {"type": "string", "minLength": 1, "maxLength": 256},
        "text": {"type": "string"},
        "metadata": {"type": "object"},
    },
    "required": ["docId", "text"],
    "additionalProperties": False,
}
PAGE = 200


def _by_doc_id(memories: Iterable[Memory]) -> tuple[dict[str, Memory], dict[str, list[Memory]]]:
    """The current memory of each document id, and the other copies of each (deleted by the next write)."""
    copies: dict[str, list[Memory]] = {}
    for memory in memories:
        copies.setdefault(memory["content"]["docId"], []).append(memory)
    current = {doc_id: current_copy(found) for doc_id, found in copies.items()}
    return current, {doc_id: [m for m in found if m is not current[doc_id]] for doc_id, found in copies.items()}


def _document(memory: Memory | SearchResult) -> Document:
    content = memory["content"]
    return Document(id=content["docId"], page_content=content["text"], metadata=dict(content.get("metadata") or {}))


def _matches(document: Document, where: dict[str, Any] | None) -> bool:
    return not where or all(document.metadata.get(k) == v for k, v in where.items())


def _proposal(doc_id: str, document: Document) -> dict[str, Any]:
    content = {"docId": doc_id, "text": document.page_content, "metadata": dict(document.metadata)}
    return {"content": content, "evidence": ATTESTATION, "source": ATTESTATION, "consent": True}


def _ids_for(documents: Sequence[Document], ids: Sequence[str | None] | None) -> list[str]:
    given = list(ids) if ids is not None else [d.id for d in documents]
    if len(given) != len(documents):  # as langchain-core's VectorStore.add_texts: never drop a document
        raise ValueError(f"{len(given)} ids for {len(documents)} documents: give one id per document")
    return [i or _random_id() for i in given]


def _proposals(documents: Sequence[Document], ids: Sequence[str | None] | None) -> list[tuple[str, dict[str, Any]]]:
    """Each document's id and memory proposal, every one checked before the first write (ValueError otherwise)."""
    proposals = [(doc_id, _proposal(doc_id, document)) for doc_id, document in zip(_ids_for(documents, ids), documents)]
    for index, (doc_id, proposal) in enumerate(proposals):
        check_storable(proposal["content"], f"document {index} (id {doc_id!r})")
    return proposals


def _documents(texts: Iterable[str], metadatas: list[dict[str, Any]] | None) -> list[Document]:
    texts = list(texts)
    metas = metadatas if metadatas is not None else [{} for _ in texts]
    if len(metas) != len(texts):  # as langchain-core's VectorStore.add_texts: never drop a text
        raise ValueError(f"{len(metas)} metadatas for {len(texts)} texts: give one metadata dict per text")
    return [Document(page_content=t, metadata=m) for t, m in zip(texts, metas)]


def _random_id() -> str:
    """16 random lowercase letters (75 bits). Admission reads a random string of 20+ characters as a leaked token,
    and 13+ digits in a row as a card number: hex digits made both (~0.1 % of ids were refused as a card)."""
    return "".join(secrets.choice(string.ascii_lowercase) for _ in range(16))


def letter_key_encoder(algorithm: str = "sha256") -> Callable[[Document], str]:
    """A `key_encoder` for `langchain_core.indexing.index()`: a hash (`algorithm`, any of hashlib's) of the
    document's content and metadata, written in lowercase letters. LangChain's own `"sha256"`, `"sha512"` and
    `"blake2b"` encoders make hex ids, which admission refuses as leaked tokens (`docId` is content, and content
    is scanned for secrets); letters carry no digits for it to read as a key or a card number."""
    size = hashlib.new(algorithm).digest_size
    width = math.ceil(size * 8 / math.log2(26))  # every digest in as many letters: ids of one length

    def encode(document: Document) -> str:
        hashed = json.dumps([document.page_content, document.metadata], ensure_ascii=False, sort_keys=True)
        number = int.from_bytes(hashlib.new(algorithm, hashed.encode("utf-8")).digest(), "big")
        letters = []
        for _ in range(width):
            number, digit = divmod(number, 26)
            letters.append(string.ascii_lowercase[digit])
        return "".join(letters)

    return encode


class MemoryHubVectorStore(VectorStore):
    """Documents of one user (`user_id`) as long-term memories of `kind` (created on first use if absent)."""

    def __init__(
        self,
        *,
        base_url: str,
        api_key: str,
        user_id: str,
        kind: str = DEFAULT_KIND,
        embedding: Embeddings | None = None,
        create_kind: bool = True,
    ) -> None:
        self.base_url, self._api_key, self.user_id, self.kind = base_url, api_key, user_id, kind
        self._embedding = embedding
        self._hub = MemoryHub(base_url, api_key)
        if create_kind:
            ensure_kind(self._hub, kind)

    @property
    def embeddings(self) -> Embeddings | None:
        return self._embedding

    def _async_hub(self) -> AsyncMemoryHub:
        # One client per call: an httpx.AsyncClient belongs to the event loop it was first used in.
        return AsyncMemoryHub(self.base_url, self._api_key)

    # -- reads ---------------------------------------------------------------------------------------------------

    def _all(self) -> list[Memory]:
        return list(self._hub.memories(self.user_id).iter(kind=self.kind, limit=PAGE))

    async def _aall(self) -> list[Memory]:
        async with self._async_hub() as hub:
            return [memory async for memory in hub.memories(self.user_id).iter(kind=self.kind, limit=PAGE)]

    def get_by_ids(self, ids: Sequence[str], /) -> list[Document]:
        return _pick(_by_doc_id(self._all())[0], ids)

    async def aget_by_ids(self, ids: Sequence[str], /) -> list[Document]:
        return _pick(_by_doc_id(await self._aall())[0], ids)

    def similarity_search_with_score(
        self, query: str, k: int = 4, filter: dict[str, Any] | None = None, **kwargs: Any
    ) -> list[tuple[Document, float]]:
        found: list[tuple[Document, float]] = []
        current = {m["id"] for m in _by_doc_id(self._all())[0].values()}  # no other copy of a document
        for result in self._hub.memories(self.user_id).iter_search(query, mode="semantic", limit=min(max(k, 10), 50)):
            if _take(result, current, filter, found) and len(found) >= k:
                break
        return found[:k]

    async def asimilarity_search_with_score(
        self, query: str, k: int = 4, filter: dict[str, Any] | None = None, **kwargs: Any
    ) -> list[tuple[Document, float]]:
        found: list[tuple[Document, float]] = []
        current = {m["id"] for m in _by_doc_id(await self._aall())[0].values()}
        async with self._async_hub() as hub:
            search = hub.memories(self.user_id).iter_search(query, mode="semantic", limit=min(max(k, 10), 50))
            async for result in search:
                if _take(result, current, filter, found) and len(found) >= k:
                    break
        return found[:k]

    def similarity_search(self, query: str, k: int = 4, **kwargs: Any) -> list[Document]:
        return [doc for doc, _ in self.similarity_search_with_score(query, k, **kwargs)]

    async def asimilarity_search(self, query: str, k: int = 4, **kwargs: Any) -> list[Document]:
        return [doc for doc, _ in await self.asimilarity_search_with_score(query, k, **kwargs)]

    def _select_relevance_score_fn(self) -> Any:
        return lambda score: (score + 1.0) / 2.0  # memoryhub's score is the cosine similarity, in [-1, 1]

    # -- writes --------------------------------------------------------------------------------------------------

    def add_documents(self, documents: list[Document], **kwargs: Any) -> list[str]:
        """Write the documents in order (an existing id: a compare-and-set update). If one fails, the error raised
        carries the ids written before it by this call in `error.written_ids`; it and the rest are not written."""
        proposals = _proposals(documents, kwargs.get("ids"))
        existing, stale = _by_doc_id(self._all())
        memories = self._hub.memories(self.user_id)
        written: list[str] = []
        try:
            for doc_id, proposal in proposals:
                current = existing.get(doc_id)
                if current is None:
                    existing[doc_id] = memories.create(kind=self.kind, **proposal)
                else:
                    version = current["version"]
                    try:
                        existing[doc_id] = memories.update(current["id"], expected_version=version, **proposal)
                    except NotFound as error:
                        raise deleted_since_listing(error) from error
                written.append(doc_id)
                for copy in stale.pop(doc_id, []):
                    with contextlib.suppress(NotFound, RevisionConflict):  # gone, or written since: newer
                        memories.delete(copy["id"], expected_version=copy["version"])
        except MemoryHubError as error:
            error.written_ids = written
            raise
        return [doc_id for doc_id, _ in proposals]

    async def aadd_documents(self, documents: list[Document], **kwargs: Any) -> list[str]:
        """`add_documents`, async."""
        proposals = _proposals(documents, kwargs.get("ids"))
        existing, stale = _by_doc_id(await self._aall())
        written: list[str] = []
        async with self._async_hub() as hub:
            memories = hub.memories(self.user_id)
            try:
                for doc_id, proposal in proposals:
                    current = existing.get(doc_id)
                    if current is None:
                        existing[doc_id] = await memories.create(kind=self.kind, **proposal)
                    else:
                        version = current["version"]
                        try:
                            existing[doc_id] = await memories.update(
                                current["id"], expected_version=version, **proposal
                            )
                        except NotFound as error:
                            raise deleted_since_listing(error) from error
                    written.append(doc_id)
                    for copy in stale.pop(doc_id, []):
                        with contextlib.suppress(NotFound, RevisionConflict):  # gone, or written since: newer
                            await memories.delete(copy["id"], expected_version=copy["version"])
            except MemoryHubError as error:
                error.written_ids = written
                raise
        return [doc_id for doc_id, _ in proposals]

    def add_texts(
        self, texts: Iterable[str], metadatas: list[dict[str, Any]] | None = None, **kwargs: Any
    ) -> list[str]:
        return self.add_documents(_documents(texts, metadatas), **kwargs)

    async def aadd_texts(
        self, texts: Iterable[str], metadatas: list[dict[str, Any]] | None = None, **kwargs: Any
    ) -> list[str]:
        return await self.aadd_documents(_documents(texts, metadatas), **kwargs)

    def delete(self, ids: list[str] | None = None, **kwargs: Any) -> bool | None:
        """Delete these documents, every copy of each (every document of the store with `ids=None`); missing ids
        are ignored."""
        memories = self._hub.memories(self.user_id)
        for memory in _selected(self._all(), ids):
            with contextlib.suppress(NotFound):  # deleted concurrently: the goal is reached
                memories.delete(memory["id"])  # unconditional: a write that raced this delete is deleted too
        return True

    async def adelete(self, ids: list[str] | None = None, **kwargs: Any) -> bool | None:
        selected = _selected(await self._aall(), ids)
        async with self._async_hub() as hub:
            for memory in selected:
                with contextlib.suppress(NotFound):
                    await hub.memories(self.user_id).delete(memory["id"])
        return True

    @classmethod
    def from_texts(
        cls,
        texts: list[str],
        embedding: Embeddings,
        metadatas: list[dict[str, Any]] | None = None,
        *,
        ids: list[str] | None = None,
        **kwargs: Any,
    ) -> MemoryHubVectorStore:
        """`base_url`, `api_key` and `user_id` (and optionally `kind`) are keyword arguments."""
        store = cls(embedding=embedding, **kwargs)
        store.add_texts(texts, metadatas, ids=ids)
        return store


def ensure_kind(hub: MemoryHub, kind: str) -> None:
    ensure_kind_defined(
        hub, kind, description="LangChain documents (memoryhub_client.langchain)", content_schema=CONTENT_SCHEMA
    )


def _pick(by_id: dict[str, Memory], ids: Sequence[str]) -> list[Document]:
    return [_document(by_id[i]) for i in ids if i in by_id]


def _selected(memories: list[Memory], ids: list[str] | None) -> list[Memory]:
    wanted = None if ids is None else set(ids)
    return [m for m in memories if wanted is None or m["content"]["docId"] in wanted]


def _take(
    result: SearchResult, current: set[str], where: dict[str, Any] | None, found: list[tuple[Document, float]]
) -> bool:
    if result["id"] not in current:  # another kind, or not the current copy of its document
        return False
    document = _document(result)
    if not _matches(document, where):
        return False
    found.append((document, float(result["score"])))
    return True

"""`MemoryHubStore`: LangGraph's `BaseStore` over memoryhub long-term memories.

Mapping (docs/clients.md, "LangGraph"): the API key is the product, `user_id` the memoryhub user, `kind` a
product-defined searchable kind (created on first use). Every item is one memory of that kind whose content is
`{"ns": [...namespace], "key": key, "value": value, "text": <the indexed text>, "indexed": bool}`; memoryhub
embeds `text` (the `index` fields of the value, `$` by default: the whole value as JSON) with its own embedder
— an `embed` given in `index` is kept in `index_config` but never called. Writes pass admission like any
memory (consent given by the product backend that configures the store, evidence `ATTESTATION`): a value
carrying a secret is refused with RejectedByPolicy.

memoryhub has no lookup by a content field, so one `batch` lists the user's memories of the kind once (keyset
pages of 200) and answers every operation of the batch from that listing and the writes it makes: linear in the
number of items per user. `search` with a `query` ranks by memoryhub's semantic search; filters, namespace
prefixes, offset and limit are applied by the client. `abatch` runs `batch` in a worker thread. TTLs are not
supported (`supports_ttl = False`). A batch is not atomic: it stops at its first error, which carries the
(namespace, key)s of the PutOps applied before it in `error.written_keys`.

Concurrent writers: memoryhub has no uniqueness on a content field, so two writers (two stores, two processes)
that put a new key at the same time can each create a memory for it. The store converges: of the memories of
one (namespace, key) the current one is the most recently written (`current_copy`: the greatest `updatedAt`,
then `createdAt`, then `id`); get, search and list_namespaces answer only that one, a put updates it
(compare-and-set: changed or deleted since the listing is a RevisionConflict) and deletes the other copies, and a
delete removes every copy, unconditionally (a racing put is deleted too).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
from collections.abc import Iterable
from typing import Any

from langgraph.store.base import (
    BaseStore,
    GetOp,
    IndexConfig,
    Item,
    ListNamespacesOp,
    MatchCondition,
    Op,
    PutOp,
    Result,
    SearchItem,
    SearchOp,
    get_text_at_path,
)

from ._copies import current_copy, deleted_since_listing, parse_time
from ._kinds import ensure_kind as ensure_kind_defined
from ._storable import check_storable
from ._sync_client import MemoryHub
from .errors import MemoryHubError, NotFound, RevisionConflict
from .models import Memory

ATTESTATION = "I keep notes here."
DEFAULT_KIND = "langgraph_item"
CONTENT_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "ns": {"type": "array", "items": {"type": "string"}, "minItems": 1},
        "key": {"type": "string"},
        "value": {"type": "object"},
        "text": {"type": "string"},
        "indexed": {"type": "boolean"},
    },
    "required": ["ns", "key", "value"],
    "additionalProperties": False,
}
PAGE = 200
SEARCH_PAGE = 50  # the most POST …/memories/search answers per page


def _fields(memory: Memory) -> dict[str, Any]:
    content = memory["content"]
    return {
        "namespace": tuple(content["ns"]),
        "key": content["key"],
        "value": content["value"],
        "created_at": parse_time(memory["createdAt"]),
        "updated_at": parse_time(memory["updatedAt"]),
    }


Key = tuple[tuple[str, ...], str]


def _item(memory: Memory) -> Item:
    return Item(**_fields(memory))


def _search_item(memory: Memory, score: float | None = None) -> SearchItem:
    return SearchItem(**_fields(memory), score=score)


def _matches_condition(condition: MatchCondition, namespace: tuple[str, ...]) -> bool:
    path = condition.path
    if len(namespace) < len(path):
        return False
    pairs = zip(namespace, path) if condition.match_type == "prefix" else zip(reversed(namespace), reversed(path))
    return all(want == "*" or have == want for have, want in pairs)


def _compare(have: Any, want: Any) -> bool:
    if isinstance(want, dict):
        if any(k.startswith("$") for k in want):
            return all(_operator(have, op, value) for op, value in want.items())
        return isinstance(have, dict) and all(_compare(have.get(k), v) for k, v in want.items())
    return bool(have == want)


def _operator(have: Any, op: str, value: Any) -> bool:
    if op == "$eq":
        return bool(have == value)
    if op == "$ne":
        return bool(have != value)
    if have is None:
        return False
    compare = {"$gt": float.__gt__, "$gte": float.__ge__, "$lt": float.__lt__, "$lte": float.__le__}.get(op)
    if compare is None:
        raise ValueError(f"unsupported filter operator: {op}")
    return bool(compare(float(have), float(value)))


class MemoryHubStore(BaseStore):
    supports_ttl: bool = False

    def __init__(
        self,
        *,
        base_url: str,
        api_key: str,
        user_id: str,
        kind: str = DEFAULT_KIND,
        index: IndexConfig | None = None,
        create_kind: bool = True,
    ) -> None:
        self.user_id, self.kind = user_id, kind
        self.index_config = index
        self._fields: list[str] = list((index or {}).get("fields") or ["$"])
        self._hub = MemoryHub(base_url, api_key)
        if create_kind:
            _ensure_kind(self._hub, kind)

    def close(self) -> None:
        self._hub.close()

    # -- BaseStore ------------------------------------------------------------------------------------------------

    def batch(self, ops: Iterable[Op]) -> list[Result]:
        """Answer the operations in order. Not atomic: an error stops the batch, the PutOps before it stay applied,
        and the error (a MemoryHubError) carries their (namespace, key)s in `error.written_keys`. A put value that
        is not JSON raises ValueError before anything is applied."""
        ops = list(ops)
        for index, op in enumerate(ops):
            if isinstance(op, PutOp) and op.value is not None:
                where = f"operation {index} (put of {op.namespace!r}, {op.key!r})"
                check_storable({"ns": op.namespace, "key": op.key, "value": op.value}, where)
        applied: list[Key] = []
        try:
            return self._apply(ops, applied)
        except MemoryHubError as error:
            error.written_keys = applied
            raise

    def _apply(self, ops: list[Op], applied: list[Key]) -> list[Result]:
        copies: dict[Key, list[Memory]] = {}
        for memory in self._listing():
            copies.setdefault((tuple(memory["content"]["ns"]), memory["content"]["key"]), []).append(memory)
        items = {key: current_copy(found) for key, found in copies.items()}
        # The other copies of an item (concurrent creates): never answered, deleted by the next write of the key.
        stale = {key: [m for m in found if m is not items[key]] for key, found in copies.items()}
        results: list[Result] = []
        for op in ops:
            if isinstance(op, GetOp):
                found = items.get((op.namespace, op.key))
                results.append(_item(found) if found else None)
            elif isinstance(op, PutOp):
                self._put(items, stale, op)
                applied.append((op.namespace, op.key))
                results.append(None)
            elif isinstance(op, SearchOp):
                results.append(self._search(items, op))
            elif isinstance(op, ListNamespacesOp):
                results.append(_namespaces(items, op))
            else:
                raise ValueError(f"unknown operation {op!r}")
        return results

    async def abatch(self, ops: Iterable[Op]) -> list[Result]:
        return await asyncio.to_thread(self.batch, list(ops))

    # -- the operations -------------------------------------------------------------------------------------------

    def _listing(self) -> list[Memory]:
        memories = self._hub.memories(self.user_id).iter(kind=self.kind, limit=PAGE)
        return sorted(memories, key=lambda m: (m["createdAt"], m["id"]))

    def _put(self, items: dict[Key, Memory], stale: dict[Key, list[Memory]], op: PutOp) -> None:
        memories = self._hub.memories(self.user_id)
        key = (op.namespace, op.key)
        current = items.get(key)
        if op.value is None:
            # Every copy (a delete brings back no older value), unconditionally: a put that raced it is deleted too.
            for memory in ([current] if current else []) + stale.pop(key, []):
                with contextlib.suppress(NotFound):  # deleted meanwhile: the goal is reached
                    memories.delete(memory["id"])
            items.pop(key, None)
            return
        proposal: dict[str, Any] = {"content": self._content(op), "evidence": ATTESTATION, "source": ATTESTATION}
        proposal["consent"] = True  # given by the product backend that configures the store
        if current is None:
            items[key] = memories.create(kind=self.kind, **proposal)
        else:
            try:
                items[key] = memories.update(current["id"], expected_version=current["version"], **proposal)
            except NotFound as error:
                raise deleted_since_listing(error) from error
            self._drop(stale.pop(key, []))

    def _drop(self, copies: list[Memory]) -> None:
        """Delete the other copies of an item. One deleted meanwhile is fine; one written since the listing
        (RevisionConflict) is a newer write than ours and is left to the rule (the most recent write is current)."""
        memories = self._hub.memories(self.user_id)
        for copy in copies:
            with contextlib.suppress(NotFound, RevisionConflict):
                memories.delete(copy["id"], expected_version=copy["version"])

    def _content(self, op: PutOp) -> dict[str, Any]:
        value = dict(op.value or {})
        fields = self._fields if op.index is None else (op.index or [])
        texts = [text for field in fields for text in get_text_at_path(value, field)] if op.index is not False else []
        text = " ".join(texts) if texts else json.dumps(value, ensure_ascii=False, sort_keys=True)
        return {"ns": list(op.namespace), "key": op.key, "value": value, "text": text, "indexed": bool(texts)}

    def _search(self, items: dict[Key, Memory], op: SearchOp) -> list[SearchItem]:
        prefix = op.namespace_prefix

        def wanted(memory: Memory) -> bool:
            content = memory["content"]
            namespace = tuple(content["ns"])
            if namespace[: len(prefix)] != prefix:
                return False
            return all(_compare(content["value"].get(k), v) for k, v in (op.filter or {}).items())

        candidates = [m for m in items.values() if wanted(m)]
        if not op.query:
            window = candidates[op.offset : op.offset + op.limit]
            return [_search_item(m) for m in window]
        ids = {m["id"]: m for m in candidates if m["content"].get("indexed", True)}
        ranked: list[SearchItem] = []
        for result in self._hub.memories(self.user_id).iter_search(op.query, mode="semantic", limit=SEARCH_PAGE):
            if result["id"] in ids:
                ranked.append(_search_item(ids.pop(result["id"]), float(result["score"])))
        # Items the search did not rank (not indexed: `index=False`) come after the ranked ones, unscored.
        unranked = [_search_item(m) for m in candidates if m["id"] in ids or not m["content"].get("indexed", True)]
        return (ranked + unranked)[op.offset : op.offset + op.limit]


def _namespaces(items: dict[Key, Memory], op: ListNamespacesOp) -> list[tuple[str, ...]]:
    namespaces = {namespace for namespace, _ in items}
    if op.match_conditions:
        namespaces = {ns for ns in namespaces if all(_matches_condition(c, ns) for c in op.match_conditions)}
    if op.max_depth is not None:
        namespaces = {ns[: op.max_depth] for ns in namespaces}
    return sorted(namespaces)[op.offset : op.offset + op.limit]


def _ensure_kind(hub: MemoryHub, kind: str) -> None:
    ensure_kind_defined(
        hub, kind, description="LangGraph store items (memoryhub_client.langgraph)", content_schema=CONTENT_SCHEMA
    )

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
supported (`supports_ttl = False`).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
from collections.abc import Iterable
from datetime import datetime
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

from ._kinds import ensure_kind as ensure_kind_defined
from ._sync_client import MemoryHub
from .errors import NotFound
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


def _time(value: str) -> datetime:
    return datetime.fromisoformat(value.replace("Z", "+00:00"))


def _fields(memory: Memory) -> dict[str, Any]:
    content = memory["content"]
    return {
        "namespace": tuple(content["ns"]),
        "key": content["key"],
        "value": content["value"],
        "created_at": _time(memory["createdAt"]),
        "updated_at": _time(memory["updatedAt"]),
    }


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
        ops = list(ops)
        items = {(tuple(m["content"]["ns"]), m["content"]["key"]): m for m in self._listing()}
        results: list[Result] = []
        for op in ops:
            if isinstance(op, GetOp):
                found = items.get((op.namespace, op.key))
                results.append(_item(found) if found else None)
            elif isinstance(op, PutOp):
                self._put(items, op)
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

    def _put(self, items: dict[tuple[tuple[str, ...], str], Memory], op: PutOp) -> None:
        memories = self._hub.memories(self.user_id)
        current = items.get((op.namespace, op.key))
        if op.value is None:
            if current is not None:
                with contextlib.suppress(NotFound):  # deleted meanwhile: the goal is reached
                    memories.delete(current["id"], expected_version=current["version"])
                del items[(op.namespace, op.key)]
            return
        proposal: dict[str, Any] = {"content": self._content(op), "evidence": ATTESTATION, "source": ATTESTATION}
        proposal["consent"] = True  # given by the product backend that configures the store
        if current is None:
            items[(op.namespace, op.key)] = memories.create(kind=self.kind, **proposal)
        else:
            updated = memories.update(current["id"], expected_version=current["version"], **proposal)
            items[(op.namespace, op.key)] = updated

    def _content(self, op: PutOp) -> dict[str, Any]:
        value = dict(op.value or {})
        fields = self._fields if op.index is None else (op.index or [])
        texts = [text for field in fields for text in get_text_at_path(value, field)] if op.index is not False else []
        text = " ".join(texts) if texts else json.dumps(value, ensure_ascii=False, sort_keys=True)
        return {"ns": list(op.namespace), "key": op.key, "value": value, "text": text, "indexed": bool(texts)}

    def _search(self, items: dict[tuple[tuple[str, ...], str], Memory], op: SearchOp) -> list[SearchItem]:
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


def _namespaces(items: dict[tuple[tuple[str, ...], str], Memory], op: ListNamespacesOp) -> list[tuple[str, ...]]:
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

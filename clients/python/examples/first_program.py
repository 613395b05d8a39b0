"""A first program: read → write with the revision → conflict → re-read, a long-term memory, a search.

    MEMORYHUB_URL=http://127.0.0.1:8000 MEMORYHUB_API_KEY=mhk_… python first_program.py

CI type-checks this file with `mypy --strict` against the installed wheel and runs it against a live server.
"""

from __future__ import annotations

import asyncio
import os
import uuid

from memoryhub_client import AsyncMemoryHub, MemoryHub, RevisionConflict, errors
from memoryhub_client.models import Memory, MemoryDocument


def remember_pet(hub: MemoryHub, user_id: str) -> int:
    doc = hub.memory(user_id, "c1")
    current: MemoryDocument = doc.get()
    memory = dict(current.memory or {})
    memory["pet"] = "cat"
    try:
        return doc.put(expected_revision=current.revision, memory=memory)
    except RevisionConflict as conflict:
        print("someone else wrote revision", conflict.current_revision, "- re-read and decide again")
        raise


def save_preference(hub: MemoryHub, user_id: str) -> Memory | None:
    try:
        return hub.memories(user_id).create(
            kind="preference",
            content={"detail": "brief"},
            evidence="Answer briefly.",
            source="Hi! Answer briefly.",
            consent=True,
        )
    except errors.RejectedByPolicy as refused:
        print("not saved:", refused.reason, refused.details)
        return None


async def read_async(base_url: str, api_key: str, user_id: str) -> int:
    async with AsyncMemoryHub(base_url, api_key) as hub:
        return (await hub.memory(user_id, "c1").get()).revision


def main() -> None:
    base_url, api_key = os.environ["MEMORYHUB_URL"], os.environ["MEMORYHUB_API_KEY"]
    user_id = f"example-{uuid.uuid4().hex[:8]}"
    with MemoryHub(base_url, api_key) as hub:
        revision = remember_pet(hub, user_id)
        try:
            hub.memory(user_id, "c1").put(expected_revision=revision - 1, memory={"pet": "dog"})
        except RevisionConflict as conflict:
            assert conflict.current_revision == revision
        saved = save_preference(hub, user_id)
        hits = [r["id"] for r in hub.memories(user_id).iter_search("brief", mode="keyword")]
        assert saved is not None and saved["id"] in hits
        pages = sum(1 for _ in hub.memory(user_id, "c1").iter_revisions(limit=1))
    assert asyncio.run(read_async(base_url, api_key, user_id)) == revision
    print(f"ok: revision {revision}, {pages} revision(s), preference {saved['id']}")


if __name__ == "__main__":
    main()

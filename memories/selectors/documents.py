from __future__ import annotations

from memories.models import MemoryDocument, MemoryRevision
from memoryhub.addresses import ConversationAddress
from memoryhub.db_routing import primary_reads
from memoryhub.pagination import keyset_page


def _filter(model, address: ConversationAddress):
    return model.objects.filter(
        product=address.product, user_id=address.user_id, conversation_id=address.conversation_id
    )


@primary_reads  # its revision is the client's next expectedRevision: never a lagging replica's
def memory_document_get(address: ConversationAddress) -> tuple[int, dict | None]:
    """Return (revision, memory); a never-written document is (0, None) — the only empty shape."""
    row = _filter(MemoryDocument, address).values_list("revision", "memory").first()
    return row if row else (0, None)


def memory_revisions_page(address: ConversationAddress, *, cursor: str | None, limit: int) -> tuple[list, str | None]:
    return keyset_page(_filter(MemoryRevision, address), field="revision", descending=True, cursor=cursor, limit=limit)

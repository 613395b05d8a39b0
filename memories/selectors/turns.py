from __future__ import annotations

from memories.models import Event, Message
from memoryhub.addresses import ConversationAddress
from memoryhub.pagination import keyset_page


def messages_page(address: ConversationAddress, *, cursor: str | None, limit: int) -> tuple[list, str | None]:
    rows = Message.objects.filter(
        product=address.product, user_id=address.user_id, conversation_id=address.conversation_id
    )
    return keyset_page(rows, field="id", descending=False, cursor=cursor, limit=limit)


def events_page(
    address: ConversationAddress, *, cursor: str | None, limit: int, type: str | None = None
) -> tuple[list, str | None]:
    rows = Event.objects.filter(
        product=address.product, user_id=address.user_id, conversation_id=address.conversation_id
    )
    if type:
        rows = rows.filter(type=type)
    return keyset_page(rows, field="id", descending=False, cursor=cursor, limit=limit)

"""A completed round stores its messages in the transaction that counts it on the Conversation row: that save
invalidates the `history` working-set entry (a regeneration invalidates it in the supersede hook)."""

from __future__ import annotations

from memories.models import Conversation
from memoryhub import working_set

from .selectors import history_scope_of


def conversation_saved(sender, instance: Conversation, **kwargs) -> None:
    working_set.invalidate(history_scope_of(instance.product_id, instance.user_id, instance.conversation_id))

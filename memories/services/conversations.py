"""The conversation row (round counter) as a working-set entry: a prepare reads it without a query."""

from __future__ import annotations

from django.db.models.signals import post_delete, post_save
from django.dispatch import receiver

from memories.models import Conversation
from memoryhub import working_set
from memoryhub.addresses import ConversationAddress

# Not a template variable: the working-set slot of the conversation's (pk, completed rounds).
ROUND_COUNTER = "conversation"


def conversation_scope(product_id: str, user_id: str, conversation_id: str) -> working_set.Scope:
    return working_set.Scope(product_id, user_id, conversation_id, ROUND_COUNTER)


def conversation_state(address: ConversationAddress) -> tuple[int, int]:
    """Return (conversation pk, completed rounds), creating the conversation on first use."""

    def build() -> tuple[int, int]:
        conversation, _ = Conversation.objects.get_or_create(
            product=address.product, user_id=address.user_id, conversation_id=address.conversation_id
        )
        return conversation.pk, conversation.rounds

    state, _ = working_set.get_or_build(
        conversation_scope(address.product.pk, address.user_id, address.conversation_id), build
    )
    return state


@receiver(post_save, sender=Conversation, dispatch_uid="memories.conversation_working_set.save")
@receiver(post_delete, sender=Conversation, dispatch_uid="memories.conversation_working_set.delete")
def _invalidate(sender, instance: Conversation, **kwargs) -> None:
    # Runs inside the transaction that changes the round counter (select_for_update + save).
    working_set.invalidate(conversation_scope(instance.product_id, instance.user_id, instance.conversation_id))

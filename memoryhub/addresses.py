"""Who a piece of memory belongs to: a product's user, or one conversation of that user.

Every service and selector takes one of these; the product comes from the authenticated caller, never
from the request body, so a foreign id is simply not found. `product` is the product model instance
(typed loosely: memoryhub imports no app).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from memoryhub.working_set import Scope

AddressCheck = Callable[[Any, str, "str | None"], None]
# Checks every addressed request passes (apps register them in AppConfig.ready): check(product, user_id,
# conversation_id or None) raises a domain error to refuse, e.g. 409 erasure_in_progress while a user is erased.
_checks: list[AddressCheck] = []


def register_address_check(check: AddressCheck) -> None:
    if check not in _checks:
        _checks.append(check)


def run_address_checks(product: Any, user_id: str, conversation_id: str | None) -> None:
    for check in _checks:
        check(product, user_id, conversation_id)


@dataclass(frozen=True)
class UserAddress:
    """(product, user): where user-level memories live (long-term memories, checkpoints)."""

    product: Any
    user_id: str

    def scope(self, variable: str) -> Scope:
        """The working-set entry of a user-level variable, shared by all of the user's conversations."""
        return Scope(self.product.pk, self.user_id, "", variable)


@dataclass(frozen=True)
class ConversationAddress:
    """(product, user, conversation): where documents, tables, turns, messages and diaries live."""

    product: Any
    user_id: str
    conversation_id: str

    @property
    def user(self) -> UserAddress:
        return UserAddress(self.product, self.user_id)

    def scope(self, variable: str) -> Scope:
        """The working-set entry of a conversation-level variable."""
        return Scope(self.product.pk, self.user_id, self.conversation_id, variable)

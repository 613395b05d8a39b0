"""Plumbing shared by every app's views: addressing a user or a conversation, and validating bodies."""

from __future__ import annotations

from rest_framework import serializers

from memoryhub.addresses import ConversationAddress, UserAddress, run_address_checks
from memoryhub.identifiers import validate_identifier

from .fast_validation import fast_validated


def user_address(request, user_id: str) -> UserAddress:
    """The authenticated product's user: the product never comes from the URL or the body."""
    address = UserAddress(product=request.user.product, user_id=validate_identifier(user_id, "userId"))
    run_address_checks(address.product, address.user_id, None)
    return address


def conversation_address(request, user_id: str, conversation_id: str) -> ConversationAddress:
    address = ConversationAddress(
        product=request.user.product,
        user_id=validate_identifier(user_id, "userId"),
        conversation_id=validate_identifier(conversation_id, "conversationId"),
    )
    run_address_checks(address.product, address.user_id, address.conversation_id)
    return address


def optional_body(request) -> object:
    """The body of an endpoint whose body may be left out: none is `{}`; anything sent (`[]`, `null`) is judged."""
    sent = (request.META.get("CONTENT_LENGTH") or "0") != "0"  # chunked bodies are refused before (411)
    return request.data if sent else {}


def validated(serializer_class: type[serializers.Serializer], data: object, **context) -> dict:
    fast = fast_validated(serializer_class, data)  # a body valid as sent skips DRF (memoryhub/api/fast_validation.py)
    if fast is not None:
        return fast
    serializer = serializer_class(data=data, context=context)
    serializer.is_valid(raise_exception=True)
    return serializer.validated_data

"""Plumbing shared by every app's views: addressing a user or a conversation, and validating bodies."""

from __future__ import annotations

from rest_framework import serializers

from memoryhub.addresses import ConversationAddress, UserAddress
from memoryhub.identifiers import validate_identifier


def user_address(request, user_id: str) -> UserAddress:
    """The authenticated product's user: the product never comes from the URL or the body."""
    return UserAddress(product=request.user.product, user_id=validate_identifier(user_id, "userId"))


def conversation_address(request, user_id: str, conversation_id: str) -> ConversationAddress:
    return ConversationAddress(
        product=request.user.product,
        user_id=validate_identifier(user_id, "userId"),
        conversation_id=validate_identifier(conversation_id, "conversationId"),
    )


def validated(serializer_class: type[serializers.Serializer], data: object, **context) -> dict:
    serializer = serializer_class(data=data, context=context)
    serializer.is_valid(raise_exception=True)
    return serializer.validated_data

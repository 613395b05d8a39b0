"""Plumbing shared by this app's views: addressing a conversation and validating bodies."""
from __future__ import annotations

import datetime

from rest_framework import serializers

from memories.services.documents import DocumentAddress
from memories.validation import validate_identifier


def conversation_address(request, user_id: str, conversation_id: str) -> DocumentAddress:
    return DocumentAddress(
        product=request.user.product,
        user_id=validate_identifier(user_id, "userId"),
        conversation_id=validate_identifier(conversation_id, "conversationId"),
    )


def validated(serializer_class: type[serializers.Serializer], data: object, **context) -> dict:
    serializer = serializer_class(data=data, context=context)
    serializer.is_valid(raise_exception=True)
    return serializer.validated_data


def iso(dt) -> str | None:
    """ISO 8601 in UTC with a Z suffix."""
    if dt is None:
        return None
    return dt.astimezone(datetime.timezone.utc).isoformat().replace("+00:00", "Z")

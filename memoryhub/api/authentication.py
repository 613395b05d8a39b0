"""The authenticated caller and the permissions on it; the authentication classes live with the keys (memories.api)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from rest_framework.authentication import BaseAuthentication, get_authorization_header
from rest_framework.exceptions import AuthenticationFailed
from rest_framework.permissions import BasePermission

from memoryhub.actors import Actor


@dataclass(frozen=True)
class ProductClient:
    """The authenticated caller: a product (by one of its keys) or a model holding a tool token."""

    product: object
    actor_type: str
    actor_id: str
    claims: dict = field(default_factory=dict)
    is_authenticated: bool = True
    # Set when the key was taken from this process's snapshot without a lookup: only a write that checks the
    # key in its own statement may rely on it; anything else is confirmed first (memoryhub/api/plan.py
    # `EdgePlan.confirm_key`): `confirm(request)` looks the key up and returns the caller as it is now and whether
    # the key or its product changed since, or raises AuthenticationFailed (memories/api/authentication.py).
    key_snapshot: object = None
    confirm: Callable[[Any], tuple[ProductClient, bool]] | None = None

    @property
    def actor(self) -> Actor:
        return Actor(self.actor_type, self.actor_id)


class KeyAuthentication(BaseAuthentication):
    """An authenticator a planned view tells, when it makes it, whether this request's write checks the key in its
    own statement (`Planner.key_checked_by_write`, memoryhub/api/plan.py): then a known key needs no lookup."""

    def __init__(self, *, key_checked_by_write: bool = False) -> None:
        self.key_checked_by_write = key_checked_by_write


def bearer_token(request) -> str | None:
    parts = get_authorization_header(request).split()
    if not parts:
        return None
    if parts[0].lower() != b"bearer":  # a key sent bare or as "Token …": say how, not "not provided"
        raise AuthenticationFailed("Authorization must be 'Bearer <key>'")
    if len(parts) != 2:
        raise AuthenticationFailed("Authorization must be 'Bearer <key>'")
    try:
        return parts[1].decode()
    except UnicodeDecodeError:
        raise AuthenticationFailed("the key is not valid text") from None


class IsProductClient(BasePermission):
    """Any authenticated product key; tool tokens are admitted only where a view says so."""

    def has_permission(self, request, view) -> bool:
        user = request.user
        return isinstance(user, ProductClient) and user.actor_type == "api_key"


class IsToolClient(BasePermission):
    def has_permission(self, request, view) -> bool:
        return isinstance(request.user, ProductClient) and request.user.actor_type == "tool"


class IsProductOrToolClient(BasePermission):
    def has_permission(self, request, view) -> bool:
        return isinstance(request.user, ProductClient)

"""Authentication: `Authorization: Bearer <product key>` (or a model's tool token) → the request's product."""

from __future__ import annotations

from django.db import connection
from rest_framework.authentication import BaseAuthentication
from rest_framework.exceptions import AuthenticationFailed

import memoryhub.api.schema  # noqa: F401  registers the OpenAPI security schemes for the classes below
from memories.services.products import KeySnapshot, api_key_authenticate, api_key_snapshot, hash_key
from memories.services.tools import TOKEN_PREFIX, tool_token_authenticate
from memoryhub.api import auth_failures
from memoryhub.api.authentication import KeyAuthentication, ProductClient, bearer_token


class ProductKeyAuthentication(KeyAuthentication):
    def authenticate(self, request):
        try:
            return self._authenticate(request)
        except AuthenticationFailed:
            auth_failures.failed(request)  # 429 instead, once the address is over its limit
            raise

    def _authenticate(self, request):
        token = bearer_token(request)
        if token is None:
            return None
        digest = hash_key(token)
        if self.key_checked_by_write and connection.vendor == "postgresql":
            known = _snapshots.get(digest)
            if known is not None:  # no lookup: the write checks the key in its own statement
                return _client(known.api_key, known), known.api_key
            auth_failures.refuse_if_blocked(request, digest)
            snapshot = _remember(token)  # one query, as the lookup: the key with its row versions
            if snapshot is None:
                raise AuthenticationFailed("unknown or revoked API key")
            auth_failures.verified(digest)
            return _client(snapshot.api_key), snapshot.api_key
        auth_failures.refuse_if_blocked(request, digest)
        api_key = api_key_authenticate(token)
        if api_key is None:
            raise AuthenticationFailed("unknown or revoked API key")
        auth_failures.verified(digest)
        return _client(api_key), api_key

    def authenticate_header(self, request) -> str:
        return "Bearer"


class ToolTokenAuthentication(BaseAuthentication):
    """`Authorization: Bearer mht_…`: a model's short-lived token; it alone fixes product, user and conversation."""

    def authenticate(self, request):
        token = bearer_token(request)
        if token is None or not token.startswith(TOKEN_PREFIX):
            return None
        digest = hash_key(token)
        auth_failures.refuse_if_blocked(request, digest)
        found = tool_token_authenticate(token)
        if found is None:
            auth_failures.failed(request)
            raise AuthenticationFailed("the tool token is invalid, expired or revoked")
        claims, product = found
        auth_failures.verified(digest)
        return ProductClient(product, "tool", claims.token_id, {"token": claims}), claims

    def authenticate_header(self, request) -> str:
        return "Bearer"


class ToolTokenOnlyAuthentication(ToolTokenAuthentication):
    """A tool token, and a clear refusal of any other bearer (a product key is not a tool token)."""

    def authenticate(self, request):
        token = bearer_token(request)
        if token is not None and not token.startswith(TOKEN_PREFIX):
            # Not counted as a failed authentication: the key is not looked up, so nothing is learnt about it.
            raise AuthenticationFailed(
                "this endpoint takes a tool token (mht_…), not a product API key: mint one with "
                "POST /v1/users/{userId}/conversations/{conversationId}/tool-tokens"
            )
        return super().authenticate(request)


# --- keys checked by the write itself --------------------------------------------------------------------------
# A planned view declares the methods whose one SQL statement checks the key (`Planner.key_checked_by_write`,
# memoryhub/api/plan.py, e.g. the memory PUT with `memoryhub_memory_cas_for_key`) and makes this authenticator
# with `key_checked_by_write=True` for them. Then a key this process has read before is taken from its snapshot
# without a lookup; the write answers KeyChanged if the key or its product changed since, and every other
# outcome is confirmed by a lookup before it is answered (`confirm_key`): revocation stays exact.

_snapshots: dict[str, KeySnapshot] = {}  # by the hash of the whole key
_SNAPSHOTS_MAX = 10_000


def _client(api_key, snapshot: KeySnapshot | None = None) -> ProductClient:
    confirm = confirm_key if snapshot is not None else None
    return ProductClient(api_key.product, "api_key", api_key.prefix, key_snapshot=snapshot, confirm=confirm)


def _remember(token: str) -> KeySnapshot | None:
    digest = hash_key(token)
    _snapshots.pop(digest, None)
    snapshot = api_key_snapshot(token)
    if snapshot is not None:
        if len(_snapshots) >= _SNAPSHOTS_MAX:
            _snapshots.clear()
        _snapshots[digest] = snapshot
    return snapshot


def confirm_key(request) -> tuple[ProductClient, bool]:
    """Look up a key taken from its snapshot: the caller as the key is now, and whether the key or its product
    changed since the snapshot the request started from. Raises AuthenticationFailed if it is no longer active.

    Called through `ProductClient.confirm` by `EdgePlan.confirm_key`, which makes the result the request's caller.
    """
    started = request.user.key_snapshot
    snapshot = _remember(bearer_token(request) or "")
    if snapshot is None:
        raise AuthenticationFailed("unknown or revoked API key")
    changed = (snapshot.key_version, snapshot.product_version) != (started.key_version, started.product_version)
    return _client(snapshot.api_key), changed

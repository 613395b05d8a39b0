"""Authentication: `Authorization: Bearer <product key>` → the request's product."""
from __future__ import annotations

from dataclasses import dataclass, field

from rest_framework.authentication import BaseAuthentication, get_authorization_header
from rest_framework.exceptions import AuthenticationFailed
from rest_framework.permissions import BasePermission


@dataclass(frozen=True)
class ProductClient:
    """The authenticated caller: a product (by one of its keys) or a model holding a tool token."""

    product: object
    actor_type: str
    actor_id: str
    claims: dict = field(default_factory=dict)
    is_authenticated: bool = True

    @property
    def actor(self):
        from memories.actors import Actor

        return Actor(self.actor_type, self.actor_id)


def bearer_token(request) -> str | None:
    parts = get_authorization_header(request).split()
    if not parts or parts[0].lower() != b"bearer":
        return None
    if len(parts) != 2:
        raise AuthenticationFailed("Authorization must be 'Bearer <key>'")
    try:
        return parts[1].decode()
    except UnicodeDecodeError:
        raise AuthenticationFailed("the key is not valid text") from None


class ProductKeyAuthentication(BaseAuthentication):
    def authenticate(self, request):
        token = bearer_token(request)
        if token is None:
            return None
        from memories.services.products import api_key_authenticate

        api_key = api_key_authenticate(token)
        if api_key is None:
            raise AuthenticationFailed("unknown or revoked API key")
        return ProductClient(api_key.product, "api_key", api_key.prefix), api_key

    def authenticate_header(self, request) -> str:
        return "Bearer"


class IsProductClient(BasePermission):
    """Any authenticated product key; tool tokens are admitted only where a view says so."""

    def has_permission(self, request, view) -> bool:
        user = request.user
        return isinstance(user, ProductClient) and user.actor_type == "api_key"


class ToolTokenAuthentication(BaseAuthentication):
    """`Authorization: Bearer mht_…`: a model's short-lived token; it alone fixes product, user and conversation."""

    def authenticate(self, request):
        token = bearer_token(request)
        from memories.services.tools import TOKEN_PREFIX, tool_token_read

        if token is None or not token.startswith(TOKEN_PREFIX):
            return None
        claims = tool_token_read(token)
        if claims is None:
            raise AuthenticationFailed("the tool token is invalid or expired")
        from memories.models import Product

        product = Product.objects.filter(pk=claims.product_id).first()
        if product is None:
            raise AuthenticationFailed("the tool token is invalid or expired")
        return ProductClient(product, "tool", claims.token_id, {"token": claims}), claims

    def authenticate_header(self, request) -> str:
        return "Bearer"


class IsToolClient(BasePermission):
    def has_permission(self, request, view) -> bool:
        return isinstance(request.user, ProductClient) and request.user.actor_type == "tool"


class IsProductOrToolClient(BasePermission):
    def has_permission(self, request, view) -> bool:
        return isinstance(request.user, ProductClient)


from . import schema as _schema  # noqa: E402,F401  registers the OpenAPI security schemes

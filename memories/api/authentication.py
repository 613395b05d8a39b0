"""Authentication: `Authorization: Bearer <product key>` (or a model's tool token) → the request's product."""

from __future__ import annotations

from rest_framework.authentication import BaseAuthentication
from rest_framework.exceptions import AuthenticationFailed

import memoryhub.api.schema  # noqa: F401  registers the OpenAPI security schemes for the classes below
from memories.models import Product
from memories.services.products import api_key_authenticate
from memories.services.tools import TOKEN_PREFIX, tool_token_read
from memoryhub.api.authentication import ProductClient, bearer_token


class ProductKeyAuthentication(BaseAuthentication):
    def authenticate(self, request):
        token = bearer_token(request)
        if token is None:
            return None
        api_key = api_key_authenticate(token)
        if api_key is None:
            raise AuthenticationFailed("unknown or revoked API key")
        return ProductClient(api_key.product, "api_key", api_key.prefix), api_key

    def authenticate_header(self, request) -> str:
        return "Bearer"


class ToolTokenAuthentication(BaseAuthentication):
    """`Authorization: Bearer mht_…`: a model's short-lived token; it alone fixes product, user and conversation."""

    def authenticate(self, request):
        token = bearer_token(request)
        if token is None or not token.startswith(TOKEN_PREFIX):
            return None
        claims = tool_token_read(token)
        if claims is None:
            raise AuthenticationFailed("the tool token is invalid or expired")
        product = Product.objects.filter(pk=claims.product_id).first()
        if product is None:
            raise AuthenticationFailed("the tool token is invalid or expired")
        return ProductClient(product, "tool", claims.token_id, {"token": claims}), claims

    def authenticate_header(self, request) -> str:
        return "Bearer"

"""Calling the API as a product does, and checking the error envelope."""

from __future__ import annotations

from rest_framework.test import APIClient

from memories.models import Product
from memories.services.products import product_create


class ProductApi:
    """A product with an authenticated API client (its key is issued by the product service, as in production)."""

    def __init__(self, name: str):
        self.product: Product
        self.product, issued = product_create(name=name)
        self.key = issued.plaintext
        self.client = client_for(self.key)

    def get(self, path: str, **kwargs):
        return self.client.get(path, **kwargs)

    def post(self, path: str, data=None, **kwargs):
        return self.client.post(path, data, format="json", **kwargs)

    def put(self, path: str, data=None, **kwargs):
        return self.client.put(path, data, format="json", **kwargs)

    def patch(self, path: str, data=None, **kwargs):
        return self.client.patch(path, data, format="json", **kwargs)

    def delete(self, path: str, **kwargs):
        return self.client.delete(path, **kwargs)


def client_for(key: str, **environ: str) -> APIClient:
    """A client sending `key` as its bearer token (and `environ`, e.g. REMOTE_ADDR) with every request."""
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Bearer {key}", **environ)
    return client


def assert_envelope(response, status: int, code: str | None = None) -> dict:
    assert response.status_code == status, (response.status_code, getattr(response, "content", b"")[:500])
    body = response.json()
    assert set(body) == {"error"}, body
    assert set(body["error"]) == {"code", "message", "details"}, body
    if code:
        assert body["error"]["code"] == code, body
    return body["error"]

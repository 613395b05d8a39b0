"""Reads of webhook endpoints and deliveries; every selector takes the product (a foreign id is not found)."""

from __future__ import annotations

from django.db.models import Prefetch

from memories.models import Product
from memoryhub.errors import NotFound
from memoryhub.pagination import keyset_page

from .models import WebhookAttempt, WebhookDelivery, WebhookEndpoint


def endpoint_get(*, product: Product, endpoint_id: int) -> WebhookEndpoint:
    endpoint = WebhookEndpoint.objects.filter(product=product, pk=endpoint_id).first()
    if endpoint is None:
        raise NotFound(f"no webhook {endpoint_id}")
    return endpoint


def endpoints_page(*, product: Product, cursor: str | None, limit: int) -> tuple[list[WebhookEndpoint], str | None]:
    return keyset_page(
        WebhookEndpoint.objects.filter(product=product), field="id", descending=False, cursor=cursor, limit=limit
    )


def deliveries_page(
    *, product: Product, endpoint_id: int, cursor: str | None, limit: int
) -> tuple[list[WebhookDelivery], str | None]:
    """A page of one endpoint's deliveries, newest first, with their attempts."""
    endpoint = endpoint_get(product=product, endpoint_id=endpoint_id)
    queryset = (
        WebhookDelivery.objects.filter(endpoint=endpoint)
        .select_related("message")
        .prefetch_related(Prefetch("attempt_log", queryset=WebhookAttempt.objects.order_by("number")))
    )
    return keyset_page(queryset, field="id", descending=True, cursor=cursor, limit=limit)


def delivery_get(*, product: Product, endpoint_id: int, delivery_id: int) -> WebhookDelivery:
    delivery = WebhookDelivery.objects.filter(
        pk=delivery_id, endpoint_id=endpoint_id, endpoint__product=product
    ).first()
    if delivery is None:
        raise NotFound(f"no delivery {delivery_id} for webhook {endpoint_id}")
    return delivery

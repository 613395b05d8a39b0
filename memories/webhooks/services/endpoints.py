"""Register, change, rotate and remove a product's webhook endpoints (the API and the admin call these)."""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime, timedelta
from typing import Any

from django.conf import settings
from django.db import transaction
from django.db.models import Count, OuterRef, Subquery
from django.db.models.functions import Coalesce
from django.utils import timezone

from memories.models import Product
from memoryhub.errors import InvalidRequest, NotFound, RejectedByPolicy
from memoryhub.events import EVENT_TYPES

from .. import signing, targets
from ..models import WebhookEndpoint
from ..selectors import endpoint_get

ALL_EVENTS = "*"
DEFAULT_OVERLAP_SECONDS = 24 * 3600
MAX_OVERLAP_SECONDS = 7 * 24 * 3600


class EndpointLimitReached(RejectedByPolicy):
    """The product has WEBHOOK_MAX_ENDPOINTS_PER_PRODUCT endpoints already: every event fans out to each."""

    code = "webhook_limit_reached"


def validate_events(events: object) -> list[str]:
    """A non-empty list of known event types, or ["*"] for all of them (duplicates dropped, order kept)."""
    if not isinstance(events, list) or not events or not all(isinstance(e, str) for e in events):
        raise InvalidRequest('events must be a non-empty list of event types, or ["*"]', details={"field": "events"})
    unknown = [e for e in events if e not in EVENT_TYPES and e != ALL_EVENTS]
    if unknown:
        raise InvalidRequest(
            f"unknown event types: {', '.join(unknown)}",
            details={"field": "events", "unknown": unknown, "known": list(EVENT_TYPES)},
        )
    if ALL_EVENTS in events:
        return [ALL_EVENTS]
    return list(dict.fromkeys(events))


def subscribed(endpoint: WebhookEndpoint, event_type: str) -> bool:
    return ALL_EVENTS in endpoint.events or event_type in endpoint.events


def endpoint_create(
    *, product: Product, url: str, events: object, enabled: bool = True, description: str = ""
) -> WebhookEndpoint:
    """A new endpoint with a fresh secret; the caller shows `endpoint.secret` once, never again."""
    targets.check(url)
    events = validate_events(events)
    with transaction.atomic():  # the endpoint and the product's endpoint counter (post_save) commit together
        endpoint_room_check(product, lock=True)
        return WebhookEndpoint.objects.create(
            product=product,
            url=url,
            events=events,
            enabled=enabled,
            description=description,
            secret=signing.new_secret(),
        )


def endpoint_room_check(product: Product, *, lock: bool = False) -> None:
    """EndpointLimitReached if the product has WEBHOOK_MAX_ENDPOINTS_PER_PRODUCT endpoints (the admin form asks
    early; endpoint_create asks again with `lock`, under the product row: two concurrent registrations cannot
    both take the last place)."""
    if lock:
        Product.objects.select_for_update(no_key=True).filter(pk=product.pk).values_list("pk").first()
    limit = settings.WEBHOOK_MAX_ENDPOINTS_PER_PRODUCT
    if WebhookEndpoint.objects.filter(product=product).count() >= limit:
        raise EndpointLimitReached(
            f"this product has {limit} webhook endpoints, the most allowed (WEBHOOK_MAX_ENDPOINTS_PER_PRODUCT):"
            " delete one first",
            details={"limit": limit},
        )


def endpoint_update(*, product: Product, endpoint_id: int, changes: Mapping[str, Any]) -> WebhookEndpoint:
    """Change url, events, enabled or description (only those given); the secret changes only by rotation."""
    if "url" in changes:
        targets.check(changes["url"])
    fields = {name: changes[name] for name in ("url", "enabled", "description") if name in changes}
    if "events" in changes:
        fields["events"] = validate_events(changes["events"])
    with transaction.atomic():
        endpoint = endpoint_get(product=product, endpoint_id=endpoint_id)
        for name, value in fields.items():
            setattr(endpoint, name, value)
        endpoint.save(update_fields=[*fields, "updated_at"])
    return endpoint


def endpoint_delete(*, product: Product, endpoint_id: int) -> None:
    """Remove the endpoint with its deliveries and their attempts (nothing more is sent to it)."""
    endpoint_get(product=product, endpoint_id=endpoint_id).delete()


def endpoint_rotate_secret(
    *, product: Product, endpoint_id: int, overlap_seconds: int = DEFAULT_OVERLAP_SECONDS
) -> WebhookEndpoint:
    """A new secret; the current one keeps signing too (a second signature) for `overlap_seconds`.

    Receivers then verify with either while they switch; a later rotation drops any older secret at once.
    """
    if not 0 <= overlap_seconds <= MAX_OVERLAP_SECONDS:
        raise InvalidRequest(
            f"overlapSeconds must be between 0 and {MAX_OVERLAP_SECONDS}", details={"field": "overlapSeconds"}
        )
    with transaction.atomic():
        endpoint = WebhookEndpoint.objects.select_for_update().filter(product=product, pk=endpoint_id).first()
        if endpoint is None:
            raise NotFound(f"no webhook {endpoint_id}")
        overlap = timedelta(seconds=overlap_seconds) if overlap_seconds else None
        endpoint.previous_secret = endpoint.secret if overlap else ""
        endpoint.previous_secret_expires_at = timezone.now() + overlap if overlap else None
        endpoint.secret = signing.new_secret()
        endpoint.save(update_fields=["secret", "previous_secret", "previous_secret_expires_at", "updated_at"])
    return endpoint


def secrets_in_use(endpoint: WebhookEndpoint, now: datetime) -> list[str]:
    """The secrets that sign a delivery now: the current one, and the previous one during its overlap."""
    expires = endpoint.previous_secret_expires_at
    if endpoint.previous_secret and expires is not None and now < expires:
        return [endpoint.secret, endpoint.previous_secret]
    return [endpoint.secret]


def overlap_ends(endpoint: WebhookEndpoint, now: datetime) -> datetime | None:
    expires = endpoint.previous_secret_expires_at
    return expires if endpoint.previous_secret and expires is not None and now < expires else None


def enabled_count_refresh(product_id: str) -> None:
    """Product.webhook_endpoints_enabled := its enabled endpoints, in the transaction that changed one.

    The product row is locked first, so the count (a new statement, a new snapshot) sees every endpoint
    change committed before ours: two concurrent changes cannot both write a count missing the other.
    """
    with transaction.atomic():  # the caller's transaction when it has one (endpoint services, bulk deletes)
        Product.objects.select_for_update(no_key=True).filter(pk=product_id).values_list("pk").first()
        enabled = WebhookEndpoint.objects.filter(product_id=OuterRef("pk"), enabled=True)
        count = Subquery(enabled.order_by().values("product_id").annotate(n=Count("pk")).values("n")[:1])
        Product.objects.filter(pk=product_id).update(webhook_endpoints_enabled=Coalesce(count, 0))

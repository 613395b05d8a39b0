"""Per-key rate limits (R5)."""

from __future__ import annotations

from rest_framework.throttling import SimpleRateThrottle

from .authentication import ProductClient


class PerKeyRateThrottle(SimpleRateThrottle):
    scope = "per_key"

    def get_cache_key(self, request, view):
        if not isinstance(request.user, ProductClient):
            return None  # unauthenticated requests are refused before they cost anything
        return self.cache_format % {"scope": self.scope, "ident": f"{request.user.actor_type}:{request.user.actor_id}"}

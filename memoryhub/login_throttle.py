"""The client address that django-axes counts admin login failures by (AXES_CLIENT_IP_CALLABLE)."""

from __future__ import annotations

from django.conf import settings
from django.http import HttpRequest


def client_address(request: HttpRequest) -> str | None:
    """REMOTE_ADDR; behind ADMIN_LOGIN_TRUSTED_PROXIES proxies, the address the outermost of them saw.

    X-Forwarded-For is counted from the right, where each trusted proxy appended the address it was reached from:
    entries further left are the client's own claims, and a client could pick them to dodge its lock-out.
    """
    remote = request.META.get("REMOTE_ADDR")
    proxies = settings.ADMIN_LOGIN_TRUSTED_PROXIES
    if not proxies:
        return remote
    forwarded = [part.strip() for part in request.META.get("HTTP_X_FORWARDED_FOR", "").split(",") if part.strip()]
    return forwarded[-proxies] if len(forwarded) >= proxies else remote

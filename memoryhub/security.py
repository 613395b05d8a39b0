"""Response headers Django does not set itself: the admin and console's Content-Security-Policy."""

from __future__ import annotations

from django.conf import settings

CSP_PREFIXES = ("/admin/",)  # the admin and the console (/admin/console/): the pages a browser renders with a login


class ContentSecurityPolicyMiddleware:
    """Add settings.CONTENT_SECURITY_POLICY to the admin's and console's responses (Django 5.2 has no CSP)."""

    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        response = self.get_response(request)
        policy = settings.CONTENT_SECURITY_POLICY
        if policy and request.path_info.startswith(CSP_PREFIXES):
            response.headers.setdefault("Content-Security-Policy", policy)
        return response

"""Request metrics by route (the URL pattern, not the raw path, to keep label cardinality bounded)."""

from __future__ import annotations

import hmac
import ipaddress
import os
import time

from django.conf import settings
from django.http import HttpResponse, JsonResponse
from prometheus_client import CONTENT_TYPE_LATEST, CollectorRegistry, generate_latest, multiprocess

from memoryhub.api.handler import envelope
from memoryhub.metrics import LATENCY, REQUESTS


class MetricsMiddleware:
    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        started = time.perf_counter()
        response = self.get_response(request)
        route = route_of(request)
        LATENCY.labels(route=route, method=request.method).observe(time.perf_counter() - started)
        REQUESTS.labels(route=route, method=request.method, status=str(response.status_code)).inc()
        return response


def route_of(request) -> str:
    """The URL pattern; static files (answered by whitenoise before any URL is resolved) count as one route."""
    match = request.resolver_match  # None until a URL pattern matched (Django sets it on every request)
    if match is not None:
        return match.route
    if request.path.startswith(STATIC_PREFIX):
        return STATIC_ROUTE
    return "unmatched"


STATIC_PREFIX = "/" + settings.STATIC_URL.lstrip("/")
STATIC_ROUTE = settings.STATIC_URL.strip("/") + "/<path>"


def metrics_view(request) -> HttpResponse:
    """This process's metrics, or, under gunicorn (PROMETHEUS_MULTIPROC_DIR set), the sum over every worker."""
    if not _admitted(request):
        refused = JsonResponse(envelope("unauthenticated", "/metrics needs METRICS_TOKEN or an allowed address"))
        refused.status_code, refused["WWW-Authenticate"] = 401, "Bearer"
        return refused
    if os.environ.get("PROMETHEUS_MULTIPROC_DIR"):
        registry = CollectorRegistry()
        multiprocess.MultiProcessCollector(registry)
        return HttpResponse(generate_latest(registry), content_type=CONTENT_TYPE_LATEST)
    return HttpResponse(generate_latest(), content_type=CONTENT_TYPE_LATEST)


def _admitted(request) -> bool:
    """METRICS_TOKEN as a bearer token, or a TCP peer in METRICS_ALLOWED_NETWORKS (docs/production.md)."""
    token = settings.METRICS_TOKEN
    sent = request.headers.get("Authorization", "")
    if token and hmac.compare_digest(sent.encode(), f"Bearer {token}".encode()):
        return True
    try:
        peer = ipaddress.ip_address(request.META.get("REMOTE_ADDR", ""))
    except ValueError:
        return False
    return any(peer in network for network in settings.METRICS_ALLOWED_NETWORKS)

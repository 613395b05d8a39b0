"""Request metrics by route (the URL pattern, not the raw path, to keep label cardinality bounded)."""

from __future__ import annotations

import os
import time

from django.http import HttpResponse
from prometheus_client import CONTENT_TYPE_LATEST, CollectorRegistry, generate_latest, multiprocess

from memoryhub.metrics import LATENCY, REQUESTS


class MetricsMiddleware:
    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        started = time.perf_counter()
        response = self.get_response(request)
        match = getattr(request, "resolver_match", None)
        route = match.route if match else "unmatched"
        LATENCY.labels(route=route, method=request.method).observe(time.perf_counter() - started)
        REQUESTS.labels(route=route, method=request.method, status=str(response.status_code)).inc()
        return response


def metrics_view(request) -> HttpResponse:
    """This process's metrics, or, under gunicorn (PROMETHEUS_MULTIPROC_DIR set), the sum over every worker."""
    if os.environ.get("PROMETHEUS_MULTIPROC_DIR"):
        registry = CollectorRegistry()
        multiprocess.MultiProcessCollector(registry)
        return HttpResponse(generate_latest(registry), content_type=CONTENT_TYPE_LATEST)
    return HttpResponse(generate_latest(), content_type=CONTENT_TYPE_LATEST)

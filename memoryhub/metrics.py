"""Prometheus metrics (exported at /metrics)."""

from __future__ import annotations

from prometheus_client import Counter, Histogram

REQUESTS = Counter("memoryhub_http_requests_total", "HTTP requests", ["route", "method", "status"])
LATENCY = Histogram("memoryhub_http_request_seconds", "HTTP request latency", ["route", "method"])
CONFLICTS = Counter("memoryhub_conflicts_total", "Compare-and-set conflicts", ["kind"])
ADMISSION_JUDGE = Counter(
    "memoryhub_admission_judge_total",
    "Second opinions asked of the admission judge, by outcome (admit, refuse, timeout, error)",
    ["outcome"],
)

"""Reading the service's own Prometheus metrics in-process, as /metrics exports them (memoryhub/api/metrics.py).

Under gunicorn (PROMETHEUS_MULTIPROC_DIR set) the values are summed over every worker's files; otherwise they
are this process's. No second store: the dashboard reads exactly what /metrics would print.
"""

from __future__ import annotations

import os
from collections import defaultdict

from prometheus_client import REGISTRY, CollectorRegistry, Metric, multiprocess


def _families() -> list[Metric]:
    if os.environ.get("PROMETHEUS_MULTIPROC_DIR"):
        registry = CollectorRegistry()
        multiprocess.MultiProcessCollector(registry)
        return list(registry.collect())
    return list(REGISTRY.collect())


def counter_by_label(name: str, label: str) -> dict[str, float]:
    """A counter's `<name>_total` samples summed per value of `label`."""
    totals: dict[str, float] = defaultdict(float)
    for family in _families():
        if family.name != name:
            continue
        for sample in family.samples:
            if sample.name == f"{name}_total":
                totals[sample.labels.get(label, "")] += sample.value
    return dict(totals)


def histogram_buckets(name: str, *, route_suffix: str) -> list[tuple[float, float]]:
    """A histogram's cumulative buckets [(upper bound, count)], summed over the routes ending in `route_suffix`
    (every method)."""
    cumulative: dict[float, float] = defaultdict(float)
    for family in _families():
        if family.name != name:
            continue
        for sample in family.samples:
            if sample.name == f"{name}_bucket" and sample.labels.get("route", "").endswith(route_suffix):
                cumulative[float(sample.labels["le"])] += sample.value
    return sorted(cumulative.items())

"""A sample of the `/metrics` page, read as a scraper reads it."""

from __future__ import annotations

from prometheus_client.parser import text_string_to_metric_families
from rest_framework.test import APIClient


def metric(name: str, **labels: str) -> float:
    text = APIClient().get("/metrics").content.decode()
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            if sample.name == name and all(sample.labels.get(k) == v for k, v in labels.items()):
                return sample.value
    return 0.0

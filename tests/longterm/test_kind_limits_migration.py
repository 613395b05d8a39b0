"""Migration longterm 0011: a kind's maxPerUser / defaultTtlDays the admin stored outside the API's bounds."""

from __future__ import annotations

import pytest
from django.db import connection
from django.db.migrations.executor import MigrationExecutor

from memories.longterm.models import MemoryKind
from memories.models import Product

pytestmark = pytest.mark.django_db(transaction=True)

BEFORE = [("longterm", "0010_refresh_one_statement")]
SCHEMA = {"type": "object", "properties": {"note": {"type": "string"}}}


def migrate(targets) -> None:
    MigrationExecutor(connection).migrate(targets)


def test_zero_becomes_null_and_too_large_becomes_the_bound():
    migrate(BEFORE)
    try:
        product = Product.objects.create(name="kinds")  # the kind's columns are the same at 0010
        rows = {
            name: MemoryKind.objects.create(
                product=product, name=name, content_schema=SCHEMA, max_per_user=per_user, default_ttl_days=ttl
            ).pk
            for name, per_user, ttl in [
                ("zero", 0, 0),
                ("over", 100_001, 40_000),
                ("fine", 5, 365),
                ("none", None, None),
            ]
        }
    finally:
        migrate(MigrationExecutor(connection).loader.graph.leaf_nodes())
    limits = {
        name: MemoryKind.objects.filter(pk=pk).values_list("max_per_user", "default_ttl_days").get()
        for name, pk in rows.items()
    }
    assert limits == {"zero": (None, None), "over": (100_000, 36_500), "fine": (5, 365), "none": (None, None)}

"""What a user's erasure removes beyond their rows: the SQLite vector change counter, this process's copies."""

from __future__ import annotations

from django.db import connection

from memories.history import resident, vector_cache
from memories.history.vector_cache import EPOCH_TABLE  # SQLite only: its rows name the user


def forget_user(product_pk: str, user_id: str) -> None:
    """Run after the user's history rows are deleted (their deletion bumps, and so re-creates, the counter row)."""
    if connection.vendor == "sqlite":
        with connection.cursor() as cursor:
            cursor.execute(f"DELETE FROM {EPOCH_TABLE} WHERE product_id = %s AND user_id = %s", [product_pk, user_id])
    resident.forget(product_pk, user_id)
    vector_cache.forget(product_pk, user_id)

"""Delete Idempotency-Key records older than the retention (at least 24 hours)."""
from __future__ import annotations

from django.core.management.base import BaseCommand

from memories.services.idempotency import idempotency_records_purge


class Command(BaseCommand):
    help = "Delete idempotency records older than IDEMPOTENCY_KEY_RETENTION_HOURS."

    def handle(self, *args, **options) -> None:
        self.stdout.write(f"deleted {idempotency_records_purge()} records")

"""Delete Idempotency-Key records older than the retention (at least 24 hours); operationId records stay."""

from __future__ import annotations

from django.core.management.base import BaseCommand

from memories.services.runonce import idempotency_keys_purge
from memoryhub.wording import count


class Command(BaseCommand):
    help = "Delete Idempotency-Key records older than IDEMPOTENCY_KEY_RETENTION_HOURS."

    def handle(self, *args, **options) -> None:
        self.stdout.write(f"deleted {count(idempotency_keys_purge(), 'record')}")

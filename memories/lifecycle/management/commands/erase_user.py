"""Erase a user (or one conversation) of a product now, in this process, and print the receipt."""

from __future__ import annotations

import json

from django.core.management.base import BaseCommand, CommandError

from memories.models import Product
from memoryhub.errors import DomainError
from memoryhub.identifiers import validate_identifier

from ...services.erasure import erasure_preview, erasure_run, erasure_start


class Command(BaseCommand):
    help = "Erase everything memoryhub keeps about a user (docs/data-lifecycle.md); leaves a receipt."

    def add_arguments(self, parser) -> None:
        parser.add_argument("--product", required=True, help="the product id (prd_…)")
        parser.add_argument("--user", required=True)
        parser.add_argument("--conversation", help="erase only this conversation of the user")
        parser.add_argument("--dry-run", action="store_true", help="only print what would be removed")
        parser.add_argument("--operator", default="cli", help="who asked (recorded on the receipt)")

    def handle(self, *args, product: str, user: str, conversation: str | None, dry_run: bool, **options) -> None:
        found = Product.objects.filter(pk=product).first()
        if found is None:
            raise CommandError(f"no product {product!r}")
        try:
            validate_identifier(user, "user")
            if conversation:
                validate_identifier(conversation, "conversation")
            if dry_run:
                counts = erasure_preview(product=found, user_id=user, conversation_id=conversation)
                self.stdout.write(json.dumps({"wouldRemove": counts}, indent=2))
                return
            erasure = erasure_start(
                product=found,
                user_id=user,
                conversation_id=conversation,
                requested_by=f"operator:{options['operator']}",
                schedule=False,
            )
        except DomainError as exc:
            raise CommandError(f"{exc.code}: {exc.message}") from exc
        done = erasure_run(erasure_id=erasure.pk)
        assert done is not None
        self.stdout.write(json.dumps({"erasureId": done.pk, "status": done.status, "counts": done.counts}, indent=2))

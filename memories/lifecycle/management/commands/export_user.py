"""Export a user's data to a gzip JSON Lines file, with a progress bar."""

from __future__ import annotations

from pathlib import Path

from django.core.management.base import BaseCommand, CommandError
from tqdm import tqdm

from memories.models import Product
from memoryhub.errors import DomainError
from memoryhub.identifiers import validate_identifier

from ...services.export import exported_rows, write_export


class Command(BaseCommand):
    help = "Export everything memoryhub keeps about a user (docs/data-lifecycle.md) as gzip JSON Lines."

    def add_arguments(self, parser) -> None:
        parser.add_argument("--product", required=True, help="the product id (prd_…)")
        parser.add_argument("--user", required=True)
        parser.add_argument("--output", required=True, help="the file to write (gzip JSON Lines)")

    def handle(self, *args, product: str, user: str, output: str, **options) -> None:
        found = Product.objects.filter(pk=product).first()
        if found is None:
            raise CommandError(f"no product {product!r}")
        try:
            validate_identifier(user, "user")
        except DomainError as exc:
            raise CommandError(exc.message) from exc
        total = sum(len(pks) for pks in exported_rows(found, user).values())
        with tqdm(total=total, unit="record", desc=f"export {user}", file=self.stderr._out) as bar:
            counts = write_export(Path(output), found, user, progress=bar.update)
        self.stdout.write(f"Wrote {sum(counts.values())} records to {output}: {counts}")

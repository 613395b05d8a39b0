"""Create a product and its first API key; the key is shown once."""

from __future__ import annotations

import json

from django.core.management.base import BaseCommand

from memories.services.products import product_create


class Command(BaseCommand):
    help = "Create a product with one API key (printed once; only its hash is stored)."

    def add_arguments(self, parser) -> None:
        parser.add_argument("--name", required=True)
        parser.add_argument("--json", action="store_true", help="print one JSON line {productId, apiKey} last")

    def handle(self, *args, name: str, json: bool, **options) -> None:
        product, issued = product_create(name=name)
        if json:
            self.stdout.write(_json_line(product.pk, issued.plaintext))
            return
        self.stdout.write(self.style.SUCCESS(f"Created product {product.name!r} ({product.pk})."))
        self.stdout.write(f"API key (shown once, store it now): {issued.plaintext}")


def _json_line(product_id: str, key: str) -> str:
    return json.dumps({"productId": product_id, "apiKey": key})

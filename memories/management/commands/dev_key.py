"""The development key of `python3 dev.py serve`: one `dev` product whose key survives restarts.

The key's plaintext is kept in a file readable only by its owner (mode 0600; only its hash is in the
database). Every run prints it again; `--new-key` issues a new one for the same product and revokes the old.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

from django.core.management.base import BaseCommand
from django.db import transaction

from memories.models import Product
from memories.services.products import api_key_authenticate, api_key_create, api_key_revoke, product_create

PRODUCT_NAME = "dev"


class Command(BaseCommand):
    help = "Print the dev product's API key, kept in --file (created, or rotated with --new-key)."

    def add_arguments(self, parser) -> None:
        parser.add_argument("--file", required=True, help="where the key is kept (mode 0600)")
        parser.add_argument("--new-key", action="store_true", help="issue a new key and revoke the old one")

    def handle(self, *args, file: str, new_key: bool, **options) -> None:
        path = Path(file)
        stored = _read(path)
        current = api_key_authenticate(stored.get("apiKey", "")) if stored.get("apiKey") else None
        if current is not None and current.product_id != stored.get("productId"):
            current = None  # a key of another product: not ours to reuse or revoke
        if current is not None and not new_key:
            _write(path, stored)  # re-asserts the file mode
            self.stdout.write(json.dumps({**stored, "reused": True}))
            return
        with transaction.atomic():
            product = _dev_product(stored.get("productId"))
            if product is None:
                product, issued = product_create(name=PRODUCT_NAME)
            else:
                issued = api_key_create(product=product, name=PRODUCT_NAME)
            if current is not None:
                api_key_revoke(api_key=current)
        kept = {"productId": product.pk, "apiKey": issued.plaintext}
        _write(path, kept)
        self.stdout.write(json.dumps({**kept, "reused": False, "rotated": current is not None}))


def _dev_product(product_id: str | None) -> Product | None:
    """The product of the kept key, else the oldest product named `dev` (its data stays reachable)."""
    if product_id and (product := Product.objects.filter(pk=product_id).first()) is not None:
        return product
    return Product.objects.filter(name=PRODUCT_NAME).order_by("created_at").first()


def _read(path: Path) -> dict:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


def _write(path: Path, data: dict) -> None:
    """Write through a new 0600 file and an atomic rename: the key is never readable by others, not even briefly."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + ".tmp")
    tmp.unlink(missing_ok=True)
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(fd, "w", encoding="utf-8") as handle:
        handle.write(json.dumps({"productId": data["productId"], "apiKey": data["apiKey"]}) + "\n")
    os.chmod(tmp, 0o600)  # whatever the umask
    os.replace(tmp, path)

from __future__ import annotations

import hashlib
import hmac
import secrets
from dataclasses import dataclass

from django.utils import timezone

from memories.models import ApiKey, Product
from memoryhub.prepared import PreparedSelect

KEY_PREFIX = "mhk_"


@dataclass(frozen=True)
class IssuedKey:
    api_key: ApiKey
    plaintext: str  # shown once, never stored


def hash_key(plaintext: str) -> str:
    return hashlib.sha256(plaintext.encode()).hexdigest()


def product_create(*, name: str) -> tuple[Product, IssuedKey]:
    product = Product.objects.create(name=name)
    return product, api_key_create(product=product, name="default")


def api_key_create(*, product: Product, name: str = "") -> IssuedKey:
    prefix = secrets.token_hex(6)
    plaintext = f"{KEY_PREFIX}{prefix}_{secrets.token_urlsafe(32)}"
    api_key = ApiKey.objects.create(product=product, name=name, prefix=prefix, key_hash=hash_key(plaintext))
    return IssuedKey(api_key=api_key, plaintext=plaintext)


def api_key_revoke(*, api_key: ApiKey) -> None:
    ApiKey.objects.filter(pk=api_key.pk, revoked_at__isnull=True).update(revoked_at=timezone.now())


# Every request runs this lookup: compiled once (memoryhub/prepared.py), planned once per connection on
# PostgreSQL (migration 0015), the product row read fresh each time.
_ACTIVE_KEY = PreparedSelect(
    ApiKey,
    lambda prefix: ApiKey.objects.select_related("product").filter(prefix=prefix, revoked_at__isnull=True)[:1],
    arity=1,
    function="memoryhub_active_api_key",
)


def api_key_authenticate(plaintext: str) -> ApiKey | None:
    """Return the active key matching `plaintext`, comparing hashes in constant time."""
    if not plaintext.startswith(KEY_PREFIX):
        return None
    prefix = plaintext[len(KEY_PREFIX) :].split("_", 1)[0]
    api_key = _ACTIVE_KEY.first(prefix)
    if api_key is None or not hmac.compare_digest(api_key.key_hash, hash_key(plaintext)):
        return None
    return api_key

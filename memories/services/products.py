from __future__ import annotations

import hashlib
import hmac
import secrets
from dataclasses import dataclass

from django.db.models.expressions import RawSQL
from django.utils import timezone

from memories.models import ApiKey, Product
from memoryhub.admin_base import log_actions
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
    prefix = _prefix(plaintext)
    return _matching(_ACTIVE_KEY.first(prefix) if prefix else None, plaintext)


def _prefix(plaintext: str) -> str | None:
    return plaintext[len(KEY_PREFIX) :].split("_", 1)[0] if plaintext.startswith(KEY_PREFIX) else None


def _matching(api_key: ApiKey | None, plaintext: str) -> ApiKey | None:
    if api_key is None or not hmac.compare_digest(api_key.key_hash, hash_key(plaintext)):
        return None
    return api_key


@dataclass(frozen=True)
class KeySnapshot:
    """An active key and its product as read at one moment, with the versions their rows had then.

    A write may check its key in its own statement instead of looking it up first
    (`memoryhub_memory_cas_for_key`, migration 0017): the statement writes only if neither row has changed
    (a row's version: `xmin/ctid`, which every update changes; the migration says why).
    """

    api_key: ApiKey
    key_version: str
    product_version: str


_ROW_VERSION = "{table}.xmin::text || '/' || {table}.ctid::text"  # as migration 0017 compares it


class KeyChanged(Exception):
    """The key or its product changed since the snapshot (or the key was revoked): nothing was written."""


def api_key_snapshot(plaintext: str) -> KeySnapshot | None:
    """The active key matching `plaintext` with its row versions, read in one query (PostgreSQL only)."""
    prefix = _prefix(plaintext)
    if prefix is None:
        return None
    versions = {
        "key_version": RawSQL(_ROW_VERSION.format(table=ApiKey._meta.db_table), ()),
        "product_version": RawSQL(_ROW_VERSION.format(table=Product._meta.db_table), ()),
    }
    active = ApiKey.objects.select_related("product").filter(prefix=prefix, revoked_at__isnull=True)
    api_key = _matching(active.annotate(**versions).first(), plaintext)
    if api_key is None:
        return None
    return KeySnapshot(api_key, api_key.key_version, api_key.product_version)  # type: ignore[attr-defined]


def api_key_revoke_audited(*, api_key: ApiKey, user) -> bool:
    """Revoke as the operator `user`, recorded as an admin LogEntry; False when the key was already revoked."""
    if api_key.revoked_at is not None:
        return False
    api_key_revoke(api_key=api_key)
    log_actions(user, [api_key], f"Revoked the API key {api_key.prefix}…")
    return True

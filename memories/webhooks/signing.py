"""Standard Webhooks signatures: `v1,<base64 HMAC-SHA256 of "<webhook-id>.<webhook-timestamp>.<body>">`.

Secrets are `whsec_` + base64 of 24 random bytes, the format the standardwebhooks libraries read.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import secrets

PREFIX = "whsec_"


def new_secret() -> str:
    return PREFIX + base64.b64encode(secrets.token_bytes(24)).decode()


def _key(secret: str) -> bytes:
    return base64.b64decode(secret.removeprefix(PREFIX))


def sign(secret: str, msg_id: str, timestamp: int, body: bytes) -> str:
    digest = hmac.new(_key(secret), f"{msg_id}.{timestamp}.".encode() + body, hashlib.sha256).digest()
    return "v1," + base64.b64encode(digest).decode()


def signature_header(secrets_in_use: list[str], msg_id: str, timestamp: int, body: bytes) -> str:
    """Space-separated signatures, one per secret (two while a rotated secret's overlap lasts)."""
    return " ".join(sign(secret, msg_id, timestamp, body) for secret in secrets_in_use)

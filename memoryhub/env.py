"""Typed environment parsers; a malformed value raises ImproperlyConfigured at start-up."""

from __future__ import annotations

import os
from collections.abc import Mapping

from django.core.exceptions import ImproperlyConfigured

_TRUE = {"1", "true", "yes", "on"}
_FALSE = {"0", "false", "no", "off", ""}


def env_str(name: str, default: str | None = None, environ: Mapping[str, str] = os.environ) -> str | None:
    value = environ.get(name)
    return default if value is None or value.strip() == "" else value.strip()


def env_bool(name: str, default: bool = False, environ: Mapping[str, str] = os.environ) -> bool:
    value = environ.get(name)
    if value is None:
        return default
    lowered = value.strip().lower()
    if lowered in _TRUE:
        return True
    if lowered in _FALSE:
        return False
    raise ImproperlyConfigured(f"{name} must be a boolean (1/0, true/false), got {value!r}")


def env_int(name: str, default: int, *, minimum: int | None = None, environ: Mapping[str, str] = os.environ) -> int:
    value = env_str(name, None, environ)
    if value is None:
        return default
    try:
        parsed = int(value)
    except ValueError:
        raise ImproperlyConfigured(f"{name} must be an integer, got {value!r}") from None
    if minimum is not None and parsed < minimum:
        raise ImproperlyConfigured(f"{name} must be at least {minimum}, got {parsed}")
    return parsed


def env_list(name: str, default: list[str], environ: Mapping[str, str] = os.environ) -> list[str]:
    value = env_str(name, None, environ)
    if value is None:
        return list(default)
    return [item.strip() for item in value.split(",") if item.strip()]


def env_url(name: str, schemes: tuple[str, ...], environ: Mapping[str, str] = os.environ) -> str | None:
    value = env_str(name, None, environ)
    if value is not None and not value.startswith(tuple(f"{scheme}://" for scheme in schemes)):
        raise ImproperlyConfigured(f"{name} must start with one of {', '.join(s + '://' for s in schemes)}")
    return value

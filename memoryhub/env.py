"""Typed environment parsers; a malformed value raises ImproperlyConfigured at start-up."""

from __future__ import annotations

import ipaddress
import os
from collections.abc import Mapping
from typing import overload

from django.core.exceptions import ImproperlyConfigured

IPNetwork = ipaddress.IPv4Network | ipaddress.IPv6Network

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


def env_int(
    name: str,
    default: int,
    *,
    minimum: int | None = None,
    maximum: int | None = None,
    environ: Mapping[str, str] = os.environ,
) -> int:
    value = env_str(name, None, environ)
    if value is None:
        return default
    try:
        parsed = int(value)
    except ValueError:
        raise ImproperlyConfigured(f"{name} must be an integer, got {value!r}") from None
    if minimum is not None and parsed < minimum:
        raise ImproperlyConfigured(f"{name} must be at least {minimum}, got {parsed}")
    if maximum is not None and parsed > maximum:
        raise ImproperlyConfigured(f"{name} must be at most {maximum}, got {parsed}")
    return parsed


@overload
def env_float(name: str, default: float, *, bounds: tuple[float, float], environ: Mapping[str, str] = ...) -> float: ...
@overload
def env_float(
    name: str, default: None, *, bounds: tuple[float, float], environ: Mapping[str, str] = ...
) -> float | None: ...
def env_float(
    name: str, default: float | None, *, bounds: tuple[float, float], environ: Mapping[str, str] = os.environ
) -> float | None:
    value = env_str(name, None, environ)
    if value is None:
        return default
    try:
        parsed = float(value)
    except ValueError:
        raise ImproperlyConfigured(f"{name} must be a number, got {value!r}") from None
    if not bounds[0] <= parsed <= bounds[1]:  # NaN fails too
        raise ImproperlyConfigured(f"{name} must be between {bounds[0]} and {bounds[1]}, got {value!r}")
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


def env_networks(name: str, default: list[str], environ: Mapping[str, str] = os.environ) -> list[IPNetwork]:
    """A comma-separated list of addresses or CIDR networks (`10.0.0.0/8,::1`)."""
    networks = []
    for item in env_list(name, default, environ):
        try:
            networks.append(ipaddress.ip_network(item, strict=False))
        except ValueError:
            raise ImproperlyConfigured(f"{name} must list IP addresses or networks, got {item!r}") from None
    return networks


def env_origins(name: str, environ: Mapping[str, str] = os.environ) -> list[str]:
    """Origins with their scheme (`https://memoryhub.example.com`), as Django's CSRF_TRUSTED_ORIGINS wants them."""
    origins = env_list(name, [], environ)
    for origin in origins:
        if not origin.startswith(("http://", "https://")):
            raise ImproperlyConfigured(f"{name} must list origins starting with https:// or http://, got {origin!r}")
    return origins


def env_proxy_ssl_header(name: str, environ: Mapping[str, str] = os.environ) -> tuple[str, str] | None:
    """A request header a TLS-terminating proxy sets (`X-Forwarded-Proto`), as Django's SECURE_PROXY_SSL_HEADER.

    `X-Forwarded-Proto` means "https when the header says https"; `Header: value` names another value.
    """
    value = env_str(name, None, environ)
    if value is None:
        return None
    header, _, expected = value.partition(":")
    header, expected = header.strip(), expected.strip() or "https"
    if not header or not all(c.isalnum() or c == "-" for c in header):
        raise ImproperlyConfigured(f"{name} must be a header name such as X-Forwarded-Proto, got {value!r}")
    return "HTTP_" + header.upper().replace("-", "_"), expected

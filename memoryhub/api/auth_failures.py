"""Failed authentication, throttled by client address (docs/contract.md#rate-limits).

Every unknown, revoked or malformed key or tool token counts against the caller's address (REMOTE_ADDR: the TCP
peer, never a header the client writes) in a fixed window shared through the cache. Past the limit the failure
answers 429 instead of 401, and this process refuses that address's requests before any lookup until the window
ends — except for keys it has itself verified lately, so a working client behind the same address (a NAT, a
load balancer) keeps working. A successful request costs no cache round trip for this.
"""

from __future__ import annotations

import time

from django.core.cache import cache
from rest_framework.exceptions import Throttled
from rest_framework.settings import api_settings

SCOPE = "auth_failures"
_blocked: dict[str, float] = {}  # address → time until which this process refuses its unverified keys
_verified: dict[str, None] = {}  # digests of keys this process authenticated (insertion-ordered, bounded)
_MAX_ENTRIES = 10_000
# A sentence of its own: DRF appends "Expected available in N seconds." as it does to a key's "Request was
# throttled."
REFUSED = "Too many failed authentications from this address."


def refuse_if_blocked(request, digest: str) -> None:
    """Raise Throttled for an address over its failure limit, unless this process has verified `digest`."""
    address = _address(request)
    until = _blocked.get(address)
    if until is None or digest in _verified:
        return
    left = until - time.time()
    if left <= 0:
        _blocked.pop(address, None)
        return
    raise Throttled(wait=left, detail=REFUSED)


def verified(digest: str) -> None:
    if digest not in _verified:
        if len(_verified) >= _MAX_ENTRIES:
            _verified.pop(next(iter(_verified)))
        _verified[digest] = None


def failed(request) -> None:
    """Count one failed authentication; raise Throttled once the address is over its limit."""
    rate = api_settings.DEFAULT_THROTTLE_RATES.get(SCOPE)
    if not rate:
        return
    limit, duration = _parse_rate(rate)
    address, now = _address(request), time.time()
    window = int(now // duration)
    key = f"throttle_{SCOPE}_{address}:{window}"
    cache.add(key, 0, 2 * duration)
    if cache.incr(key) <= limit:
        return
    if len(_blocked) >= _MAX_ENTRIES:
        _blocked.clear()
    _blocked[address] = (window + 1) * duration
    raise Throttled(wait=(window + 1) * duration - now, detail=REFUSED)


def reset() -> None:
    """Forget this process's blocks and verified keys (tests)."""
    _blocked.clear()
    _verified.clear()


def _parse_rate(rate: str) -> tuple[int, int]:
    """DRF's rate syntax: `60/min`, `10/s`, `1000/hour`, `5000/day`."""
    count, period = rate.split("/")
    return int(count), {"s": 1, "m": 60, "h": 3600, "d": 86400}[period[0]]


def _address(request) -> str:
    return request.META.get("REMOTE_ADDR") or "unknown"

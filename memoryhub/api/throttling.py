"""Per-key rate limits (R5): a sliding window estimated from two fixed windows, one cache round trip."""

from __future__ import annotations

from django.core.cache import cache
from rest_framework.throttling import SimpleRateThrottle

from memoryhub import working_set

from .authentication import ProductClient


class PerKeyRateThrottle(SimpleRateThrottle):
    """At most `num_requests` per `duration` per key; a refused request does not count.

    DRF's SimpleRateThrottle keeps every request's timestamp in one cache entry and rewrites it on each
    request: two round trips, and a list as long as the rate to unpickle and pickle (6,000 floats at the
    default rate). Here each window of `duration` seconds has a counter; the count over the sliding window
    ending now is the current window's count plus the previous window's, weighted by the share of it the
    sliding window still covers. One round trip (a Redis pipeline), constant size.
    """

    scope = "per_key"

    def get_cache_key(self, request, view):
        if not isinstance(request.user, ProductClient):
            return None  # unauthenticated requests are refused before they cost anything
        return self.cache_format % {"scope": self.scope, "ident": f"{request.user.actor_type}:{request.user.actor_id}"}

    def allow_request(self, request, view) -> bool:
        if self.rate is None:
            return True
        self.key = self.get_cache_key(request, view)
        if self.key is None:
            return True
        window, elapsed = divmod(self.timer(), self.duration)
        current_key, previous_key = f"{self.key}:{int(window)}", f"{self.key}:{int(window) - 1}"
        scopes, writes = getattr(view, "working_set_scopes", None), getattr(view, "working_set_writes", None)
        current, previous, request.working_set_prefetch, request.working_set_invalidated = _count(
            current_key,  # current includes this request
            previous_key,
            ttl=2 * self.duration,
            scopes=scopes(request) if scopes else (),
            invalidations=writes(request) if writes else (),
        )
        remaining = 1 - elapsed / self.duration  # share of the previous window still inside the sliding one
        if previous * remaining + current <= self.num_requests:
            return True
        _uncount(current_key)
        self._wait = _wait(current - 1, previous, elapsed, self.num_requests, self.duration)
        return False

    def wait(self) -> float | None:
        return getattr(self, "_wait", None)


def _wait(current: int, previous: int, elapsed: float, limit: int, duration: float) -> float:
    """Seconds until one more request fits (`current` and `previous` without the refused request)."""
    if current < limit and previous:
        # Still in this window: wait until enough of the previous window has slid out.
        return max(duration * (1 - (limit - current - 1) / previous) - elapsed, 1.0)
    # The next window, where this window's count is the weighted one.
    later = duration * (1 - (limit - 1) / current) if current > limit - 1 else 0.0
    return max(duration - elapsed + later, 1.0)


def _count(
    current_key: str, previous_key: str, *, ttl: int, scopes=(), invalidations=()
) -> tuple[int, int, dict, list[str]]:
    """Count this request in the current window; return (current, previous) counts, the entries read and
    the keys invalidated.

    With Redis, the working-set entries the view declares (`view.working_set_scopes(request)`, read by the
    view inside `working_set.prefetched`) are read in the same round trip: a prepare's scenario, round
    counter and sources cost no round trip of their own. Likewise the tombstones of the entries a valid
    write will replace (`view.working_set_writes(request)`, the write then runs inside
    `working_set.invalidated_ahead`): a memory PUT pays one cache round trip, not two.
    """
    client = _redis_client()
    if client is None:
        cache.add(current_key, 0, ttl)
        return cache.incr(current_key), int(cache.get(previous_key) or 0), {}, []
    current_name, previous_name = cache.make_key(current_key), cache.make_key(previous_key)
    pipeline = client.pipeline(transaction=False)
    pipeline.incr(current_name)
    pipeline.expire(current_name, ttl)
    pipeline.get(previous_name)
    invalidated = working_set.queue_invalidations(pipeline, invalidations)
    decode = working_set.queue_reads(pipeline, scopes)
    current, _, previous, *replies = pipeline.execute()
    reads = replies[len(invalidated) :]
    return int(current), int(previous or 0), decode(reads[0] if reads else None), invalidated


def _uncount(current_key: str) -> None:
    client = _redis_client()
    if client is None:
        cache.decr(current_key)
    else:
        client.decr(cache.make_key(current_key))


def _redis_client():
    """The raw Redis client behind django-redis (its counters are plain integers), else None."""
    get_client = getattr(getattr(cache, "client", None), "get_client", None)
    return get_client(write=True) if get_client else None

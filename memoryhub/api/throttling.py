"""Rate limits (R5): per key or token and per product, each a sliding window estimated from two fixed windows,
all counted in one cache round trip. Failed authentication is throttled by address (auth_failures.py)."""

from __future__ import annotations

from django.core.cache import cache
from rest_framework.throttling import SimpleRateThrottle

from memoryhub import working_set

from .authentication import ProductClient
from .plan import Admission, plan_of


class PerKeyRateThrottle(SimpleRateThrottle):
    """At most `num_requests` per `duration` per key or tool token, and per product over all of its keys and
    tokens (the `per_product` rate; minting tokens does not escape it); a refused request does not count.

    DRF's SimpleRateThrottle keeps every request's timestamp in one cache entry and rewrites it on each
    request: two round trips, and a list as long as the rate to unpickle and pickle (6,000 floats at the
    default rate). Here each window of `duration` seconds has a counter; the count over the sliding window
    ending now is the current window's count plus the previous window's, weighted by the share of it the
    sliding window still covers. One round trip (a Redis pipeline) for both counters, constant size.
    """

    scope = "per_key"
    product_scope = "per_product"
    _wait: float | None = None

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
        limits = [(self.key, self.num_requests, self.duration)]
        product_rate = self.THROTTLE_RATES.get(self.product_scope)
        if product_rate:
            product_requests, product_duration = self.parse_rate(product_rate)
            product_key = self.cache_format % {"scope": self.product_scope, "ident": request.user.product.pk}
            limits.append((product_key, product_requests, product_duration))
        now = self.timer()
        windows = [_Window(key, limit, duration, now) for key, limit, duration in limits]
        plan = plan_of(request)  # memoryhub/api/plan.py: None for a view that does not plan
        counts, prefetched, invalidated = _count(
            windows,
            scopes=plan.prefetch if plan else (),
            invalidations=plan.tombstones if plan else (),
        )
        waits = [window.wait(*count) for window, count in zip(windows, counts, strict=True)]
        self._wait = max((wait for wait in waits if wait), default=None)
        if plan is not None:
            plan.admission = Admission(self._wait, prefetched, tuple(invalidated))
        if self._wait is None:
            return True
        _uncount([window.current_key for window in windows])
        return False

    def wait(self) -> float | None:
        return self._wait


class _Window:
    """One limit's two fixed windows at time `now`: the current one (counting this request) and the previous."""

    def __init__(self, key: str, limit: int, duration: int, now: float) -> None:
        window, self.elapsed = divmod(now, duration)
        self.current_key, self.previous_key = f"{key}:{int(window)}", f"{key}:{int(window) - 1}"
        self.limit, self.duration, self.ttl = limit, duration, 2 * duration

    def wait(self, current: int, previous: int) -> float | None:
        """None if this request fits, else the seconds until one more would."""
        remaining = 1 - self.elapsed / self.duration  # share of the previous window still inside the sliding one
        if previous * remaining + current <= self.limit:
            return None
        return _wait(current - 1, previous, self.elapsed, self.limit, self.duration)


def _wait(current: int, previous: int, elapsed: float, limit: int, duration: float) -> float:
    """Seconds until one more request fits (`current` and `previous` without the refused request)."""
    if current < limit and previous:
        # Still in this window: wait until enough of the previous window has slid out.
        return max(duration * (1 - (limit - current - 1) / previous) - elapsed, 1.0)
    # The next window, where this window's count is the weighted one.
    later = duration * (1 - (limit - 1) / current) if current > limit - 1 else 0.0
    return max(duration - elapsed + later, 1.0)


def _count(windows: list[_Window], *, scopes=(), invalidations=()) -> tuple[list[tuple[int, int]], dict, list[str]]:
    """Count this request in every window's current count; return each (current, previous), the entries read and
    the keys invalidated.

    With Redis, the working-set entries the request's plan prefetches (`EdgePlan.prefetch`, read by the view
    inside `working_set.prefetched`) are read in the same round trip: a prepare's scenario, round counter and
    sources cost no round trip of their own. Likewise the tombstones of the entries its valid write will
    replace (`EdgePlan.tombstones`, the write then runs inside `working_set.invalidated_ahead`): a memory PUT
    pays one cache round trip, not two.
    """
    client = _redis_client()
    if client is None:  # the local-memory cache: per process (docs/production.md#rate-limits)
        counts = []
        for window in windows:
            cache.add(window.current_key, 0, window.ttl)
            counts.append((cache.incr(window.current_key), int(cache.get(window.previous_key) or 0)))
        return counts, {}, []
    pipeline = client.pipeline(transaction=False)
    for window in windows:
        current_name = cache.make_key(window.current_key)
        pipeline.incr(current_name)
        pipeline.expire(current_name, window.ttl)
        pipeline.get(cache.make_key(window.previous_key))
    invalidated = working_set.queue_invalidations(pipeline, invalidations)
    decode = working_set.queue_reads(pipeline, scopes)
    replies = pipeline.execute()
    counted, rest = replies[: 3 * len(windows)], replies[3 * len(windows) :]
    counts = [(int(counted[i]), int(counted[i + 2] or 0)) for i in range(0, len(counted), 3)]
    reads = rest[len(invalidated) :]
    return counts, decode(reads[0] if reads else None), invalidated


def _uncount(current_keys: list[str]) -> None:
    client = _redis_client()
    if client is None:
        for key in current_keys:
            cache.decr(key)
        return
    pipeline = client.pipeline(transaction=False)
    for key in current_keys:
        pipeline.decr(cache.make_key(key))
    pipeline.execute()


def _redis_client():
    """The raw Redis client behind django-redis (its counters are plain integers), else None."""
    get_client = getattr(getattr(cache, "client", None), "get_client", None)
    return get_client(write=True) if get_client else None

"""The edge plan: what a request needs before its view runs, computed once, from validated input only.

A view that plans (`PlannedView`, memoryhub/api/views.py) declares a `Planner`: for each HTTP method it plans, a
function from the authenticated request and its URL arguments to `Planned` (the validated input, the working-set
entries to prefetch, the tombstones to write ahead), and the methods whose write checks the key in its own SQL
statement. `PlannedView.initial` builds the request's `EdgePlan` once, after authentication and permissions and
before the rate limit, and attaches it to the request; the rate limiter (throttling.py) sends the plan's cache
work in its one round trip and records its `Admission` in the plan; the view reads all of it through
`plan_of(request)`. Nothing reads a request attribute or a view hook by name, and nothing calls back into a view.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from typing import Any, Generic, TypeVar, cast

from rest_framework.exceptions import AuthenticationFailed, ValidationError
from rest_framework.request import Request

from memoryhub.errors import DomainError
from memoryhub.working_set import Scope

from .authentication import ProductClient

T = TypeVar("T")

# Refusals the view answers after the request is counted (invalid input); any other refusal met while planning
# (a body that is not JSON, of another media type, too large…) is answered before it counts.
INPUT_REFUSALS = (DomainError, ValidationError)


@dataclass(frozen=True)
class Planned(Generic[T]):
    """What a planner found in a request whose input is valid."""

    input: T  # the validated input, in the form the view passes to its service
    prefetch: tuple[Scope, ...] = ()  # entries the view will read: fetched in the rate limiter's round trip
    tombstones: tuple[Scope, ...] = ()  # entries the write will replace: invalidated in that round trip


# Receives the authenticated request and the URL's keyword arguments; raises on invalid input.
PlanFunction = Callable[[Request, Mapping[str, Any]], Planned[Any]]


@dataclass(frozen=True)
class Planner:
    """A view's declaration: how each planned method is planned, and which methods' writes check the key."""

    methods: Mapping[str, PlanFunction] = field(default_factory=dict)
    # memories/api/authentication.py: for these methods a known key is taken from its snapshot without a lookup,
    # because the write's own statement checks it (e.g. the memory PUT with `memoryhub_memory_cas_for_key`).
    key_checked_by_write: frozenset[str] = frozenset()


NO_PLANNER = Planner()


@dataclass(frozen=True)
class Admission:
    """The rate limiter's decision and what its one round trip did for the plan."""

    wait: float | None = None  # None: admitted; else the seconds until one more request fits
    prefetched: Mapping[str, object] = field(default_factory=dict)  # the prefetched entries, by cache key
    invalidated: tuple[str, ...] = ()  # the cache keys whose tombstones were written


@dataclass
class EdgePlan(Generic[T]):
    """One request's plan. Made by `make_plan`; the rate limiter sets `admission`; `confirm_key` may replace the
    client (and then drops what was planned for the old one, which `PlannedView.confirm_key` plans again)."""

    client: ProductClient | None
    input: T | None = None
    refusal: Exception | None = None  # why the input is invalid: raised by `validated()`
    prefetch: tuple[Scope, ...] = ()
    tombstones: tuple[Scope, ...] = ()
    admission: Admission = field(default_factory=Admission)

    def validated(self) -> T:
        """The planned input, or its refusal raised."""
        if self.refusal is not None:
            raise self.refusal
        return cast(T, self.input)

    @property
    def refused_before_counting(self) -> bool:
        return self.refusal is not None and not isinstance(self.refusal, INPUT_REFUSALS)

    def confirm_key(self, request: Request) -> bool:
        """Look up a key taken from its snapshot (memoryhub/api/authentication.py `ProductClient.confirm`).

        The caller becomes the key as it is now; AuthenticationFailed if it is no longer active. Returns True if
        the key or its product changed since the snapshot: the plan then keeps nothing made for the old one.
        """
        client = self.client
        if client is None or client.confirm is None:
            return False
        self._become(request, replace(client, confirm=None))  # looked up once per request, even if it fails
        try:
            fresh, changed = client.confirm(request)
        except AuthenticationFailed:
            self._become(request, None)
            raise
        self._become(request, fresh)
        if changed:
            self.input, self.refusal, self.prefetch, self.tombstones = None, None, (), ()
            self.admission = replace(self.admission, prefetched={}, invalidated=())
        return changed

    def _become(self, request: Request, client: ProductClient | None) -> None:
        self.client = request.user = client  # DRF's request.user stays the plan's client


def make_plan(planner: Planner, request: Request, url_kwargs: Mapping[str, Any]) -> EdgePlan[Any]:
    """The request's plan: its client and what its method's planner finds (or the refusal it raised)."""
    plan: EdgePlan[Any] = EdgePlan(client=request.user)
    plan_input(plan, planner, request, url_kwargs, cache_work=True)
    return plan


def plan_input(
    plan: EdgePlan[Any], planner: Planner, request: Request, url_kwargs: Mapping[str, Any], *, cache_work: bool
) -> None:
    """Fill in what the planner finds for the plan's client; without `cache_work` (a plan made again after the
    key changed, its round trip spent) it keeps no entries to prefetch or invalidate."""
    function = planner.methods.get(request.method or "")
    if function is None:
        return
    try:
        planned = function(request, url_kwargs)
    except Exception as refusal:  # answered by the view (or before counting, see INPUT_REFUSALS)
        plan.input, plan.refusal = None, refusal
        return
    plan.input, plan.refusal = planned.input, None
    if cache_work:
        plan.prefetch, plan.tombstones = tuple(planned.prefetch), tuple(planned.tombstones)


class PlannedRequest(Request):
    """DRF's request with its plan: set once by `PlannedView.initial`."""

    plan: EdgePlan[Any] | None = None


def plan_of(request: object) -> EdgePlan[Any] | None:
    """The request's plan; None for a request of a view that does not plan (or before its plan is made)."""
    return request.plan if isinstance(request, PlannedRequest) else None

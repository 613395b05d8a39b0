"""The operator dashboard's figures (docs/console.md): one product, the last 24 hours, each figure with the
admin changelist URL that lists exactly the rows it counts.

Everything is read from the database, except the compare-and-set conflicts and the search latency, which are
the service's own Prometheus metrics (the /metrics counters and histogram, summed over every gunicorn worker
when PROMETHEUS_MULTIPROC_DIR is set) and therefore cover every product since the processes started.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from urllib.parse import urlencode

from django.db.models import Count
from django.urls import NoReverseMatch, reverse
from django.utils import timezone
from django.utils.functional import Promise
from django.utils.translation import gettext_lazy as _

from diaries.models import DiaryPlanRecord
from memories.console import metrics_read
from memories.console.services import rerunnable_jobs
from memories.hinos.models import FailedHinosCommit
from memories.longterm.models import AdmissionRefusal
from memories.models import Product, Turn
from tables.models import TableEditRecord

# The view permission of every kind of row the dashboard reads (names, ids, failure reasons): a staff user who lacks
# one of them sees no dashboard at all (docs/console.md, "Who sees what"). Superusers have them all.
DASHBOARD_PERMISSIONS = (
    "memories.view_product",
    "memories.view_turn",
    "hinos.view_failedhinoscommit",
    "diaries.view_diaryplanrecord",
    "tables.view_tableeditrecord",
    "longterm.view_admissionrefusal",
)
WINDOW = timedelta(hours=24)
SEARCH_ROUTE_SUFFIX = "memories/search"  # the route label of POST/GET /v1/users/{u}/memories/search
FAILED_JOBS_SHOWN = 10
# The conflict metric's `kind` label → the admin list of the rows of that kind.
CONFLICT_KIND_LISTS = {
    "memory_document": "memories_memorydocument",
    "memory_table": "tables_memorytable",
    "long_term_memory": "longterm_longtermmemory",
    "conversation_state": "state_conversationstate",
    "story_snapshot": "story_storysnapshot",
}


@dataclass(frozen=True)
class Figure:
    label: str | Promise  # a runtime or code as stored, or a lazily translated label
    value: int | float | None
    url: str


@dataclass(frozen=True)
class FailedJob:
    turn: Turn
    work: str
    reason: str
    rerun_url: str


@dataclass
class Dashboard:
    product: Product
    products: list[Product]
    since: datetime
    turns_by_runtime: list[Figure] = field(default_factory=list)
    conflicts: list[Figure] = field(default_factory=list)
    hinos: list[Figure] = field(default_factory=list)
    hinos_failures: list[FailedHinosCommit] = field(default_factory=list)
    diary_jobs: list[Figure] = field(default_factory=list)
    table_jobs: list[Figure] = field(default_factory=list)
    failed_jobs: list[FailedJob] = field(default_factory=list)
    refusals: list[Figure] = field(default_factory=list)
    search_latency: list[Figure] = field(default_factory=list)


def changelist(name: str, **params: object) -> str:
    """The admin list `app_model` filtered by `params` (admin query parameters)."""
    url = reverse(f"admin:{name}_changelist")
    return f"{url}?{urlencode(params)}" if params else url


def dashboard_allowed(user) -> bool:
    return user.is_active and user.is_staff and user.has_perms(DASHBOARD_PERMISSIONS)


def dashboard_products() -> list[Product]:
    return list(Product.objects.order_by("created_at", "id"))


def dashboard_build(*, product: Product, now: datetime | None = None) -> Dashboard:
    since = (now or timezone.now()) - WINDOW
    board = Dashboard(product=product, products=dashboard_products(), since=since)
    scope = {"product__id__exact": product.pk, "created_at__gte": since.isoformat(timespec="seconds")}
    board.turns_by_runtime = _turns_by_runtime(product, since, scope)
    board.conflicts = _conflicts(product, since, scope)
    board.hinos, board.hinos_failures = _hinos(product, since, scope)
    board.diary_jobs = _diary_jobs(product, since, scope)
    board.table_jobs = _table_jobs(product, since, scope)
    board.failed_jobs = _failed_jobs(product, since)
    board.refusals = _refusals(product, since, scope)
    board.search_latency = _search_latency()
    return board


def _turns_by_runtime(product: Product, since: datetime, scope: dict) -> list[Figure]:
    rows = (
        Turn.objects.filter(product=product, created_at__gte=since)
        .values("runtime")
        .annotate(n=Count("id"))
        .order_by("runtime")
    )
    return [Figure(r["runtime"], r["n"], changelist("memories_turn", runtime=r["runtime"], **scope)) for r in rows]


def _conflicts(product: Product, since: datetime, scope: dict) -> list[Figure]:
    figures = [
        Figure(
            _("table edits that lost twice (this product)"),
            TableEditRecord.objects.filter(product=product, created_at__gte=since, outcome="conflict").count(),
            changelist("tables_tableeditrecord", outcome="conflict", **scope),
        )
    ]
    for kind, count in sorted(metrics_read.counter_by_label("memoryhub_conflicts", "kind").items()):
        figures.append(Figure(kind, int(count), _kind_list(kind)))
    return figures


def _kind_list(kind: str) -> str:
    try:
        return changelist(CONFLICT_KIND_LISTS[kind])
    except (KeyError, NoReverseMatch):
        return reverse("metrics")


def _hinos(product: Product, since: datetime, scope: dict) -> tuple[list[Figure], list[FailedHinosCommit]]:
    failed = FailedHinosCommit.objects.filter(product=product, created_at__gte=since)
    acknowledged = failed.filter(turn__runtime_state__hinos__committed=True).count()
    total = failed.count()
    figures = [
        Figure(_("failed commits"), total, changelist("hinos_failedhinoscommit", **scope)),
        Figure(
            _("acknowledged since (re-sent)"),
            acknowledged,
            changelist("hinos_failedhinoscommit", resend="ack", **scope),
        ),
        Figure(
            _("awaiting a re-send"), total - acknowledged, changelist("hinos_failedhinoscommit", resend="open", **scope)
        ),
    ]
    # exclude(pk__in=…), not exclude(key=True): a turn without the key would be NULL and left out of both.
    acknowledged_ids = failed.filter(turn__runtime_state__hinos__committed=True).values("pk")
    awaiting = failed.exclude(pk__in=acknowledged_ids).select_related("turn").order_by("-id")
    return figures, list(awaiting[:FAILED_JOBS_SHOWN])


def _job_figures(product: Product, since: datetime, scope: dict, work: str) -> list[Figure]:
    turns = Turn.objects.filter(product=product, created_at__gte=since)
    return [
        Figure(
            label,
            turns.filter(**{f"memory_write__work__{work}": state}).count(),
            changelist("memories_turn", job=f"{work}.{state}", **scope),
        )
        for state, label in ((("failed", _("failed")), ("pending", _("pending"))))
    ]


def _diary_jobs(product: Product, since: datetime, scope: dict) -> list[Figure]:
    plans = DiaryPlanRecord.objects.filter(product=product, created_at__gte=since)
    figures = [
        Figure(
            label,
            plans.filter(outcome=outcome).count(),
            changelist("diaries_diaryplanrecord", outcome=outcome, **scope),
        )
        for outcome, label in (("written", _("done: written")), ("skipped", _("skipped (not due)")))
    ]
    return figures + _job_figures(product, since, scope, "diaries")


def _table_jobs(product: Product, since: datetime, scope: dict) -> list[Figure]:
    records = TableEditRecord.objects.filter(product=product, created_at__gte=since)
    figures = [
        Figure(
            _("done: updated or unchanged"),
            records.filter(outcome__in=["updated", "unchanged"]).count(),
            changelist("tables_tableeditrecord", outcome__in="updated,unchanged", **scope),
        ),
        Figure(
            _("skipped (reply replaced)"),
            records.filter(outcome="superseded").count(),
            changelist("tables_tableeditrecord", outcome="superseded", **scope),
        ),
    ]
    return figures + _job_figures(product, since, scope, "tables")


def _failed_jobs(product: Product, since: datetime) -> list[FailedJob]:
    jobs: list[FailedJob] = []
    for work in rerunnable_jobs():  # the registered jobs an operator may re-run (memoryhub/turn_jobs.py)
        turns = Turn.objects.filter(product=product, created_at__gte=since, **{f"memory_write__work__{work}": "failed"})
        for turn in turns.order_by("-id")[:FAILED_JOBS_SHOWN]:
            url = reverse("console:rerun", args=[turn.pk, work])
            jobs.append(FailedJob(turn, work, (turn.memory_write or {}).get("reason", ""), url))
    return sorted(jobs, key=lambda job: -job.turn.pk)[:FAILED_JOBS_SHOWN]


def _refusals(product: Product, since: datetime, scope: dict) -> list[Figure]:
    rows = (
        AdmissionRefusal.objects.filter(product=product, created_at__gte=since)
        .values("code")
        .annotate(n=Count("id"))
        .order_by("-n", "code")
    )
    return [Figure(r["code"], r["n"], changelist("longterm_admissionrefusal", code=r["code"], **scope)) for r in rows]


def _search_latency() -> list[Figure]:
    buckets = metrics_read.histogram_buckets("memoryhub_http_request_seconds", route_suffix=SEARCH_ROUTE_SUFFIX)
    url = reverse("metrics")
    count = int(buckets[-1][1]) if buckets else 0
    return [
        Figure(_("searches measured"), count, url),
        Figure("p50 (ms)", _ms(quantile(buckets, 0.50)), url),
        Figure("p95 (ms)", _ms(quantile(buckets, 0.95)), url),
    ]


def _ms(seconds: float | None) -> float | None:
    return None if seconds is None else round(seconds * 1000, 1)


def quantile(buckets: Iterable[tuple[float, float]], q: float) -> float | None:
    """The q-quantile of a Prometheus histogram from its cumulative (upper bound, count) buckets, interpolated
    linearly inside the bucket as PromQL's histogram_quantile does; None without observations."""
    ordered = sorted(buckets)
    if not ordered or ordered[-1][1] <= 0:
        return None
    rank = q * ordered[-1][1]
    lower, below = 0.0, 0.0
    for upper, cumulative in ordered:
        if cumulative >= rank:
            if math.isinf(upper):
                return lower  # above the highest finite bucket: its bound is the best estimate
            if cumulative == below:
                return upper
            return lower + (upper - lower) * (rank - below) / (cumulative - below)
        lower, below = upper, cumulative
    return lower

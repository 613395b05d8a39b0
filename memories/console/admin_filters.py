"""List filters the dashboard's figures link to (added to the owning apps' ModelAdmins)."""

from __future__ import annotations

from django.contrib import admin
from django.utils.translation import gettext_lazy as _

JOB_STATES = ("failed", "pending", "done")
JOB_WORKS = ("diaries", "tables")


class JobStateFilter(admin.SimpleListFilter):
    """Turns by the state of one background job in memoryWrite.work (`?job=diaries.failed`)."""

    title = _("background job")
    parameter_name = "job"

    def lookups(self, request, model_admin):
        return [(f"{work}.{state}", f"{work}: {state}") for work in JOB_WORKS for state in JOB_STATES]

    def queryset(self, request, queryset):
        work, _dot, state = (self.value() or "").partition(".")
        if work not in JOB_WORKS or state not in JOB_STATES:
            return queryset
        return queryset.filter(**{f"memory_write__work__{work}": state})


class ResendStateFilter(admin.SimpleListFilter):
    """Failed Hinos commits by re-send state (`?resend=ack` acknowledged since, `?resend=open` awaiting)."""

    title = _("re-send state")
    parameter_name = "resend"

    def lookups(self, request, model_admin):
        return [("ack", _("acknowledged since")), ("open", _("awaiting a re-send"))]

    def queryset(self, request, queryset):
        acknowledged = {"turn__runtime_state__hinos__committed": True}
        if self.value() == "ack":
            return queryset.filter(**acknowledged)
        if self.value() == "open":  # pk__in: a turn without the key must count as awaiting, not as NULL
            return queryset.exclude(pk__in=queryset.filter(**acknowledged).values("pk"))
        return queryset

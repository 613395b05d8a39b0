"""List filters of the memories admin that the console's dashboard figures link to (`?job=diaries.failed`)."""

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

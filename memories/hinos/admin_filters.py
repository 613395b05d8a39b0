"""List filters of the Hinos admin that the console's dashboard figures link to (`?resend=open`)."""

from __future__ import annotations

from django.contrib import admin
from django.utils.translation import gettext_lazy as _


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

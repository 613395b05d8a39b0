"""Admin building blocks shared by every app's console."""

from __future__ import annotations

import json
from collections.abc import Callable

from django.contrib import admin
from django.contrib.admin.models import CHANGE, LogEntry
from django.urls import reverse
from django.utils.html import format_html
from django.utils.translation import gettext, gettext_lazy


class ReadOnlyAdmin(admin.ModelAdmin):
    """A log or a derived view: operators look; changes go through services and actions."""

    def has_add_permission(self, request, obj=None) -> bool:
        return False

    def has_change_permission(self, request, obj=None) -> bool:
        return False

    def has_delete_permission(self, request, obj=None) -> bool:
        return False


class ReadOnlyTabularInline(admin.TabularInline):
    """Rows shown beside their parent (history, messages, events): nothing to add, edit or delete."""

    extra = 0
    can_delete = False

    def get_readonly_fields(self, request, obj=None):
        return self.fields or []

    def has_add_permission(self, request, obj=None) -> bool:
        return False


def column(field: str, label: str, labels: dict[str, str] | None = None) -> Callable:
    """A list column showing `field` under a translated header (`label` is a msgid), sortable by the field.

    `labels` translates the field's values (msgids by value; others are shown as stored). A model field's own
    verbose name is not used, so translating a header needs no migration.
    """

    @admin.display(description=gettext_lazy(label), ordering=field)
    def show(obj) -> object:
        value = getattr(obj, field)
        return gettext(labels[value]) if labels and value in labels else value

    show.__name__ = field  # the cell's CSS class stays field-<field>
    return show


def titled(field: str, title: str, base: type[admin.FieldListFilter] = admin.AllValuesFieldListFilter) -> tuple:
    """A list filter on `field` under a translated title (`title` is a msgid), for `list_filter`."""

    class Titled(base):  # type: ignore[valid-type, misc]
        def __init__(self, *args, **kwargs) -> None:
            super().__init__(*args, **kwargs)
            self.title = gettext(title)

    return (field, Titled)


def log_actions(user, objs, message: str, *, flag: int = CHANGE) -> None:
    """One admin LogEntry per object (the admin's "Recent actions" and each object's history), by `user`."""
    objs = list(objs)
    if objs:
        LogEntry.objects.log_actions(user.pk, objs, flag, change_message=message)


def console_link(url_name: str, pk: int, label: str) -> str:
    """A link to one of the console's pages (memories/console/inspector_urls.py), e.g. a table's diff."""
    return format_html('<a class="mh-console-link" href="{}">{}</a>', reverse(url_name, args=[pk]), label)


def pre(value: object) -> str:
    """Render text, or JSON pretty-printed with non-ASCII kept, as an escaped <pre> block."""
    text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False, indent=2)
    return format_html("<pre style='white-space:pre-wrap;max-width:70em;margin:0'>{}</pre>", text)

"""Admin building blocks shared by every app's console."""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from typing import Any

from django import forms
from django.contrib import admin, messages
from django.contrib.admin.models import CHANGE, DELETION, LogEntry
from django.contrib.contenttypes.models import ContentType
from django.core.exceptions import ValidationError
from django.db import models
from django.forms.fields import InvalidJSONInput, JSONString
from django.http import HttpResponseRedirect
from django.urls import reverse
from django.utils.html import format_html
from django.utils.translation import gettext, gettext_lazy

from memoryhub import json_text, metrics
from memoryhub.actors import Actor
from memoryhub.errors import DomainError, InvalidRequest


class StorableJSONField(forms.JSONField):
    """JSON an operator types, read as the API reads a body (memoryhub.json_text): NaN, Infinity, `1e400`, NUL and
    lone surrogates are refused with the form's error, never stored (a later read of them would be a 500)."""

    def to_python(self, value):
        if self.disabled or value in self.empty_values or not isinstance(value, str):
            return super().to_python(value)
        try:
            converted = json_text.loads(value)
        except InvalidRequest as exc:
            raise ValidationError(exc.message) from None
        except (ValueError, RecursionError):
            raise ValidationError(self.error_messages["invalid"], params={"value": value}) from None
        return JSONString(converted) if isinstance(converted, str) else converted

    def bound_data(self, data, initial):
        if self.disabled or data is None:
            return super().bound_data(data, initial)
        try:
            return json_text.loads(data)
        except (InvalidRequest, ValueError, RecursionError):
            return InvalidJSONInput(data)  # shown again as typed, with the error


STORABLE_JSON: Mapping[type[models.Field], Mapping[str, Any]] = {models.JSONField: {"form_class": StorableJSONField}}


class StorableJSONAdmin(admin.ModelAdmin):
    """An admin whose model JSON fields take only what the API would store (StorableJSONField)."""

    formfield_overrides = STORABLE_JSON


def log_user_row_deletions(user, objs, message: str = "") -> list[LogEntry]:
    """The admin log's entries for a user's rows being deleted: each names the row's kind and id, never its user.

    An erasure removes the log entries about a user's rows by their ids (docs/data-lifecycle.md); a row deleted
    before it leaves nothing to find them by, so their text must hold nothing of the user to begin with."""
    entries = [
        LogEntry(
            user_id=user.pk,
            content_type_id=ContentType.objects.get_for_model(obj, for_concrete_model=False).pk,
            object_id=str(obj.pk),
            object_repr=f"{obj._meta.verbose_name} {obj.pk}",
            action_flag=DELETION,
            change_message=message,
        )
        for obj in objs
    ]
    return LogEntry.objects.bulk_create(entries)


class UserRowsAdmin(admin.ModelAdmin):
    """An admin of rows that belong to a user: its deletion log entries hold no user id (log_user_row_deletions)."""

    def log_deletions(self, request, queryset):
        return log_user_row_deletions(request.user, queryset)


class ReadOnlyAdmin(admin.ModelAdmin):
    """A log or a derived view: operators look; changes go through services and actions."""

    def has_add_permission(self, request, obj=None) -> bool:
        return False

    def has_change_permission(self, request, obj=None) -> bool:
        return False

    def has_delete_permission(self, request, obj=None) -> bool:
        return False


def refuse_stale_edit(form: forms.ModelForm, field: str, loaded: int | None, *, kind: str, noun: str) -> None:
    """An operator's form carries the version it was loaded at; a row at another one is refused, nothing saved.

    The refusal is a compare-and-set conflict like the API's, so it is counted in the same metric
    (`memoryhub_conflicts_total{kind}`); the service's CAS still refuses a write that lands after this check.
    """
    model = type(form.instance)
    current = model._default_manager.filter(pk=form.instance.pk).values_list(field, flat=True).first()
    if loaded is not None and current is not None and loaded != current:
        metrics.CONFLICTS.labels(kind=kind).inc()
        raise forms.ValidationError(
            f"This {noun} changed while you edited it (you loaded {field} {loaded}, it is now {current}). "
            "Reload the page and make your change again; nothing was saved."
        )


class VersionedEditAdmin(UserRowsAdmin):
    """An operator's edit of a versioned resource (document, table, state, lorebook entry) as one compare-and-set call.

    The form checks the version the operator loaded; `save_versioned` calls the service, whose CAS in the
    database still refuses a write that landed after that check. A refused save says so, writes no "Changed"
    history entry and shows the form again. Rows are created by the API, never here.
    """

    def save_versioned(self, request, obj, form, actor: Actor) -> None:
        raise NotImplementedError

    def has_add_permission(self, request) -> bool:
        return False

    def save_model(self, request, obj, form, change):
        try:
            self.save_versioned(request, obj, form, Actor.operator(request.user.get_username()))
        except DomainError as exc:  # lost a race after clean(): say so, never overwrite
            self.message_user(request, f"Not saved: {exc.message}", messages.ERROR)
            obj._save_refused = True  # this request's object: the admin instance is shared between requests

    def log_change(self, request, obj, message):
        if getattr(obj, "_save_refused", False):
            return None  # the service refused the save: no "Changed" entry for a change that did not happen
        return super().log_change(request, obj, message)

    def response_change(self, request, obj):
        if getattr(obj, "_save_refused", False):
            return HttpResponseRedirect(request.path)
        return super().response_change(request, obj)


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


def console_link(kind: str, pk: int, label: str) -> str:
    """A link to the console's page of one artefact (`tables`, `documents`, … : memories/console/inspector_views.py)."""
    return format_html(
        '<a class="mh-console-link" href="{}">{}</a>', reverse("console:artefact", args=[kind, pk]), label
    )


def pre(value: object) -> str:
    """Render text, or JSON pretty-printed with non-ASCII kept, as an escaped <pre> block."""
    text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False, indent=2)
    return format_html("<pre style='white-space:pre-wrap;max-width:70em;margin:0'>{}</pre>", text)

"""Operator console for scenarios, turns, messages and events: "what did the model see, and why"."""

from __future__ import annotations

import json

from django import forms
from django.conf import settings
from django.contrib import admin
from django.forms.models import BaseInlineFormSet
from django.urls import reverse
from django.utils.html import format_html, format_html_join
from django.utils.translation import gettext as _
from django.utils.translation import gettext_lazy

from memories.admin.filters import JobStateFilter
from memories.models import Conversation, Event, MemorySource, Message, Scenario, ScenarioVersion, Turn
from memories.scenario_validation import ScenarioInvalid, validate_scenario
from memories.services.scenarios import _MODEL_FIELDS, scenario_create, scenario_update
from memoryhub.actors import Actor
from memoryhub.admin_base import (
    STORABLE_JSON,
    ReadOnlyAdmin,
    ReadOnlyTabularInline,
    StorableJSONAdmin,
    StorableJSONField,
    column,
    pre,
    titled,
)
from memoryhub.runtimes.registry import DEFAULT_RUNTIME, runtime_choices

MEMORY_WRITE_STATUSES = ("pending", "done", "failed")  # msgids: shown translated in the turn list


class ScenarioForm(forms.ModelForm):
    # Declared (not generated from the model) so the choices are read per form, not once at admin import,
    # which runs before the apps register their runtimes.
    memory_runtime = forms.ChoiceField(choices=runtime_choices, initial=DEFAULT_RUNTIME)
    sections = StorableJSONField(
        required=False, help_text='Settings owned by other apps, e.g. {"diary": {...}, "tables": [...]}'
    )

    class Meta:
        model = Scenario
        fields = [
            "slug",
            "name",
            "memory_runtime",
            "template",
            "memory_ingest",
            "commit_on",
            "tool_updates",
            "memory_schema",
            "sections",
        ]


class SourceFormSet(BaseInlineFormSet):
    """Runs the one scenario validation over the parent form and its sources together."""

    def clean(self):
        super().clean()
        if any(self.errors):
            return
        data = scenario_payload(self.instance, self.forms)
        try:
            self.instance._validated = validate_scenario(data)
        except ScenarioInvalid as exc:
            raise forms.ValidationError([f"{field}: {message}" for field, message in exc.errors.items()]) from None


def scenario_payload(scenario: Scenario, source_forms) -> dict:
    data = {"id": scenario.slug, **{api: getattr(scenario, field) for api, field in _MODEL_FIELDS.items()}}
    sources = []
    for form in source_forms:
        cleaned = getattr(form, "cleaned_data", None)
        if not cleaned or cleaned.get("DELETE"):
            continue
        source = {
            "id": cleaned.get("source_id"),
            "agentRef": cleaned.get("agent_ref"),
            "variable": cleaned.get("variable"),
        }
        if cleaned.get("priority") is not None:
            source["priority"] = cleaned["priority"]
        source.update(cleaned.get("options") or {})  # e.g. {"kinds": [...]} for the preferences variable
        sources.append(source)
    data["memorySources"] = sources
    data.update(scenario.sections or {})
    return data


class MemorySourceInline(admin.TabularInline):
    model = MemorySource
    formfield_overrides = STORABLE_JSON
    formset = SourceFormSet
    extra = 1
    fields = ["source_id", "agent_ref", "variable", "priority", "options"]


class ScenarioVersionInline(ReadOnlyTabularInline):
    model = ScenarioVersion
    fields = ["version", "actor", "created_at", "snapshot_pretty"]

    @admin.display(description="snapshot")
    def snapshot_pretty(self, obj) -> str:
        return pre(obj.snapshot)


@admin.register(Scenario)
class ScenarioAdmin(StorableJSONAdmin):
    form = ScenarioForm
    inlines = [MemorySourceInline, ScenarioVersionInline]
    list_display = ["slug", "name", "product", "memory_runtime", "commit_on", "version", "updated_at"]
    list_filter = ["memory_runtime", "commit_on", "product"]
    list_select_related = ["product"]
    search_fields = ["slug", "name"]
    readonly_fields = ["version"]

    def get_fields(self, request, obj=None):
        return (["product"] if obj is None else []) + ScenarioForm.Meta.fields + ["version"]

    def get_readonly_fields(self, request, obj=None):
        return ["version", "slug", "product"] if obj else ["version"]

    def save_model(self, request, obj, form, change):
        pass  # saved through the scenario service in save_related, once the sources are validated with it

    def save_related(self, request, form, formsets, change):
        obj, actor = form.instance, Actor.operator(request.user.get_username())
        if change:
            saved = scenario_update(product=obj.product, slug=obj.slug, data=obj._validated, actor=actor, partial=False)
        else:
            saved = scenario_create(product=obj.product, data=obj._validated, actor=actor)
        obj.pk, obj.version = saved.pk, saved.version
        for formset in formsets:  # the admin's change message reads these; the service did the saving
            formset.new_objects, formset.changed_objects, formset.deleted_objects = [], [], []


class TurnMessageInline(ReadOnlyTabularInline):
    model = Message
    fields = ["role", "round", "content", "superseded"]


class TurnEventInline(ReadOnlyTabularInline):
    model = Event
    fields = ["type", "created_at", "details_pretty"]

    @admin.display(description="details")
    def details_pretty(self, obj) -> str:
        return pre(obj.details)


@admin.register(Turn)
class TurnAdmin(ReadOnlyAdmin):
    # The inspector right after the id: visible without scrolling on a 1400 px screen, in either language.
    list_display = [
        "id",
        "inspect_link",
        column("user_id", "user id"),
        column("conversation_id", "conversation id"),
        column("round", "round"),
        column("status", "status", {value: value for value, _label in Turn.STATUSES}),
        column("scenario_slug", "scenario slug"),
        column("runtime", "runtime"),
        column("referenced_variables", "referenced variables"),
        column("unreferenced_variables", "unreferenced variables"),
        "memory_write_status",
        column("created_at", "created at"),
    ]
    list_filter = [
        titled("status", "status", admin.ChoicesFieldListFilter),
        titled("runtime", "runtime"),
        titled("product", "product", admin.RelatedFieldListFilter),
        JobStateFilter,
    ]
    list_select_related = ["product"]
    search_fields = ["user_id", "conversation_id", "scenario_slug", "request_id"]
    date_hierarchy = "created_at"
    inlines = [TurnMessageInline, TurnEventInline]
    fields = [
        "inspect_link",
        "product",
        "user_id",
        "conversation_id",
        "scenario_link",
        "scenario_version",
        "runtime",
        "round",
        "status",
        "subscription_category",
        "request_id",
        "user_message",
        "prompt_shown",
        "referenced_variables",
        "unreferenced_variables",
        "sources_table",
        "variables_pretty",
        "runtime_state_pretty",
        "memory_write",
        "assistant_message",
        "replaces",
        "created_at",
        "completed_at",
        "committed_at",
    ]
    readonly_fields = fields

    @admin.display(description=gettext_lazy("inspector"))
    def inspect_link(self, obj) -> str:
        """The console's turn inspector (memories/console): the prompt's variable spans and what followed."""
        url = reverse("console:turn-inspector", args=[obj.pk])
        return format_html('<a class="mh-inspect" data-turn="{}" href="{}">{}</a>', obj.pk, url, _("inspect"))

    @admin.display(description=gettext_lazy("memory write"))
    def memory_write_status(self, obj) -> str:
        write = obj.memory_write or {}
        status = write.get("status", "—")
        shown = _(status) if status in MEMORY_WRITE_STATUSES else status
        return f"{shown}: {write['reason']}" if status == "failed" and write.get("reason") else shown

    @admin.display(description="scenario")
    def scenario_link(self, obj) -> str:
        if obj.scenario_id is None:
            return obj.scenario_slug
        url = reverse("admin:memories_scenario_change", args=[obj.scenario_id])
        return format_html('<a href="{}">{}</a>', url, obj.scenario_slug)

    @admin.display(description="prompt the model was given")
    def prompt_shown(self, obj) -> str:
        limit = settings.INSPECTOR_PROMPT_MAX_CHARS
        if len(obj.prompt) <= limit:
            return pre(obj.prompt)
        hidden = len(obj.prompt) - limit
        return pre(obj.prompt[:limit] + "\n" + _("… %(hidden)s more characters not shown") % {"hidden": hidden})

    @admin.display(description="sources (status, revision/version)")
    def sources_table(self, obj) -> str:
        rows = format_html_join(
            "",
            "<tr><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td></tr>",
            (
                (
                    s.get("id"),
                    s.get("variable"),
                    s.get("status"),
                    s.get("revision", s.get("version", "")),
                    json.dumps(s.get("details", {}), ensure_ascii=False),
                )
                for s in obj.sources
            ),
        )
        return format_html(
            "<table><tr><th>source</th><th>variable</th><th>status</th><th>rev/ver</th><th>details</th></tr>{}</table>",
            rows,
        )

    @admin.display(description="variables (recalled text)")
    def variables_pretty(self, obj) -> str:
        return pre(obj.variables)

    @admin.display(description="runtime state (e.g. shadow comparison, Hinos claim)")
    def runtime_state_pretty(self, obj) -> str:
        return pre(obj.runtime_state)


@admin.register(Conversation)
class ConversationAdmin(ReadOnlyAdmin):
    list_display = ["user_id", "conversation_id", "rounds", "product", "updated_at", "turns_link", "timeline_link"]
    list_filter = ["product"]
    list_select_related = ["product"]
    search_fields = ["user_id", "conversation_id"]

    @admin.display(description="turns")
    def turns_link(self, obj) -> str:
        url = reverse("admin:memories_turn_changelist") + f"?conversation_row__id__exact={obj.pk}"
        return format_html('<a href="{}">turns</a>', url)

    @admin.display(description="timeline")
    def timeline_link(self, obj) -> str:
        url = reverse("console:conversation-timeline", args=[obj.pk])
        return format_html('<a class="mh-timeline" href="{}">timeline</a>', url)


@admin.register(Event)
class EventAdmin(ReadOnlyAdmin):
    list_display = ["type", "user_id", "conversation_id", "turn", "created_at", "product"]
    list_filter = ["type", "product"]
    list_select_related = ["product"]
    search_fields = ["user_id", "conversation_id", "type"]
    date_hierarchy = "created_at"


@admin.register(Message)
class MessageAdmin(ReadOnlyAdmin):
    list_display = ["user_id", "conversation_id", "round", "role", "superseded", "created_at", "product"]
    list_filter = ["role", "superseded", "product"]
    list_select_related = ["product"]
    search_fields = ["user_id", "conversation_id", "content"]

"""Operator console for lorebooks: inspect a book and its entries, edit an entry through the API's service."""

from __future__ import annotations

from django import forms
from django.contrib import admin, messages

from lorebooks import formats
from lorebooks.models import Lorebook, LorebookEntry, LorebookEntryProposal, LorebookEntryVersion
from lorebooks.services import entry_update, proposal_accept, proposal_reject, validate_changes
from memoryhub.actors import Actor
from memoryhub.admin_base import (
    ReadOnlyAdmin,
    ReadOnlyTabularInline,
    StorableJSONField,
    VersionedEditAdmin,
    pre,
    refuse_stale_edit,
)
from memoryhub.errors import DomainError


class LorebookEntryForm(forms.ModelForm):
    """The entry's World Info fields as JSON; a save on a stale revision is refused in clean(), nothing saved."""

    loaded_revision = forms.IntegerField(widget=forms.HiddenInput)
    fields_json = StorableJSONField(
        label="Entry fields",
        help_text="World Info fields (key, keysecondary, content, order, …); unknown fields of the file are kept.",
        widget=forms.Textarea(attrs={"rows": 24, "cols": 100}),
    )

    class Meta:
        model = LorebookEntry
        fields: list[str] = []

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        if self.instance.pk:
            self.fields["loaded_revision"].initial = self.instance.revision
            self.initial["fields_json"] = formats.view_of(self.instance.lorebook.format, self.instance.data)

    def clean_fields_json(self):
        try:
            return validate_changes(self.cleaned_data["fields_json"])  # the API's validation
        except DomainError as exc:
            raise forms.ValidationError(exc.message) from None

    def clean(self):
        cleaned = super().clean()
        refuse_stale_edit(self, "revision", cleaned.get("loaded_revision"), kind="lorebook_entry", noun="entry")
        return cleaned


class EntryVersionInline(ReadOnlyTabularInline):
    model = LorebookEntryVersion
    fields = ["revision", "deleted", "cause", "actor", "created_at"]


@admin.register(LorebookEntry)
class LorebookEntryAdmin(VersionedEditAdmin):
    form = LorebookEntryForm
    list_display = ["lorebook", "uid", "comment", "revision", "deleted", "product", "updated_at"]
    list_filter = ["product", "lorebook__slug", "deleted"]
    list_select_related = ["lorebook", "product"]
    search_fields = ["uid", "lorebook__slug"]
    readonly_fields = ["product", "lorebook", "uid", "revision", "deleted", "native"]
    inlines = [EntryVersionInline]

    @admin.display(description="comment")
    def comment(self, obj: LorebookEntry) -> str:
        return formats.view_of(obj.lorebook.format, obj.data)["comment"]

    @admin.display(description="native JSON (as the file carries it)")
    def native(self, obj: LorebookEntry) -> str:
        return pre(obj.data)

    def has_delete_permission(self, request, obj=None) -> bool:
        return False  # a delete is a revision (API), never a lost row

    def save_versioned(self, request, obj, form, actor: Actor) -> None:
        entry = LorebookEntry.objects.select_related("lorebook").get(pk=obj.pk)
        before = formats.view_of(entry.lorebook.format, entry.data)
        # Only the fields the operator changed are written: the others stay exactly as the file had them.
        changes = {k: v for k, v in form.cleaned_data["fields_json"].items() if before.get(k) != v}
        entry_update(entry=entry, expected_revision=form.cleaned_data["loaded_revision"], changes=changes, actor=actor)


class EntryInline(ReadOnlyTabularInline):
    model = LorebookEntry
    fields = ["uid", "comment", "keys", "revision", "deleted", "updated_at"]
    show_change_link = True

    @admin.display(description="comment")
    def comment(self, obj: LorebookEntry) -> str:
        return formats.view_of(obj.lorebook.format, obj.data)["comment"]

    @admin.display(description="keys")
    def keys(self, obj: LorebookEntry) -> str:
        return ", ".join(formats.view_of(obj.lorebook.format, obj.data)["key"])


@admin.register(Lorebook)
class LorebookAdmin(ReadOnlyAdmin):
    list_display = ["slug", "name", "format", "product", "updated_at"]
    list_filter = ["product", "format"]
    search_fields = ["slug", "name"]
    fields = ["product", "slug", "name", "format", "shell_json"]
    readonly_fields = fields
    inlines = [EntryInline]

    @admin.display(description="file fields besides the entries")
    def shell_json(self, obj: Lorebook) -> str:
        return pre(obj.shell)


@admin.register(LorebookEntryVersion)
class LorebookEntryVersionAdmin(ReadOnlyAdmin):
    list_display = ["entry", "revision", "deleted", "cause", "actor", "created_at", "product"]
    list_filter = ["product", "cause"]


@admin.register(LorebookEntryProposal)
class LorebookEntryProposalAdmin(ReadOnlyAdmin):
    """A model's proposed entry edits: accept (committed under compare-and-set, cause `proposal`) or reject."""

    list_display = ["pk", "entry", "base_revision", "status", "proposed_by", "decided_by", "created_at", "product"]
    list_filter = ["product", "status"]
    fields = ["product", "entry", "base_revision", "changes_json", "reason", "status", "proposed_by", "decided_by"]
    fields += ["decision_note", "revision", "created_at", "decided_at"]
    readonly_fields = fields
    actions = ["accept", "reject"]

    @admin.display(description="changes")
    def changes_json(self, obj: LorebookEntryProposal) -> str:
        return pre(obj.changes)

    def has_decide_permission(self, request) -> bool:
        """Deciding writes the entry (accept) or the proposal: the change permissions of both, never view alone."""
        perms = ("lorebooks.change_lorebookentry", "lorebooks.change_lorebookentryproposal")
        return request.user.has_perms(perms)

    @admin.action(description="Accept the selected proposals (each on its base revision)", permissions=["decide"])
    def accept(self, request, queryset):
        self._decide(request, queryset, proposal_accept)

    @admin.action(description="Reject the selected proposals", permissions=["decide"])
    def reject(self, request, queryset):
        self._decide(request, queryset, proposal_reject)

    def _decide(self, request, queryset, decide) -> None:
        actor = Actor.operator(request.user.get_username())
        for proposal in queryset.select_related("entry__lorebook"):
            try:
                decide(lorebook=proposal.entry.lorebook, proposal_id=proposal.pk, actor=actor)
            except DomainError as exc:  # a stale base revision or a decided proposal: say so, change nothing
                self.message_user(request, f"Proposal {proposal.pk}: {exc.message}", level=messages.ERROR)
            else:
                self.message_user(request, f"Proposal {proposal.pk}: done.")
                self.log_change(request, proposal, f"{decide.__name__.removeprefix('proposal_')}ed")

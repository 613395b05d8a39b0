"""Admin form for an operator's state edit: the same validation and compare-and-set service as the API."""

from __future__ import annotations

from django import forms

from memoryhub.addresses import ConversationAddress
from memoryhub.admin_base import StorableJSONField, refuse_stale_edit
from memoryhub.errors import DomainError

from .models import ConversationState
from .services import state_edit_check
from .validation import MAX_TEXT_CHARS_LIMIT, validate_records


class StateForm(forms.ModelForm):
    """Carries the revision it was loaded at; a save on a stale revision is refused in clean(), nothing saved."""

    loaded_revision = forms.IntegerField(widget=forms.HiddenInput)
    # The largest maxTextChars any scenario may set; clean() checks the state's scenario's own.
    text = forms.CharField(
        required=False, max_length=MAX_TEXT_CHARS_LIMIT, widget=forms.Textarea(attrs={"rows": 6, "cols": 100})
    )
    records = StorableJSONField(
        required=False,
        help_text='The complete records: a JSON list of {"category", "key", "value"} (updatedRound is kept or set).',
        widget=forms.Textarea(attrs={"rows": 14, "cols": 100}),
    )

    class Meta:
        model = ConversationState
        fields = ["text"]

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        if self.instance.pk:
            self.fields["loaded_revision"].initial = self.instance.revision
            self.initial["records"] = [
                {"category": r["category"], "key": r["key"], "value": r["value"]} for r in self.instance.records
            ]

    def clean_records(self):
        try:
            records = self.cleaned_data["records"]
            return validate_records([] if records is None else records)
        except DomainError as exc:
            raise forms.ValidationError(exc.message) from None

    def clean(self):
        cleaned = super().clean()
        refuse_stale_edit(self, "revision", cleaned.get("loaded_revision"), kind="conversation_state", noun="state")
        if {"text", "records", "loaded_revision"} <= cleaned.keys():
            self._check_rules(cleaned)
        return cleaned

    def _check_rules(self, cleaned: dict) -> None:
        """The scenario's rules, as the API checks a candidate (services.state_edit_check); errors by field."""
        row = self.instance
        try:
            state_edit_check(
                address=ConversationAddress(row.product, row.user_id, row.conversation_id),
                base_revision=cleaned["loaded_revision"],
                text=cleaned["text"] or "",
                records=cleaned["records"],
            )
        except DomainError as exc:
            for error in exc.details.get("errors") or [{"path": "", "message": exc.message}]:
                field = "text" if error["path"] == "text" else "records"
                self.add_error(field, f"{error['path']}: {error['message']}" if error["path"] else error["message"])

"""Admin form for an operator's state edit: the same validation and compare-and-set service as the API."""

from __future__ import annotations

from django import forms

from memoryhub.admin_base import StorableJSONField, refuse_stale_edit
from memoryhub.errors import DomainError

from .models import ConversationState
from .validation import MAX_TEXT_CHARS_LIMIT, validate_records


class StateForm(forms.ModelForm):
    """Carries the revision it was loaded at; a save on a stale revision is refused in clean(), nothing saved."""

    loaded_revision = forms.IntegerField(widget=forms.HiddenInput)
    # No scenario is at hand to bound it by its maxTextChars: the largest any scenario may set.
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
        return cleaned

"""Admin form for a manual table edit: the same validation and compare-and-set service as the API."""

from __future__ import annotations

from django import forms

from memoryhub.admin_base import StorableJSONField, refuse_stale_edit
from memoryhub.errors import DomainError
from tables.models import MemoryTable
from tables.validation import validate_rows


class MemoryTableForm(forms.ModelForm):
    """Carries the version it was loaded at; a save on a stale version is refused in clean(), nothing saved."""

    loaded_version = forms.IntegerField(widget=forms.HiddenInput)
    rows = StorableJSONField(
        help_text="The complete new rows: a JSON list of rows, each a list with one string per column.",
        widget=forms.Textarea(attrs={"rows": 12, "cols": 100}),
    )

    class Meta:
        model = MemoryTable
        fields = ["rows"]

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        if self.instance.pk:
            self.fields["loaded_version"].initial = self.instance.version
            self.initial["rows"] = self.instance.rows

    def clean_rows(self):
        rows = self.cleaned_data["rows"]
        try:
            return validate_rows(rows, columns=self.instance.columns, max_rows=self.instance.max_rows)
        except DomainError as exc:
            raise forms.ValidationError(exc.message) from None

    def clean(self):
        cleaned = super().clean()
        refuse_stale_edit(self, "version", cleaned.get("loaded_version"), kind="memory_table", noun="table")
        return cleaned

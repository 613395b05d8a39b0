"""Admin forms: operator edits go through the same services (and validation) as the API."""

from __future__ import annotations

import json

from django import forms

from memories.models import MemoryDocument, Product
from memories.schemas import check_memory_against_schema, validate_schema_definition
from memories.validation import validate_memory
from memoryhub.admin_base import StorableJSONField, refuse_stale_edit
from memoryhub.errors import DomainError


class ProductForm(forms.ModelForm):
    class Meta:
        model = Product
        fields = ["name", "memory_schema"]

    def clean_memory_schema(self):
        schema = self.cleaned_data.get("memory_schema")
        if schema in (None, ""):
            return None
        try:
            validate_schema_definition(schema)
        except DomainError as exc:
            raise forms.ValidationError(exc.message) from None
        return schema


class MemoryDocumentForm(forms.ModelForm):
    """Carries the revision it was loaded at; a save on a stale revision is refused in clean()."""

    loaded_revision = forms.IntegerField(widget=forms.HiddenInput)
    memory = StorableJSONField(help_text="The complete new document; it replaces the stored one.")

    class Meta:
        model = MemoryDocument
        fields = ["memory"]

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        if self.instance.pk:
            self.fields["loaded_revision"].initial = self.instance.revision
            self.initial["memory"] = self.instance.memory

    def clean_memory(self):
        memory = self.cleaned_data["memory"]
        try:
            validate_memory(memory)
            check_memory_against_schema(memory, self.instance.product.memory_schema)
        except DomainError as exc:
            raise forms.ValidationError(exc.message) from None
        return memory

    def clean(self):
        cleaned = super().clean()
        refuse_stale_edit(self, "revision", cleaned.get("loaded_revision"), kind="memory_document", noun="document")
        return cleaned


def pretty_json(value: object) -> str:
    return json.dumps(value, ensure_ascii=False, indent=2)

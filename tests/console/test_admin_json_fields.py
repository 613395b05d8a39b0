"""Every JSON an operator can type in the admin is read as the API reads a body (docs/contract.md#request-bodies):
NaN, `1e400`, NUL and lone surrogates are refused by the form, never stored for a later read to fail on."""

from __future__ import annotations

import pytest
from django import forms
from django.contrib import admin
from django.contrib.auth.models import User
from django.test import RequestFactory

from memoryhub.admin_base import StorableJSONField


def _json_fields(form_class: type[forms.BaseForm]) -> dict[str, forms.Field]:
    return {name: field for name, field in form_class.base_fields.items() if isinstance(field, forms.JSONField)}


@pytest.mark.django_db
def test_every_editable_json_field_of_the_admin_takes_only_storable_json():
    request = RequestFactory().get("/admin/")
    request.user = User.objects.create_superuser("root", "root@example.com", "a long enough password 1")
    plain = []
    for model, model_admin in admin.site._registry.items():
        forms_of = []
        if model_admin.has_change_permission(request) or model_admin.has_add_permission(request):
            forms_of.append((model.__name__, model_admin.get_form(request)))
        for inline in model_admin.get_inline_instances(request):
            if inline.has_change_permission(request) or inline.has_add_permission(request, None):
                forms_of.append((f"{model.__name__} inline {inline.model.__name__}", inline.get_formset(request).form))
        for where, form_class in forms_of:
            for name, field in _json_fields(form_class).items():
                if not isinstance(field, StorableJSONField) and not field.disabled:
                    plain.append(f"{where}.{name}")
    assert plain == [], plain


@pytest.mark.parametrize(
    ("typed", "error"),
    [
        ('{"a": NaN}', "Enter a valid JSON."),
        ('{"a": 1e400}', "beyond the range of a double"),
        ('{"a": [1%s]}' % ("0" * 400), "beyond the range of a double"),
        ('{"a": "x\\u0000"}', "U+0000"),
        ('{"a": "\\ud800"}', "lone surrogate"),
        ('{"a\\u0000": 1}', "U+0000"),
    ],
)
def test_unstorable_json_is_a_form_error(typed, error):
    field = StorableJSONField()
    with pytest.raises(forms.ValidationError) as refused:
        field.clean(typed)
    assert error in " ".join(refused.value.messages)
    assert field.clean('{"a": "\\ud83d\\ude00", "b": 1.5}') == {"a": "😀", "b": 1.5}

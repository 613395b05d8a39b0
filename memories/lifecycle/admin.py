"""Operator console: erasure receipts, export jobs, and 'Erase a user' with a confirmation page showing the counts."""

from __future__ import annotations

from django import forms
from django.contrib import admin, messages
from django.contrib.admin.utils import quote
from django.core.exceptions import PermissionDenied
from django.http import HttpResponseRedirect
from django.template.response import TemplateResponse
from django.urls import path, reverse

from memories.models import Product
from memoryhub.admin_base import ReadOnlyAdmin, pre
from memoryhub.errors import DomainError, InvalidRequest
from memoryhub.identifiers import ID_RULE, validate_identifier

from .models import Erasure, Export, Import, ProductRetention
from .services import retention
from .services.erasure import erasure_preview, erasure_start


def _identifier(value: str) -> None:
    """The API's rule for a user or conversation id (a RegexField would accept any text containing one)."""
    try:
        validate_identifier(value, "id")
    except InvalidRequest:
        raise forms.ValidationError(f"{ID_RULE} (the API's rule)") from None


class EraseForm(forms.Form):
    product = forms.ModelChoiceField(queryset=Product.objects.order_by("name"))
    user_id = forms.CharField(max_length=128, strip=False, validators=[_identifier], label="User id")
    conversation_id = forms.CharField(
        max_length=128,
        strip=False,
        required=False,
        validators=[_identifier],
        label="Conversation id (empty: the whole user)",
    )


@admin.register(Erasure)
class ErasureAdmin(ReadOnlyAdmin):
    list_display = ["id", "product", "scope", "status", "requested_by", "requested_at", "finished_at"]
    list_filter = ["product", "scope", "status"]
    readonly_fields = [
        "id",
        "product",
        "scope",
        "subject_hash",
        "status",
        "counts_pre",
        "requested_by",
        "requested_at",
        "started_at",
        "finished_at",
        "error",
    ]
    exclude = ["counts", "pending_user", "pending_conversation"]
    change_list_template = "admin/lifecycle/erasure/change_list.html"

    @admin.display(description="removed per kind")
    def counts_pre(self, obj: Erasure) -> str:
        return pre(obj.counts)

    def get_urls(self):
        return [
            path("erase/", self.admin_site.admin_view(self.erase_view), name="lifecycle_erasure_erase"),
            *super().get_urls(),
        ]

    def erase_view(self, request):
        """Step 1: the form; step 2 (preview): the counts and a confirm button; step 3 (confirm): start."""
        if not request.user.has_perm("lifecycle.add_erasure"):  # a superuser has every permission
            raise PermissionDenied
        form = EraseForm(request.POST or None)
        context = {
            **self.admin_site.each_context(request),
            "title": "Erase a user",
            "form": form,
            "opts": Erasure._meta,
        }
        if request.method == "POST" and form.is_valid():
            product = form.cleaned_data["product"]
            user_id = form.cleaned_data["user_id"]
            conversation_id = form.cleaned_data["conversation_id"] or None
            if "confirm" in request.POST:
                try:
                    erasure = erasure_start(
                        product=product,
                        user_id=user_id,
                        conversation_id=conversation_id,
                        requested_by=f"operator:{request.user.get_username()}",
                    )
                except DomainError as exc:
                    messages.error(request, exc.message)
                    return HttpResponseRedirect(reverse("admin:lifecycle_erasure_erase"))
                # The receipt's id and scope only: the user id is what is being erased.
                self.log_addition(request, erasure, f"Started the erasure {erasure.pk} ({erasure.scope})")
                messages.success(request, f"Erasure {erasure.pk} started ({erasure.status}).")
                # quote: the admin unquotes "_22", "_40", … in a path, and an id is "era_" + random hex
                return HttpResponseRedirect(reverse("admin:lifecycle_erasure_change", args=[quote(erasure.pk)]))
            counts = erasure_preview(product=product, user_id=user_id, conversation_id=conversation_id)
            context.update(counts=counts, total=sum(counts.values()), confirming=True)
        return TemplateResponse(request, "admin/lifecycle/erase.html", context)


@admin.register(Export)
class ExportAdmin(ReadOnlyAdmin):
    list_display = ["id", "product", "user_id", "status", "size_bytes", "requested_at", "expires_at"]
    list_filter = ["product", "status"]
    search_fields = ["user_id"]


class ProductRetentionForm(forms.ModelForm):
    """The API's rule for each limit (retention.limit_allowed): empty, or a whole number from 1 to MAX_LIMIT."""

    class Meta:
        model = ProductRetention
        fields = ["product", *retention.FIELDS.values()]

    def clean(self):
        data = super().clean()
        for field in retention.FIELDS.values():
            if field in data and not retention.limit_allowed(data[field]):
                self.add_error(field, f"a whole number from 1 to {retention.MAX_LIMIT}, or empty to keep everything")
        return data


@admin.register(ProductRetention)
class ProductRetentionAdmin(admin.ModelAdmin):
    """Per-product retention; empty fields keep everything. The sweep (lifecycle.prune) applies them."""

    form = ProductRetentionForm

    list_display = [
        "product",
        "memory_revisions_keep",
        "memory_revisions_days",
        "events_days",
        "turn_prompts_days",
        "table_versions_keep",
        "state_versions_keep",
        "updated_at",
    ]


@admin.register(Import)
class ImportAdmin(ReadOnlyAdmin):
    list_display = ["id", "product", "user_id", "status", "requested_at", "finished_at"]
    list_filter = ["product", "status"]
    search_fields = ["user_id"]

"""Operator console for products, keys and JSON memory documents."""

from __future__ import annotations

from django.contrib import admin, messages
from django.urls import reverse
from django.utils.html import format_html
from django.utils.translation import gettext_lazy as _

from memories.forms import MemoryDocumentForm, ProductForm, pretty_json
from memories.models import ApiKey, MemoryDocument, MemoryRevision, Product
from memories.services.documents import memory_document_delete, memory_document_replace
from memories.services.products import api_key_create, api_key_revoke_audited
from memories.services.tools import tool_tokens_revoke_all
from memoryhub.actors import Actor
from memoryhub.addresses import ConversationAddress
from memoryhub.admin_base import ReadOnlyAdmin, StorableJSONAdmin, VersionedEditAdmin, console_link


class ApiKeyInline(admin.TabularInline):
    model = ApiKey
    extra = 0
    can_delete = False
    fields = ["name", "prefix", "created_at", "revoked_at"]
    readonly_fields = ["name", "prefix", "created_at", "revoked_at"]
    show_change_link = True

    def has_add_permission(self, request, obj=None) -> bool:
        return False  # keys are created by the "issue a new API key" action, which shows the key once


@admin.register(Product)
class ProductAdmin(StorableJSONAdmin):
    form = ProductForm
    list_display = ["name", "id", "created_at"]
    search_fields = ["name", "id"]
    readonly_fields = ["id", "created_at"]
    inlines = [ApiKeyInline]
    actions = ["issue_api_key", "revoke_tool_tokens"]

    def has_issue_key_permission(self, request) -> bool:
        # Issuing adds an ApiKey that can read and write every conversation of the product: view is not enough.
        return request.user.has_perm("memories.add_apikey")

    @admin.action(description="Issue a new API key (shown once)", permissions=["issue_key"])
    def issue_api_key(self, request, queryset):
        for product in queryset:
            issued = api_key_create(product=product, name=f"issued by {request.user.get_username()}")
            self.log_addition(request, issued.api_key, f"Issued the API key {issued.api_key.prefix}… of {product}")
            self.message_user(
                request,
                f"New key for {product.name}: {issued.plaintext} — copy it now, it is not shown again.",
                messages.WARNING,
            )

    @admin.action(description="Revoke all tool tokens of the selected products", permissions=["change"])
    def revoke_tool_tokens(self, request, queryset):
        revoked = 0
        for product in queryset:
            count = tool_tokens_revoke_all(product=product)
            self.log_change(request, product, f"Revoked every tool token of {product} ({count} recorded)")
            revoked += count
        self.message_user(request, f"Revoked {revoked} tool token(s).")

    def save_model(self, request, obj, form, change):
        super().save_model(request, obj, form, change)
        if not change:
            issued = api_key_create(product=obj, name="default")
            self.message_user(
                request,
                f"API key for {obj.name}: {issued.plaintext} — copy it now, it is not shown again.",
                messages.WARNING,
            )


@admin.register(ApiKey)
class ApiKeyAdmin(admin.ModelAdmin):
    list_display = ["prefix", "product", "name", "created_at", "revoked_at", "revoke_link"]
    list_filter = ["revoked_at"]
    list_select_related = ["product"]
    search_fields = ["prefix", "product__name", "product__id"]
    readonly_fields = ["product", "name", "prefix", "created_at", "revoked_at"]
    actions = ["revoke"]

    def has_add_permission(self, request) -> bool:
        return False

    def get_list_display(self, request):
        """A view-only operator is not offered the revoke link (the console's page refuses them anyway)."""
        shown = super().get_list_display(request)
        return shown if self.has_change_permission(request) else [c for c in shown if c != "revoke_link"]

    @admin.display(description=_("revoke"))
    def revoke_link(self, obj: ApiKey) -> str:
        """The console's revoke page (memories/console): a confirmation, then an audited revocation."""
        if obj.revoked_at:
            return "—"
        return format_html(
            '<a class="mh-revoke" href="{}">{}</a>', reverse("console:revoke_key", args=[obj.pk]), _("Revoke…")
        )

    @admin.action(description="Revoke the selected keys", permissions=["change"])
    def revoke(self, request, queryset):
        active = list(queryset.filter(revoked_at__isnull=True))
        for api_key in active:
            api_key_revoke_audited(api_key=api_key, user=request.user)  # revokes and audits, as the console does
        self.message_user(request, f"Revoked {len(active)} key(s).")


@admin.register(MemoryDocument)
class MemoryDocumentAdmin(VersionedEditAdmin):
    form = MemoryDocumentForm
    list_display = ["user_id", "conversation_id", "product", "revision", "updated_at", "diff_link"]
    list_filter = ["product"]
    list_select_related = ["product"]
    search_fields = ["user_id", "conversation_id"]
    readonly_fields = ["product", "user_id", "conversation_id", "revision", "updated_at", "history"]
    fields = ["product", "user_id", "conversation_id", "revision", "updated_at", "memory", "loaded_revision", "history"]

    @admin.display(description="revisions")
    def diff_link(self, obj) -> str:
        return console_link("documents", obj.pk, "diff")

    def history(self, obj) -> str:
        rows = MemoryRevision.objects.filter(
            product=obj.product, user_id=obj.user_id, conversation_id=obj.conversation_id
        ).order_by("-revision")[:50]
        return format_html(
            "<table>{}</table>",
            format_html_join_rows(rows),
        )

    def delete_model(self, request, obj) -> None:
        memory_document_delete(ConversationAddress(obj.product, obj.user_id, obj.conversation_id))

    def delete_queryset(self, request, queryset) -> None:
        for document in queryset.select_related("product"):
            self.delete_model(request, document)

    def save_versioned(self, request, obj, form, actor: Actor) -> None:
        memory_document_replace(
            address=ConversationAddress(obj.product, obj.user_id, obj.conversation_id),
            expected_revision=form.cleaned_data["loaded_revision"],
            memory=form.cleaned_data["memory"],
            actor=actor,
        )


def format_html_join_rows(rows) -> str:
    from django.utils.html import format_html_join

    return format_html_join(
        "",
        "<tr><td>r{}</td><td>{}:{}</td><td>{}</td><td><pre style='white-space:pre-wrap'>{}</pre></td></tr>",
        ((r.revision, r.actor_type, r.actor, r.created_at, pretty_json(r.memory)) for r in rows),
    )


@admin.register(MemoryRevision)
class MemoryRevisionAdmin(ReadOnlyAdmin):
    list_display = ["user_id", "conversation_id", "revision", "actor_type", "actor", "created_at", "product"]
    list_filter = ["actor_type", "product"]
    list_select_related = ["product"]
    search_fields = ["user_id", "conversation_id", "actor"]

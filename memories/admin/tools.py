"""Operator console for tool tokens: which are live, revoked or orphaned by a revoked key; revoke them."""

from __future__ import annotations

from django.contrib import admin
from django.utils import timezone

from memories.models import IssuedToolToken
from memories.services.tools import tool_token_revoke


@admin.register(IssuedToolToken)
class IssuedToolTokenAdmin(admin.ModelAdmin):
    list_display = ["id", "product", "user_id", "conversation_id", "api_key", "created_at", "expires_at", "state"]
    list_filter = [("revoked_at", admin.EmptyFieldListFilter), "product"]
    list_select_related = ["product", "api_key"]
    search_fields = ["id", "user_id", "conversation_id", "product__id", "product__name"]
    readonly_fields = [f.name for f in IssuedToolToken._meta.fields]
    actions = ["revoke"]

    def has_add_permission(self, request) -> bool:
        return False  # minted by the API only: the token is shown once, to the product

    def has_change_permission(self, request, obj=None) -> bool:
        return False  # read-only; the revoke action is the one change

    def has_delete_permission(self, request, obj=None) -> bool:
        return False  # revoked, not deleted: the row says when; expired rows go when the product mints again

    @admin.display(description="state")
    def state(self, obj: IssuedToolToken) -> str:
        if obj.revoked_at:
            return "revoked"
        if obj.api_key.revoked_at:
            return "key revoked"
        return "expired" if obj.expires_at <= timezone.now() else "active"

    @admin.action(description="Revoke the selected tool tokens", permissions=["revoke"])
    def revoke(self, request, queryset):
        live = list(queryset.filter(revoked_at__isnull=True).select_related("product"))
        for issued in live:
            tool_token_revoke(product=issued.product, token_id=issued.pk)
        self.message_user(request, f"Revoked {len(live)} tool token(s).")

    def has_revoke_permission(self, request) -> bool:
        # A state change: guarded by the change permission, not by view (an auditor may look, not revoke).
        return request.user.has_perm("memories.change_issuedtooltoken")

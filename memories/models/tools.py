from __future__ import annotations

import secrets

from django.db import models

from .products import ApiKey, Product


def new_tool_token_id() -> str:
    return f"ttk_{secrets.token_hex(8)}"


class IssuedToolToken(models.Model):
    """A tool token minted for a model: the key that minted it, whose conversation it opens, and its revocation."""

    id = models.CharField(primary_key=True, max_length=32, default=new_tool_token_id, editable=False)
    product = models.ForeignKey(Product, on_delete=models.CASCADE, related_name="tool_tokens")
    # The token works only while this key is active: revoking the key revokes every token it minted.
    api_key = models.ForeignKey(ApiKey, on_delete=models.CASCADE, related_name="tool_tokens")
    user_id = models.CharField(max_length=128)
    conversation_id = models.CharField(max_length=128)
    scenario_slug = models.CharField(max_length=128, blank=True, default="")  # "": no scenario
    created_at = models.DateTimeField(auto_now_add=True)
    expires_at = models.DateTimeField()
    revoked_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        verbose_name = "tool token"
        indexes = [models.Index(fields=["product", "expires_at"], name="tooltoken_product_expiry_idx")]

    def __str__(self) -> str:
        return f"{self.id} ({self.user_id}/{self.conversation_id})"

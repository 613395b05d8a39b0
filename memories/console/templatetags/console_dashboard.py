"""`{% console_dashboard %}`: the dashboard block of the admin index (templates/admin/index.html)."""

from __future__ import annotations

from django import template

from memories.console.dashboard import dashboard_allowed, dashboard_build
from memories.console.views import selected_product

register = template.Library()


@register.inclusion_tag("console/dashboard.html", takes_context=True)
def console_dashboard(context) -> dict:
    request = context["request"]
    if not dashboard_allowed(request.user):
        return {"denied": True}  # nothing of it, not even the product switcher's names
    product = selected_product(request)
    return {"board": dashboard_build(product=product) if product else None, "request": request}

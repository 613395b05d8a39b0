"""The console's dashboard and operator-action pages (thin: figures in dashboard.py, actions in services.py).

Every view is wrapped by admin.site.admin_view in dashboard_urls.py: the admin's login and staff check.
An action is a GET confirmation page and a POST (CSRF-protected) that runs it once and says what happened.
"""

from __future__ import annotations

from django.contrib import admin, messages
from django.core.exceptions import PermissionDenied
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect
from django.template.response import TemplateResponse
from django.urls import reverse
from django.utils.translation import gettext as _

from memories.console.services import (
    ActionOutcome,
    hinos_resend,
    job_rerun,
    job_rerun_refusal,
    key_revoke,
    permission_for,
    rerunnable_jobs,
)
from memories.hinos.models import FailedHinosCommit
from memories.models import ApiKey, Product, Turn


def selected_product(request: HttpRequest) -> Product | None:
    """The product of `?product=<id>`, else the first one; an unknown id is a 404."""
    wanted = request.GET.get("product")
    if wanted:
        return get_object_or_404(Product, pk=wanted)
    return Product.objects.order_by("created_at", "id").first()


def dashboard(request: HttpRequest) -> HttpResponse:
    """The dashboard is the admin index; /admin/console/ leads there, keeping ?product=."""
    query = request.GET.urlencode()
    return redirect(reverse("admin:index") + (f"?{query}" if query else ""))


def _require(request: HttpRequest, action: str) -> None:
    if not request.user.has_perm(permission_for(action)):
        raise PermissionDenied


def _confirm(request, *, title: str, question: str, obj, refusal: str | None = None, back: str) -> HttpResponse:
    context = {
        **admin.site.each_context(request),  # the admin's header: user links, language switcher, navigation
        "title": title,
        "question": question,
        "object": obj,
        "refusal": refusal,
        "back": back,
    }
    return TemplateResponse(request, "console/confirm.html", context)


def _done(request, outcome: ActionOutcome, back: str) -> HttpResponse:
    messages.add_message(request, messages.SUCCESS if outcome.ok else messages.WARNING, outcome.message)
    return redirect(back)


def _back(product_id: str) -> str:
    return f"{reverse('admin:index')}?product={product_id}"


def rerun(request: HttpRequest, turn_pk: int, work: str) -> HttpResponse:
    if work not in rerunnable_jobs():
        raise Http404
    _require(request, work)
    turn = get_object_or_404(Turn.objects.select_related("product"), pk=turn_pk)
    back = _back(turn.product_id)
    if request.method == "POST":
        return _done(request, job_rerun(turn_pk=turn.pk, work=work, user=request.user), back)
    question = _("Schedule the failed %(work)s job of turn %(turn)s (round %(round)s) again?") % {
        "work": work,
        "turn": turn.pk,
        "round": turn.round,
    }
    refused = job_rerun_refusal(turn, work)
    title, refusal = _("Re-run a failed job"), refused.message if refused else None
    return _confirm(request, title=title, question=question, obj=turn, refusal=refusal, back=back)


def resend(request: HttpRequest, event_pk: int) -> HttpResponse:
    _require(request, "resend")
    event = get_object_or_404(FailedHinosCommit.objects.select_related("product", "turn"), pk=event_pk)
    back = _back(event.product_id)
    if request.method == "POST":
        return _done(request, hinos_resend(event=event, user=request.user), back)
    question = _("Send the Hinos commit of turn %(turn)s again, with the same claim id %(claim)s?") % {
        "turn": event.turn_id,
        "claim": event.details.get("claim_id", "—"),
    }
    return _confirm(request, title=_("Re-send a failed Hinos commit"), question=question, obj=event, back=back)


def revoke_key(request: HttpRequest, key_pk: int) -> HttpResponse:
    _require(request, "revoke")
    api_key = get_object_or_404(ApiKey.objects.select_related("product"), pk=key_pk)
    back = reverse("admin:memories_apikey_changelist")
    if request.method == "POST":
        return _done(request, key_revoke(api_key=api_key, user=request.user), back)
    question = _("Revoke the API key %(prefix)s… of %(product)s? Requests with it will answer 401.") % {
        "prefix": api_key.prefix,
        "product": api_key.product,
    }
    refusal = _("This key is already revoked.") if api_key.revoked_at else None
    return _confirm(request, title=_("Revoke an API key"), question=question, obj=api_key, refusal=refusal, back=back)

"""Thin views of the turn inspector, the conversation timeline and the readable artefacts (docs/console-inspector.md).

Each view finds the product of the object asked for (or the one named by `?product=`, which must match),
calls one selector with it, and renders a template; every view is wrapped in admin.site.admin_view by
inspector_urls.py, so it has the admin's login and staff check.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from django.contrib import admin
from django.core.exceptions import PermissionDenied
from django.db import models
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import render
from django.utils.translation import gettext as _
from django.utils.translation import gettext_noop

from diaries.models import DiaryEntry
from memories.console import artefacts, inspector, timeline
from memories.models import Conversation, MemoryDocument, Product, Turn
from memories.state.models import ConversationState
from memories.story.models import StorySnapshot
from memoryhub.errors import NotFound
from tables.models import MemoryTable


def _product(request: HttpRequest, model: type[models.Model], pk: int) -> Product:
    """The product owning the object; `?product=<id>` pins it (another product's object is then 404).

    The admin's own permission applies too: a staff user without `view` on the model sees nothing of it.
    """
    if not request.user.has_perm(f"{model._meta.app_label}.view_{model._meta.model_name}"):
        raise PermissionDenied
    product_id = model._default_manager.filter(pk=pk).values_list("product_id", flat=True).first()
    wanted = request.GET.get("product")
    if product_id is None or (wanted and wanted != product_id):
        raise Http404(_("Not found in this product."))
    return Product.objects.get(pk=product_id)


def _version(request: HttpRequest, name: str) -> int | None:
    raw = request.GET.get(name, "")
    if not raw:
        return None
    if not (raw.isascii() and raw.isdigit()) or len(raw) > 15:  # isdigit() alone admits "³", which int() refuses
        raise Http404(_("A version or round is a number."))
    return int(raw)


def _page(request: HttpRequest, template: str, title: str, call: Callable[[], object], **context) -> HttpResponse:
    try:
        result = call()
    except NotFound as exc:
        raise Http404(str(exc)) from None
    context = {**admin.site.each_context(request), "title": title, "result": result, **context}
    return render(request, template, context)


def turn_inspector(request: HttpRequest, pk: int) -> HttpResponse:
    product = _product(request, Turn, pk)
    call = lambda: inspector.turn_inspection(product=product, turn_id=pk)  # noqa: E731
    return _page(request, "console/inspector/turn.html", _("Turn %(pk)s") % {"pk": pk}, call, product=product)


def conversation_timeline(request: HttpRequest, pk: int) -> HttpResponse:
    product = _product(request, Conversation, pk)
    until = _version(request, "until")
    call = lambda: timeline.conversation_timeline(product=product, conversation_pk=pk, until=until)  # noqa: E731
    return _page(request, "console/inspector/timeline.html", _("Conversation timeline"), call, product=product)


@dataclass(frozen=True)
class Artefact:
    """One readable artefact page: the model whose product is checked, its template, title and selector."""

    model: type[models.Model]
    template: str
    title: str  # a msgid, translated per request
    read: Callable[[Product, int, int | None, int | None], object]  # (product, pk, from, to) → the page's result
    versions: bool = True  # ?from= / ?to= pick the versions compared


REVISIONS = "console/inspector/revisions.html"
# The one table of artefact pages: /admin/console/<kind>/<pk>/ (inspector_urls.py); a new artefact is a row here.
ARTEFACTS: dict[str, Artefact] = {
    "tables": Artefact(
        MemoryTable,
        "console/inspector/table.html",
        gettext_noop("Memory table"),
        lambda product, pk, old, new: artefacts.table_artefact(product=product, table_id=pk, old=old, new=new),
    ),
    "documents": Artefact(
        MemoryDocument,
        REVISIONS,
        gettext_noop("JSON memory"),
        lambda product, pk, old, new: artefacts.document_artefact(product=product, document_id=pk, old=old, new=new),
    ),
    "state": Artefact(
        ConversationState,
        REVISIONS,
        gettext_noop("Conversation state"),
        lambda product, pk, old, new: artefacts.state_artefact(product=product, state_id=pk, old=old, new=new),
    ),
    "story": Artefact(
        StorySnapshot,
        REVISIONS,
        gettext_noop("Story"),
        lambda product, pk, old, new: artefacts.story_artefact(product=product, snapshot_id=pk, old=old, new=new),
    ),
    "diaries": Artefact(
        DiaryEntry,
        "console/inspector/diary.html",
        gettext_noop("Diary entry"),
        lambda product, pk, _old, _new: artefacts.diary_artefact(product=product, entry_id=pk),
        versions=False,
    ),
}


def artefact_page(request: HttpRequest, kind: str, pk: int) -> HttpResponse:
    artefact = ARTEFACTS.get(kind)
    if artefact is None:
        raise Http404(_("Not found in this product."))
    product = _product(request, artefact.model, pk)
    old, new = (_version(request, "from"), _version(request, "to")) if artefact.versions else (None, None)
    call = lambda: artefact.read(product, pk, old, new)  # noqa: E731
    return _page(request, artefact.template, _(artefact.title), call, product=product)

"""The lorebooks API: import (World Info JSON, Character Card JSON or PNG), read, export, entries under CAS."""

from __future__ import annotations

from typing import Any

from drf_spectacular.utils import OpenApiParameter, extend_schema, extend_schema_field
from rest_framework.parsers import MultiPartParser
from rest_framework.response import Response
from rest_framework.views import APIView

from lorebooks import formats
from lorebooks import responses as bodies
from lorebooks.models import Lorebook, LorebookEntry, LorebookEntryProposal, LorebookEntryVersion
from lorebooks.selectors import (
    entry_get,
    entry_versions_page,
    live_entries,
    lorebook_get,
    lorebooks_page,
    proposal_get,
    proposals_page,
)
from lorebooks.services import (
    entry_create,
    entry_delete,
    entry_update,
    lorebook_delete,
    lorebook_import,
    proposal_accept,
    proposal_reject,
    proposal_submit,
)
from memoryhub.api.common import validated
from memoryhub.api.fields import (
    EmptyBodySerializer,
    IdentifierField,
    JSONObjectField,
    StrictCharField,
    StrictIntegerField,
    StrictSerializer,
)
from memoryhub.api.negotiation import JSONFirstContentNegotiation
from memoryhub.api.pagination import page_params
from memoryhub.api.parsers import StrictJSONParser
from memoryhub.errors import InvalidRequest
from memoryhub.timefmt import iso

MAX_PNG_BYTES = 20 * 1024 * 1024


class LorebookImportSerializer(StrictSerializer):
    id = IdentifierField()
    name = StrictCharField(max_length=200)
    worldInfo = JSONObjectField(required=False, help_text="A SillyTavern World Info file ({'entries': {…}}).")
    characterCard = JSONObjectField(
        required=False,
        help_text="A Character Card V2/V3 (spec chara_card_v2 or chara_card_v3, else 400 naming characterCard.spec) "
        "with data.character_book.",
    )


@extend_schema_field(
    {"oneOf": [{"type": "string", "minLength": 1, "maxLength": 64}, {"type": "integer", "minimum": 0}]}
)
class EntryUidField(StrictCharField):
    """An entry's uid: a string, or the integer a World Info file writes (`"uid": 0`), read as its digits."""

    def __init__(self, **kwargs):
        super().__init__(max_length=64, **kwargs)

    def to_internal_value(self, data):
        if isinstance(data, int) and not isinstance(data, bool) and data >= 0:
            data = str(data)
        return super().to_internal_value(data)


class EntryCreateSerializer(StrictSerializer):
    uid = EntryUidField(
        required=False, help_text="Default: the next free integer. 1-64 characters, not only dots (`.`, `..`: 400)."
    )
    entry = JSONObjectField(help_text="World Info fields (key, keysecondary, content, order, …).")


class EntryEditSerializer(StrictSerializer):
    expectedRevision = StrictIntegerField(help_text="The revision you read; a different stored one is 409.")
    entry = JSONObjectField(help_text="The World Info fields to change; the others keep their values.")


class ProposalSubmitSerializer(StrictSerializer):
    uid = EntryUidField(help_text="The entry to edit.")
    baseRevision = StrictIntegerField(help_text="The entry revision you read; a different stored one is 409.")
    entry = JSONObjectField(help_text="The World Info fields to change, as an edit's.")
    reason = StrictCharField(required=False, allow_blank=True, max_length=1000)


class ProposalRejectSerializer(StrictSerializer):
    note = StrictCharField(required=False, allow_blank=True, max_length=1000, help_text="Why it was rejected.")


def proposal_to_dict(proposal: LorebookEntryProposal) -> dict[str, Any]:
    return {
        "id": proposal.pk,
        "uid": proposal.entry.uid,
        "baseRevision": proposal.base_revision,
        "entry": proposal.changes,
        "reason": proposal.reason,
        "status": proposal.status,
        "proposedBy": proposal.proposed_by or None,
        "decidedBy": proposal.decided_by or None,
        "note": proposal.decision_note,
        "revision": proposal.revision,
        "createdAt": iso(proposal.created_at),
        "decidedAt": iso(proposal.decided_at) if proposal.decided_at else None,
    }


def lorebook_to_dict(lorebook: Lorebook, *, entries: bool = False) -> dict[str, Any]:
    out: dict[str, Any] = {
        "id": lorebook.slug,
        "name": lorebook.name,
        "format": lorebook.format,
        "entryCount": live_entries(lorebook).count(),
        "createdAt": iso(lorebook.created_at),
        "updatedAt": iso(lorebook.updated_at),
    }
    if entries:
        out["entries"] = [entry_to_dict(lorebook, e) for e in live_entries(lorebook)]
    return out


def entry_to_dict(lorebook: Lorebook, entry: LorebookEntry) -> dict[str, Any]:
    return {
        "uid": entry.uid,
        "revision": entry.revision,
        "entry": formats.view_of(lorebook.format, entry.data),
        "native": entry.data,
        "updatedAt": iso(entry.updated_at),
    }


def version_to_dict(lorebook: Lorebook, row: LorebookEntryVersion) -> dict[str, Any]:
    return {
        "revision": row.revision,
        "deleted": row.deleted,
        "entry": formats.view_of(lorebook.format, row.data),
        "native": row.data,
        "cause": row.cause,
        "actor": row.actor or None,
        "createdAt": iso(row.created_at),
    }


def _parsed_from_json(data: dict) -> formats.ParsedBook:
    given = [key for key in ("worldInfo", "characterCard") if key in data]
    if len(given) != 1:
        raise InvalidRequest("send exactly one of worldInfo or characterCard", details={"field": "worldInfo"})
    if given[0] == "worldInfo":
        return formats.parse_world_info(data["worldInfo"])
    return formats.parse_character_card(data["characterCard"])


def _parsed_from_upload(request) -> tuple[dict, formats.ParsedBook]:
    upload = request.FILES.get("file")
    if upload is None:
        raise InvalidRequest("a multipart import needs a 'file' (a PNG character card)", details={"field": "file"})
    if upload.size > MAX_PNG_BYTES:
        raise InvalidRequest(f"the file is over {MAX_PNG_BYTES} bytes", details={"field": "file"})
    fields = {"id": request.data.get("id"), "name": request.data.get("name")}
    return fields, formats.parse_character_card(formats.card_from_png(upload.read()))


class LorebookListView(APIView):
    parser_classes = [StrictJSONParser, MultiPartParser]

    @extend_schema(
        responses=bodies.LorebookPageSerializer,
        parameters=[OpenApiParameter("cursor", str), OpenApiParameter("limit", int)],
        operation_id="lorebooks_list",
    )
    def get(self, request):
        cursor, limit = page_params(request)
        rows, next_cursor = lorebooks_page(product=request.user.product, cursor=cursor, limit=limit)
        return Response({"results": [lorebook_to_dict(b) for b in rows], "next": next_cursor})

    @extend_schema(
        request={"application/json": LorebookImportSerializer, "multipart/form-data": dict},
        responses={201: bodies.LorebookDetailSerializer},
        operation_id="lorebooks_import",
        description="JSON: id, name and worldInfo or characterCard. Multipart: id, name and file (a PNG card "
        "whose `chara` or `ccv3` tEXt chunk holds the card as base64 JSON).",
    )
    def post(self, request):
        if request.content_type.startswith("multipart/"):
            fields, parsed = _parsed_from_upload(request)
        else:
            fields = validated(LorebookImportSerializer, request.data)
            parsed = _parsed_from_json(fields)
        lorebook = lorebook_import(
            product=request.user.product,
            slug=fields["id"],
            name=fields["name"],
            parsed=parsed,
            actor=request.user.actor,
        )
        return Response(lorebook_to_dict(lorebook, entries=True), status=201)


class LorebookDetailView(APIView):
    @extend_schema(responses=bodies.LorebookDetailSerializer, operation_id="lorebooks_get")
    def get(self, request, lorebook_id: str):
        return Response(lorebook_to_dict(lorebook_get(product=request.user.product, slug=lorebook_id), entries=True))

    @extend_schema(responses={204: None}, operation_id="lorebooks_delete")
    def delete(self, request, lorebook_id: str):
        lorebook_delete(product=request.user.product, slug=lorebook_id)
        return Response(status=204)


class FileFormatNegotiation(JSONFirstContentNegotiation):
    """Here `?format=` names the lorebook file format (worldinfo, charactercard), never a renderer."""

    class settings:
        URL_FORMAT_OVERRIDE = None


class LorebookExportView(APIView):
    content_negotiation_class = FileFormatNegotiation

    @extend_schema(
        responses=bodies.LorebookFileSerializer,
        parameters=[OpenApiParameter("format", str, enum=list(formats.FORMATS), description="Default: its own.")],
        operation_id="lorebooks_export",
    )
    def get(self, request, lorebook_id: str):
        lorebook = lorebook_get(product=request.user.product, slug=lorebook_id)
        wanted = request.query_params.get("format", lorebook.format)
        if wanted not in formats.FORMATS:
            raise InvalidRequest("format must be worldinfo or charactercard", details={"field": "format"})
        entries = [(e.uid, e.data) for e in live_entries(lorebook)]
        return Response(formats.export(lorebook.format, lorebook.shell, entries, wanted=wanted, name=lorebook.name))


class EntryListView(APIView):
    @extend_schema(responses=bodies.LorebookEntryListSerializer, operation_id="lorebook_entries_list")
    def get(self, request, lorebook_id: str):
        lorebook = lorebook_get(product=request.user.product, slug=lorebook_id)
        return Response({"results": [entry_to_dict(lorebook, e) for e in live_entries(lorebook)]})

    @extend_schema(
        request=EntryCreateSerializer,
        responses={201: bodies.LorebookEntrySerializer},
        operation_id="lorebook_entries_create",
    )
    def post(self, request, lorebook_id: str):
        lorebook = lorebook_get(product=request.user.product, slug=lorebook_id)
        data = validated(EntryCreateSerializer, request.data)
        entry = entry_create(lorebook=lorebook, entry=data["entry"], uid=data.get("uid"), actor=request.user.actor)
        return Response(entry_to_dict(lorebook, entry), status=201)


class EntryDetailView(APIView):
    @extend_schema(responses=bodies.LorebookEntrySerializer, operation_id="lorebook_entries_get")
    def get(self, request, lorebook_id: str, uid: str):
        lorebook = lorebook_get(product=request.user.product, slug=lorebook_id)
        return Response(entry_to_dict(lorebook, entry_get(lorebook, uid)))

    @extend_schema(
        request=EntryEditSerializer, responses=bodies.LorebookEntrySerializer, operation_id="lorebook_entries_edit"
    )
    def patch(self, request, lorebook_id: str, uid: str):
        lorebook = lorebook_get(product=request.user.product, slug=lorebook_id)
        entry = entry_get(lorebook, uid)
        data = validated(EntryEditSerializer, request.data)
        entry_update(
            entry=entry, expected_revision=data["expectedRevision"], changes=data["entry"], actor=request.user.actor
        )
        return Response(entry_to_dict(lorebook, entry_get(lorebook, uid)))

    @extend_schema(
        responses={204: None},
        parameters=[OpenApiParameter("expectedRevision", int, required=True)],
        operation_id="lorebook_entries_delete",
    )
    def delete(self, request, lorebook_id: str, uid: str):
        lorebook = lorebook_get(product=request.user.product, slug=lorebook_id)
        entry = entry_get(lorebook, uid)
        raw = request.query_params.get("expectedRevision", "")
        if not raw.isdigit():
            raise InvalidRequest("expectedRevision is required", details={"field": "expectedRevision"})
        entry_delete(entry=entry, expected_revision=int(raw), actor=request.user.actor)
        return Response(status=204)


class EntryVersionListView(APIView):
    @extend_schema(
        responses=bodies.LorebookEntryVersionPageSerializer,
        parameters=[OpenApiParameter("cursor", str), OpenApiParameter("limit", int)],
        operation_id="lorebook_entry_versions",
    )
    def get(self, request, lorebook_id: str, uid: str):
        lorebook = lorebook_get(product=request.user.product, slug=lorebook_id)
        entry = entry_get(lorebook, uid, deleted_too=True)  # a deleted entry's history stays readable
        cursor, limit = page_params(request)
        rows, next_cursor = entry_versions_page(entry, cursor=cursor, limit=limit)
        return Response({"results": [version_to_dict(lorebook, r) for r in rows], "next": next_cursor})


class ProposalListView(APIView):
    @extend_schema(
        responses=bodies.LorebookProposalPageSerializer,
        parameters=[
            OpenApiParameter("status", str, enum=["pending", "accepted", "rejected"]),
            OpenApiParameter("cursor", str),
            OpenApiParameter("limit", int),
        ],
        operation_id="lorebook_proposals_list",
    )
    def get(self, request, lorebook_id: str):
        lorebook = lorebook_get(product=request.user.product, slug=lorebook_id)
        status = request.query_params.get("status")
        if status is not None and status not in ("pending", "accepted", "rejected"):
            raise InvalidRequest("status must be pending, accepted or rejected", details={"field": "status"})
        cursor, limit = page_params(request)
        rows, next_cursor = proposals_page(lorebook, status=status, cursor=cursor, limit=limit)
        return Response({"results": [proposal_to_dict(p) for p in rows], "next": next_cursor})

    @extend_schema(
        request=ProposalSubmitSerializer,
        responses={201: bodies.LorebookProposalSerializer},
        operation_id="lorebook_proposals_submit",
    )
    def post(self, request, lorebook_id: str):
        lorebook = lorebook_get(product=request.user.product, slug=lorebook_id)
        data = validated(ProposalSubmitSerializer, request.data)
        proposal = proposal_submit(
            lorebook=lorebook,
            uid=data["uid"],
            base_revision=data["baseRevision"],
            changes=data["entry"],
            reason=data.get("reason", ""),
            actor=request.user.actor,
        )
        return Response(proposal_to_dict(proposal), status=201)


class ProposalDetailView(APIView):
    @extend_schema(responses=bodies.LorebookProposalSerializer, operation_id="lorebook_proposals_get")
    def get(self, request, lorebook_id: str, proposal_id: int):
        lorebook = lorebook_get(product=request.user.product, slug=lorebook_id)
        return Response(proposal_to_dict(proposal_get(lorebook, proposal_id)))


class ProposalAcceptView(APIView):
    @extend_schema(
        request=EmptyBodySerializer,
        responses=bodies.LorebookProposalSerializer,
        operation_id="lorebook_proposals_accept",
    )
    def post(self, request, lorebook_id: str, proposal_id: int):
        lorebook = lorebook_get(product=request.user.product, slug=lorebook_id)
        validated(EmptyBodySerializer, request.data)
        return Response(
            proposal_to_dict(proposal_accept(lorebook=lorebook, proposal_id=proposal_id, actor=request.user.actor))
        )


class ProposalRejectView(APIView):
    @extend_schema(
        request=ProposalRejectSerializer,
        responses=bodies.LorebookProposalSerializer,
        operation_id="lorebook_proposals_reject",
    )
    def post(self, request, lorebook_id: str, proposal_id: int):
        lorebook = lorebook_get(product=request.user.product, slug=lorebook_id)
        note = validated(ProposalRejectSerializer, request.data).get("note", "")
        proposal = proposal_reject(lorebook=lorebook, proposal_id=proposal_id, actor=request.user.actor, note=note)
        return Response(proposal_to_dict(proposal))

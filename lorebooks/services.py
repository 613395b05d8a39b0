"""Lorebook writes: import a file, and create, edit or delete an entry under compare-and-set with history.

Every entry write goes through memoryhub.cas (one conditional UPDATE on `revision`, its history row in the
same transaction); an edit names World Info view fields and is merged into the entry's native JSON
(lorebooks/formats.py), so fields memoryhub does not know survive every edit and the export.
"""

from __future__ import annotations

from django.db import IntegrityError, transaction
from django.db.models import Max
from django.utils import timezone

from lorebooks import formats
from lorebooks.models import Lorebook, LorebookEntry, LorebookEntryProposal, LorebookEntryVersion
from lorebooks.selectors import entry_get, lorebook_get
from memories.models import Product
from memoryhub import cas
from memoryhub.actors import Actor
from memoryhub.errors import Conflict, InvalidRequest, NotFound, RevisionConflict
from memoryhub.identifiers import only_dots, validate_identifier


def lorebook_import(
    *, product: Product, slug: object, name: object, parsed: formats.ParsedBook, actor: Actor
) -> Lorebook:
    """Create the lorebook with every entry at revision 1; 409 when the product has one with this id."""
    slug = validate_identifier(slug, "id")  # type: ignore[arg-type]
    if not isinstance(name, str) or not 1 <= len(name.strip()) <= 200:
        raise InvalidRequest("name is required: 1-200 characters", details={"field": "name"})
    for uid, _ in parsed.entries:
        _check_uid(uid)
    try:
        with transaction.atomic():
            lorebook = Lorebook.objects.create(
                product=product, slug=slug, name=name.strip(), format=parsed.format, shell=parsed.shell
            )
            entries = LorebookEntry.objects.bulk_create(
                LorebookEntry(product=product, lorebook=lorebook, uid=uid, position=i, data=native)
                for i, (uid, native) in enumerate(parsed.entries)
            )
            LorebookEntryVersion.objects.bulk_create(
                LorebookEntryVersion(
                    product=product, entry=e, revision=1, data=e.data, cause="import", actor=str(actor)
                )
                for e in entries
            )
    except IntegrityError:
        raise Conflict(f"a lorebook {slug!r} already exists", code="already_exists") from None
    return lorebook


def lorebook_delete(*, product: Product, slug: str) -> None:
    lorebook_get(product=product, slug=slug).delete()


def _check_uid(uid: str) -> None:
    # A uid is a path segment (…/entries/{uid}): `.` or `..` would address the lorebook instead.
    if not 1 <= len(uid) <= 64 or only_dots(uid):
        raise InvalidRequest("an entry uid must be 1-64 characters, not only dots", details={"field": "uid"})


def _cause(actor: Actor) -> str:
    return actor.type if actor.type in ("api_key", "operator", "tool") else "api_key"


def entry_create(*, lorebook: Lorebook, entry: object, uid: object, actor: Actor) -> LorebookEntry:
    """A new entry from view fields (defaults for the rest); its uid is the next free integer unless given."""
    changes = validate_changes(entry)
    view = formats.view_of(formats.WORLDINFO, changes)
    with transaction.atomic():
        siblings = LorebookEntry.objects.select_for_update().filter(lorebook=lorebook)  # serializes uid choice
        taken = set(siblings.values_list("uid", flat=True))
        if uid is None:
            uid = str(max((int(u) for u in taken if u.isdigit()), default=-1) + 1)
        elif not isinstance(uid, str):
            raise InvalidRequest("uid must be a string", details={"field": "uid"})
        _check_uid(uid)
        if uid in taken:
            raise Conflict(f"lorebook {lorebook.slug!r} has an entry {uid!r} already", code="already_exists")
        position = (siblings.aggregate(last=Max("position"))["last"] or 0) + 1
        native = formats.new_native(lorebook.format, uid, view)
        row = LorebookEntry.objects.create(
            product=lorebook.product, lorebook=lorebook, uid=uid, position=position, data=native
        )
        LorebookEntryVersion.objects.create(
            product=lorebook.product, entry=row, revision=1, data=native, cause=_cause(actor), actor=str(actor)
        )
    return row


def validate_changes(changes: object, where: str = "entry") -> dict:
    """View fields of an edit, checked with the schema every import and admin edit uses."""
    if not isinstance(changes, dict):
        raise InvalidRequest(f"{where} must be an object of entry fields", details={"field": where})
    return formats.validate_view(changes, where)


def entry_update(
    *, entry: LorebookEntry, expected_revision: int, changes: object, actor: Actor, cause: str | None = None
) -> int:
    """Merge the view fields into the native JSON iff the stored revision is `expected_revision` (409 otherwise)."""
    clean = validate_changes(changes)
    if entry.revision != expected_revision:  # the merge base must be the revision the caller read
        raise RevisionConflict(
            entry.revision, message=f"the entry is at revision {entry.revision}; re-read and decide again"
        )
    native = formats.apply_edit(entry.lorebook.format, entry.data, clean)
    formats.validate_view(formats.view_of(entry.lorebook.format, native), "entry")
    if native == entry.data:
        return entry.revision  # nothing to write: the revision stays
    return _write(entry, expected_revision, native, deleted=False, actor=actor, cause=cause)


def entry_delete(*, entry: LorebookEntry, expected_revision: int, actor: Actor) -> int:
    """Mark it deleted as a new revision (its history stays; export and recall no longer see it)."""
    return _write(entry, expected_revision, entry.data, deleted=True, actor=actor)


def _write(
    entry: LorebookEntry, expected: int, native: dict, *, deleted: bool, actor: Actor | str, cause: str | None = None
) -> int:
    return cas.compare_and_set(
        cas.Versioned(
            LorebookEntry,
            {"pk": entry.pk, "deleted": False},
            kind="lorebook_entry",
            conflict_message="the entry is at revision {current}; re-read and decide again",
            missing_message=f"no entry {entry.uid!r} in lorebook {entry.lorebook.slug!r}",
        ),
        expected,
        changes={"data": native, "deleted": deleted, "updated_at": timezone.now()},
        history=lambda revision: LorebookEntryVersion.objects.create(
            product_id=entry.product_id,
            entry_id=entry.pk,
            revision=revision,
            data=native,
            deleted=deleted,
            cause=cause or _cause(actor),  # type: ignore[arg-type]
            actor=str(actor)[:200],
        ),
    )


def entry_for_edit(*, product: Product, slug: str, uid: str) -> LorebookEntry:
    return entry_get(lorebook_get(product=product, slug=slug), uid)


# --- proposals: a model's entry edits, committed when accepted -------------------------------------------------


def proposal_submit(
    *, lorebook: Lorebook, uid: str, base_revision: int, changes: object, reason: str, actor: Actor | str
) -> LorebookEntryProposal:
    """Store a pending edit of one entry, checked as the edit would be: fields (400), the entry's revision (409)."""
    entry = entry_get(lorebook, uid)
    clean = validate_changes(changes)
    if entry.revision != base_revision:  # as a state candidate: proposed on what the proposer read, or not at all
        raise RevisionConflict(
            entry.revision, message=f"the entry is at revision {entry.revision}; re-read and propose again"
        )
    formats.validate_view(
        formats.view_of(lorebook.format, formats.apply_edit(lorebook.format, entry.data, clean)), "entry"
    )
    return LorebookEntryProposal.objects.create(
        product=lorebook.product,
        entry=entry,
        base_revision=base_revision,
        changes=clean,
        reason=reason[:1000],
        proposed_by=str(actor)[:200],
    )


def _pending_locked(lorebook: Lorebook, proposal_id: int) -> LorebookEntryProposal:
    proposal = (
        LorebookEntryProposal.objects.select_for_update(of=("self",))
        .select_related("entry__lorebook")
        .filter(pk=proposal_id, product=lorebook.product, entry__lorebook=lorebook)
        .first()
    )
    if proposal is None:
        raise NotFound(f"no proposal {proposal_id} in lorebook {lorebook.slug!r}")
    if proposal.status != "pending":
        raise Conflict(
            f"proposal {proposal_id} was {proposal.status} already",
            code="proposal_decided",
            details={"status": proposal.status},
        )
    return proposal


def proposal_accept(*, lorebook: Lorebook, proposal_id: int, actor: Actor) -> LorebookEntryProposal:
    """Commit the proposal's changes on its base revision (compare-and-set: 409 when the entry changed since, and
    the proposal stays pending), with history (cause `proposal`), and mark it accepted, in one transaction."""
    with transaction.atomic():
        proposal = _pending_locked(lorebook, proposal_id)
        entry = proposal.entry
        if entry.deleted:
            raise Conflict(f"entry {entry.uid!r} was deleted", code="entry_deleted", details={"uid": entry.uid})
        who = f"{actor} (proposal {proposal.pk} by {proposal.proposed_by or 'unknown'})"
        revision = entry_update(
            entry=entry,
            expected_revision=proposal.base_revision,
            changes=proposal.changes,
            actor=who,  # type: ignore[arg-type]
            cause="proposal",
        )
        return _decide(proposal, "accepted", actor, note="", revision=revision)


def proposal_reject(*, lorebook: Lorebook, proposal_id: int, actor: Actor, note: str = "") -> LorebookEntryProposal:
    with transaction.atomic():
        return _decide(_pending_locked(lorebook, proposal_id), "rejected", actor, note=note, revision=None)


def _decide(
    proposal: LorebookEntryProposal, status: str, actor: Actor, *, note: str, revision: int | None
) -> LorebookEntryProposal:
    proposal.status, proposal.decided_by, proposal.decision_note = status, str(actor)[:200], note[:1000]
    proposal.revision, proposal.decided_at = revision, timezone.now()
    proposal.save(update_fields=["status", "decided_by", "decision_note", "revision", "decided_at"])
    return proposal

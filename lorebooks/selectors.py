"""Reads of lorebooks. Every selector takes the product: another product's lorebook is simply not found."""

from __future__ import annotations

from collections.abc import Iterable

from django.db.models import Exists, OuterRef, QuerySet

from lorebooks.models import Lorebook, LorebookEntry, LorebookEntryProposal, LorebookEntryVersion
from memories.models import Message, Product, Turn
from memoryhub.addresses import ConversationAddress
from memoryhub.db_routing import primary_reads
from memoryhub.errors import NotFound
from memoryhub.pagination import keyset_page

LIVE_TURNS = ("completed", "committed")  # a turn whose reply is part of the visible conversation


def lorebooks_page(*, product: Product, cursor: str | None, limit: int) -> tuple[list[Lorebook], str | None]:
    return keyset_page(
        Lorebook.objects.filter(product=product), field="id", descending=False, cursor=cursor, limit=limit
    )


def lorebook_get(*, product: Product, slug: str) -> Lorebook:
    lorebook = Lorebook.objects.filter(product=product, slug=slug).first()
    if lorebook is None:
        raise NotFound(f"no lorebook {slug!r}")
    return lorebook


def live_entries(lorebook: Lorebook) -> QuerySet[LorebookEntry]:
    """The entries a lorebook has now (a deleted one keeps its row and history), in file order."""
    return LorebookEntry.objects.filter(product=lorebook.product, lorebook=lorebook, deleted=False).order_by(
        "position", "pk"
    )


@primary_reads  # revisions the client sends back as expectedRevision: never a lagging replica's
def entry_get(lorebook: Lorebook, uid: str, *, deleted_too: bool = False) -> LorebookEntry:
    rows = LorebookEntry.objects.filter(product=lorebook.product, lorebook=lorebook)
    entry = (rows if deleted_too else rows.filter(deleted=False)).filter(uid=uid).select_related("lorebook").first()
    if entry is None:
        raise NotFound(f"no entry {uid!r} in lorebook {lorebook.slug!r}")
    return entry


def entry_versions_page(entry: LorebookEntry, *, cursor: str | None, limit: int) -> tuple[list, str | None]:
    rows = LorebookEntryVersion.objects.filter(product=entry.product, entry=entry)
    return keyset_page(rows, field="revision", descending=True, cursor=cursor, limit=limit)


def proposals_page(
    lorebook: Lorebook, *, status: str | None, cursor: str | None, limit: int
) -> tuple[list[LorebookEntryProposal], str | None]:
    rows = LorebookEntryProposal.objects.filter(product=lorebook.product, entry__lorebook=lorebook)
    if status:
        rows = rows.filter(status=status)
    return keyset_page(rows.select_related("entry"), field="id", descending=True, cursor=cursor, limit=limit)


@primary_reads  # a decision just made must be read back as made
def proposal_get(lorebook: Lorebook, proposal_id: int) -> LorebookEntryProposal:
    proposal = (
        LorebookEntryProposal.objects.select_related("entry")
        .filter(pk=proposal_id, product=lorebook.product, entry__lorebook=lorebook)
        .first()
    )
    if proposal is None:
        raise NotFound(f"no proposal {proposal_id} in lorebook {lorebook.slug!r}")
    return proposal


def entries_for_recall(
    product: Product, slugs: Iterable[str]
) -> tuple[list[tuple[Lorebook, LorebookEntry]], list[str]]:
    """Every live entry of the named lorebooks in the order they are named, and the names not found."""
    wanted = list(slugs)
    books = {book.slug: book for book in Lorebook.objects.filter(product=product, slug__in=wanted)}
    rows = (
        LorebookEntry.objects.filter(product=product, lorebook__in=list(books.values()), deleted=False)
        .select_related("lorebook")
        .order_by("position", "pk")
    )
    by_book: dict[int, list[LorebookEntry]] = {}
    for row in rows:
        by_book.setdefault(row.lorebook_id, []).append(row)
    found = [(books[slug], entry) for slug in wanted if slug in books for entry in by_book.get(books[slug].pk, [])]
    return found, [slug for slug in wanted if slug not in books]


# Turns looked at for the timed-effect state: the newest visible ones of earlier rounds. A scenario whose
# lorebook source was added or renamed later starts without effects once this many turns lack it.
TIMED_LOOKBACK = 20


@primary_reads  # the previous turn's state was just committed: never a lagging replica's
def timed_state_before(address: ConversationAddress, *, round: int, source_id: str) -> dict | None:
    """The sticky/cooldown state a lorebook source left after the newest visible turn of an earlier round
    (the source status's `details.timedEffects`, lorebooks/producers.py); None when no such turn has one."""
    turns = (
        Turn.objects.filter(
            product=address.product,
            user_id=address.user_id,
            conversation_id=address.conversation_id,
            round__lt=round,
            status__in=LIVE_TURNS,
        )
        # A regeneration awaiting accept (its messages stored superseded) is not its round's visible reply yet.
        .exclude(Exists(Message.objects.filter(turn=OuterRef("pk"), superseded=True, deleted=False)))
        .order_by("-round", "-pk")
        .values_list("sources", flat=True)[:TIMED_LOOKBACK]
    )
    for sources in turns:
        for status in sources or []:
            if status.get("id") == source_id and status.get("agentRef") == "lorebook":
                return (status.get("details") or {}).get("timedEffects")
    return None

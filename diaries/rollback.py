"""Diary entries from a superseded turn's round on are taken back; a select brings the selected turn's back.

Entries are append-only, so an undo marks them (`rolled_back_by`, `rolled_back_at`): kept for the history, no
longer recalled or listed, and the conversation's `last_diary_round` returns to the newest live entry so the next
plan covers those rounds again from the visible messages (docs/roleplay.md). A select marks the displaced
reply's entries the same way and brings back those rolled back with the selected turn, unless a live entry
covers one of their rounds meanwhile (a conflict, reported).
"""

from __future__ import annotations

from typing import Any

from django.db.models import Max
from django.utils import timezone

from memories.models import Turn
from memories.services.events import event_emit_for_turn
from memoryhub import working_set
from memoryhub.events import publish as publish_event

from . import selectors
from .models import DiaryEntry, DiaryState


def diary_undo_turn(turn_pk: int, by_turn_pk: int | None) -> dict[str, Any] | None:
    turn = Turn.objects.select_related("product").filter(pk=turn_pk).first()
    if turn is None:
        return None
    state = _locked_state(turn)
    # The entry covering the round and every later one: the plan's bookmark is one round, so a live entry after
    # the gap would keep the superseded round from being planned again.
    hit = _entries(turn).filter(rolled_back_at__isnull=True, round_to__gte=turn.round)
    ids = sorted(hit.values_list("pk", flat=True))
    if not ids:
        return None
    DiaryEntry.objects.filter(pk__in=ids).update(rolled_back_by=turn, rolled_back_at=timezone.now())
    report = {"status": "rolled_back", "entryIds": ids, **_after(turn, state)}
    _emit(turn, "diary.rolled_back", {**report, "byTurnId": by_turn_pk, "round": turn.round})
    return report


def diary_redo_turn(turn_pk: int, displaced_turn_pk: int | None) -> dict[str, Any] | None:
    turn = Turn.objects.select_related("product").filter(pk=turn_pk).first()
    if turn is None:
        return None
    state = _locked_state(turn)
    mine = list(_entries(turn).filter(rolled_back_by=turn).order_by("pk"))
    if not mine:
        return None
    live = _entries(turn).filter(rolled_back_at__isnull=True)
    clash = [e.pk for e in mine if live.filter(round_from__lte=e.round_to, round_to__gte=e.round_from).exists()]
    if clash:
        report = {"status": "conflict", "entryIds": clash, "reason": "a live diary entry covers these rounds now"}
        _emit(turn, "diary.rollback_conflict", {**report, "action": "reapply"})
        return report
    DiaryEntry.objects.filter(pk__in=[e.pk for e in mine]).update(rolled_back_by=None, rolled_back_at=None)
    report = {"status": "reapplied", "entryIds": [e.pk for e in mine], **_after(turn, state)}
    _emit(turn, "diary.reapplied", {**report, "displacedTurnId": displaced_turn_pk})
    return report


def _emit(turn: Turn, type: str, details: dict[str, Any]) -> None:
    event_emit_for_turn(turn, type, details)
    data = {"turnId": turn.pk, **{k: v for k, v in details.items() if k != "reason"}}
    publish_event(turn.product, type, user=turn.user_id, conversation=turn.conversation_id, data=data)


def _entries(turn: Turn):
    return DiaryEntry.objects.filter(
        product_id=turn.product_id, user_id=turn.user_id, conversation_id=turn.conversation_id
    )


def _locked_state(turn: Turn) -> DiaryState | None:
    """The conversation's diary lock row: a plan running now finishes first (or waits for this)."""
    return (
        DiaryState.objects.select_for_update()
        .filter(product_id=turn.product_id, user_id=turn.user_id, conversation_id=turn.conversation_id)
        .first()
    )


def _after(turn: Turn, state: DiaryState | None) -> dict[str, Any]:
    """The plan's bookmark moved to the newest live entry; the recall entries invalidated."""
    newest = _entries(turn).filter(rolled_back_at__isnull=True).aggregate(last=Max("round_to"))["last"] or 0
    if state is not None:
        DiaryState.objects.filter(pk=state.pk).update(last_diary_round=newest, updated_at=timezone.now())
    for agent_ref in set(_entries(turn).values_list("agent_ref", flat=True)):
        scope = selectors.compass_scope(
            product_id=turn.product_id, user_id=turn.user_id, conversation_id=turn.conversation_id, agent_ref=agent_ref
        )
        working_set.invalidate(scope)
    return {"lastDiaryRound": newest}

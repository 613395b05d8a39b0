"""The console's operator actions (docs/console.md): each one confirmed in the admin, audited twice — a Django
admin LogEntry (the admin's "Recent actions" and object history) and, for a conversation's work, an Event.

- re-run a failed job after a turn (the re-runnable jobs of memoryhub/turn_jobs.py: diaries, tables): scheduled
  through the registry's one path, the outbox (idempotent: one re-run per failure);
- re-send a failed Hinos commit: the Hinos app's own service (memories/hinos/services/commits.py);
- revoke an API key: the product service's api_key_revoke.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from django.db import transaction
from django.utils.translation import gettext as _

from memories.hinos.services.commits import RESEND_PERMISSION, hinos_commit_resend_audited
from memories.models import ApiKey, Event, Turn
from memories.services.events import event_emit_for_turn
from memories.services.products import api_key_revoke_audited
from memoryhub import turn_jobs
from memoryhub.admin_base import log_actions

RERUN_EVENT = "memory.job_rerun"

# The permission each other action needs: the change permission of what it changes (view is never enough); a
# re-run needs the one its job registered (rerun_permission).
PERMISSIONS = {"resend": RESEND_PERMISSION, "revoke": "memories.change_apikey"}


def rerunnable_jobs() -> list[str]:
    """The names of the jobs an operator may re-run (Turn.memory_write["work"] names them)."""
    return [job.name for job in turn_jobs.rerunnable()]


def permission_for(action: str) -> str:
    """The permission an action (a re-runnable job's name, "resend" or "revoke") needs."""
    if action in PERMISSIONS:
        return PERMISSIONS[action]
    return turn_jobs.get(action).rerun_permission


Status = Literal["scheduled", "not_failed", "not_rerunnable", "done", "failed"]
RESEND_STATUS: dict[str, Status] = {"committed": "done", "already_committed": "done", "failed": "failed"}


@dataclass(frozen=True)
class ActionOutcome:
    status: Status
    message: str

    @property
    def ok(self) -> bool:
        return self.status in ("scheduled", "done")


def audit(user, obj, message: str) -> None:
    """An admin LogEntry (CHANGE) on `obj` by the operator."""
    log_actions(user, [obj], message)


def job_rerun_refusal(turn: Turn, work: str) -> ActionOutcome | None:
    """Why the job `work` of `turn` cannot be re-run now (status not_failed or not_rerunnable), or None."""
    if work not in rerunnable_jobs():
        return ActionOutcome("not_rerunnable", _("unknown job %(work)s") % {"work": work})
    state = ((turn.memory_write or {}).get("work") or {}).get(work)
    if state != "failed":
        values = {"work": work, "turn": turn.pk, "state": state or _("not scheduled")}
        return ActionOutcome("not_failed", _("the %(work)s job of turn %(turn)s is %(state)s, not failed") % values)
    refuse = turn_jobs.get(work).rerun_refusal
    refusal = refuse(turn.pk) if refuse else None
    return ActionOutcome("not_rerunnable", refusal) if refusal else None


def job_rerun(*, turn_pk: int, work: str, user) -> ActionOutcome:
    """Schedule the failed job `work` of the turn again, through the job registry (an outbox row).

    Idempotent: under the turn's row lock the job goes from "failed" back to "pending" (memoryWrite too) and the
    outbox key names the re-run's number, so a second confirmation — or two at once — schedules nothing more.
    The job reports its end as at commit time (memory_write_finish).
    """
    with transaction.atomic():
        turn = Turn.objects.select_for_update(of=("self",), no_key=True).select_related("product").get(pk=turn_pk)
        refusal = job_rerun_refusal(turn, work)
        if refusal:
            return refusal
        number = Event.objects.filter(turn=turn, type=RERUN_EVENT, details__work=work).count() + 1
        write = dict(turn.memory_write)
        write["work"] = {**write["work"], work: "pending"}
        write["status"] = "pending"
        reasons = [r for r in str(write.get("reason", "")).split("; ") if r and not r.startswith(f"{work}: ")]
        write["reason"] = "; ".join(reasons)
        if not write["reason"]:
            write.pop("reason")
        Turn.objects.filter(pk=turn.pk).update(memory_write=write)
        actor = f"operator:{user.get_username()}"
        event_emit_for_turn(turn, RERUN_EVENT, {"work": work, "rerun": number, "actor": actor})
        turn_jobs.schedule(work, turn.pk, key=f"rerun-{number}")
        audit(user, turn, f"Re-ran the failed {work} job (re-run {number}, through the outbox)")
    message = _("turn %(turn)s: the %(work)s job is scheduled again (re-run %(number)s)")
    return ActionOutcome("scheduled", message % {"turn": turn.pk, "work": work, "number": number})


def hinos_resend(*, event: Event, user) -> ActionOutcome:
    outcome = hinos_commit_resend_audited(event=event, user=user)
    return ActionOutcome(RESEND_STATUS.get(outcome.status, "not_rerunnable"), outcome.message)


def key_revoke(*, api_key: ApiKey, user) -> ActionOutcome:
    if not api_key_revoke_audited(api_key=api_key, user=user):
        return ActionOutcome("done", _("key %(prefix)s… was already revoked") % {"prefix": api_key.prefix})
    message = _("key %(prefix)s… is revoked: requests with it now answer 401") % {"prefix": api_key.prefix}
    return ActionOutcome("done", message)

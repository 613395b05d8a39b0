"""The transactional outbox (memoryhub/outbox): a row written with the data, sent after commit, re-sent by the relay."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.db import transaction
from django.utils import timezone

from memories.models import Event
from memories.tasks import AUDIT, BACKGROUND_DONE, enqueue_turn_committed_audit
from memoryhub import outbox, turn_jobs
from memoryhub.celery import app as celery_app
from memoryhub.outbox import services
from memoryhub.outbox.models import OutboxMessage, pk_from_task_id, task_id_for
from memoryhub.outbox.services import OutsideTransaction, outbox_relay
from memoryhub.outbox.signals import acknowledge_outbox_row
from tests.memories.test_celery_worker import committed_turn
from tests.support.registry import only_commit_hooks

pytestmark = pytest.mark.django_db


class Broker:
    """Stands in for Celery's publish: records sends, or fails them while `down`."""

    def __init__(self) -> None:
        self.sent: list[tuple[int, str, dict]] = []
        self.down = False

    def __call__(self, pk: int, task: str, kwargs: dict) -> None:
        if self.down:
            raise ConnectionRefusedError("broker down")
        self.sent.append((pk, task, kwargs))


@pytest.fixture
def broker(monkeypatch) -> Broker:
    fake = Broker()
    monkeypatch.setattr(services, "_send", fake)
    return fake


def test_schedule_writes_a_row_and_sends_it_after_the_commit(broker, django_capture_on_commit_callbacks):
    with django_capture_on_commit_callbacks(execute=True), transaction.atomic():
        assert outbox.schedule("memories.turn_committed_audit", {"turn_pk": 1}, dedup_key="audit:1") is True
        assert broker.sent == []  # not before the commit
        row = OutboxMessage.objects.get(dedup_key="audit:1")
    assert broker.sent == [(row.pk, "memories.turn_committed_audit", {"turn_pk": 1})]
    assert row.done_at is None and row.next_attempt_at > timezone.now()


def test_a_rolled_back_transaction_leaves_no_row_and_sends_nothing(broker, django_capture_on_commit_callbacks):
    with django_capture_on_commit_callbacks(execute=True), pytest.raises(RuntimeError), transaction.atomic():
        outbox.schedule("t", {}, dedup_key="k")
        raise RuntimeError("the request failed")
    assert not OutboxMessage.objects.exists() and broker.sent == []


def test_one_row_per_dedup_key(broker, django_capture_on_commit_callbacks):
    with django_capture_on_commit_callbacks(execute=True), transaction.atomic():
        assert outbox.schedule("t", {"a": 1}, dedup_key="k") is True
        assert outbox.schedule("t", {"a": 1}, dedup_key="k") is False
    assert OutboxMessage.objects.count() == 1 and len(broker.sent) == 1


def test_schedule_outside_a_transaction_is_refused(transactional_db):
    with pytest.raises(OutsideTransaction):
        outbox.schedule("t", {}, dedup_key="k")


def test_a_failed_send_keeps_the_row_for_the_relay_and_never_fails_the_request(
    alice, broker, django_capture_on_commit_callbacks
):
    broker.down = True
    with django_capture_on_commit_callbacks(execute=True):
        turn_pk = committed_turn(alice)  # 200 although nothing could be sent
    row = OutboxMessage.objects.get(dedup_key=turn_jobs.dedup_key(AUDIT, turn_pk))
    assert row.done_at is None and "broker down" in row.last_error


def test_the_relay_resends_due_rows_with_backoff_until_acknowledged(broker, settings):
    settings.OUTBOX_REDISPATCH_AFTER_SECONDS = 10
    settings.OUTBOX_BACKOFF_MAX_SECONDS = 60
    now = timezone.now()
    row = OutboxMessage.objects.create(task="t", kwargs={"x": 1}, dedup_key="k", next_attempt_at=now)
    OutboxMessage.objects.create(task="t", kwargs={}, dedup_key="later", next_attempt_at=now + timedelta(hours=1))
    waits = []
    for attempt in range(1, 6):
        report = outbox_relay(now=now)
        assert (report.due, report.sent) == (1, 1)
        row.refresh_from_db()
        waits.append((row.next_attempt_at - now).total_seconds())
        assert row.attempts == attempt
        now = row.next_attempt_at
    assert waits == [20, 40, 60, 60, 60]  # doubling, capped at OUTBOX_BACKOFF_MAX_SECONDS
    assert [pk for pk, _, _ in broker.sent] == [row.pk] * 5
    acknowledge_outbox_row(task_id=task_id_for(row.pk), state="SUCCESS")
    assert outbox_relay(now=now + timedelta(days=1)).due == 1  # only the other row now


def test_the_relay_stops_at_the_first_failed_send(broker):
    broker.down = True
    now = timezone.now()
    for n in range(3):
        OutboxMessage.objects.create(task="t", kwargs={}, dedup_key=f"k{n}", next_attempt_at=now)
    report = outbox_relay(now=now)
    assert (report.due, report.sent, report.failed) == (3, 0, 1)
    assert OutboxMessage.objects.filter(done_at__isnull=True).count() == 3  # nothing lost
    broker.down = False
    assert outbox_relay(now=now + timedelta(days=1)).sent == 3


def test_a_retrying_task_does_not_acknowledge_its_row():
    row = OutboxMessage.objects.create(task="t", kwargs={}, dedup_key="k", next_attempt_at=timezone.now())
    acknowledge_outbox_row(task_id=task_id_for(row.pk), state="RETRY")
    acknowledge_outbox_row(task_id="not-an-outbox-id", state="SUCCESS")
    row.refresh_from_db()
    assert row.done_at is None
    acknowledge_outbox_row(task_id=task_id_for(row.pk), state="FAILURE")
    row.refresh_from_db()
    assert row.done_at is not None and row.outcome == "FAILURE"
    assert pk_from_task_id("outbox-x") is None and pk_from_task_id(None) is None


def test_acknowledged_rows_are_purged_after_the_retention(settings):
    settings.OUTBOX_RETENTION_HOURS = 1
    old = timezone.now() - timedelta(hours=2)
    OutboxMessage.objects.create(task="t", kwargs={}, dedup_key="done", next_attempt_at=old, done_at=old)
    OutboxMessage.objects.create(task="t", kwargs={}, dedup_key="pending", next_attempt_at=old + timedelta(days=9))
    assert outbox_relay().purged == 1
    assert list(OutboxMessage.objects.values_list("dedup_key", flat=True)) == ["pending"]


def test_embedded_default_runs_the_job_in_process_and_acknowledges_it(
    alice, django_capture_on_commit_callbacks, monkeypatch
):
    monkeypatch.setitem(celery_app.conf, "task_always_eager", True)  # as with no broker configured
    only_commit_hooks({"memories.turn_committed_audit": enqueue_turn_committed_audit})
    with django_capture_on_commit_callbacks(execute=True):
        turn_pk = committed_turn(alice)
    row = OutboxMessage.objects.get(dedup_key=turn_jobs.dedup_key(AUDIT, turn_pk))
    assert (row.task, row.kwargs) == (turn_jobs.TASK, {"job": AUDIT, "turn_pk": turn_pk})
    assert row.done_at is not None and row.outcome == "SUCCESS"
    # the same row sent again (the relay after a lost acknowledgement): the work is done once
    services.outbox_dispatch(row.pk, row.task, row.kwargs)
    assert Event.objects.filter(turn_id=turn_pk, type=BACKGROUND_DONE).count() == 1

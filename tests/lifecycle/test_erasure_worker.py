"""Erasure on real services: PostgreSQL, Redis (working set and broker) and a real Celery worker via the outbox."""

from __future__ import annotations

import pytest
from django.apps import apps
from django.core.cache import cache

from memories.lifecycle.models import Erasure
from memories.lifecycle.services.walk import owner_models
from memoryhub.working_set import Scope
from tests.compact.support import create_scenario
from tests.support.processes import wait_for

from .support import reachable, rows_mentioning, working_set_keys
from .test_erasure import GONE, KEPT, _fill, _play

pytestmark = [pytest.mark.requires_worker, pytest.mark.django_db(transaction=True)]


def _outbox_drained() -> bool:
    from memoryhub.outbox.models import OutboxMessage

    return not OutboxMessage.objects.filter(done_at__isnull=True).exists()


def _keys(product_id: str, user: str) -> list:
    return working_set_keys(product_id, user)


@pytest.fixture
def _broker_bindings(celery_worker_process) -> None:
    """The suite's cache.clear() is a FLUSHDB of the Redis that is also the broker: it drops kombu's exchange
    bindings, which a process that already published does not declare again (its sends would be lost)."""
    from memoryhub.celery import app

    with app.connection_for_write() as connection:
        for queue in app.amqp.queues.values():
            queue(connection.default_channel).declare()


def test_a_real_worker_erases_every_row_every_key_and_leaves_a_receipt(
    alice, bob, celery_worker_process, _broker_bindings
) -> None:
    create_scenario(alice)
    for user in (GONE, KEPT):
        _fill(alice, user)
        _play(alice, user)
    _fill(bob, GONE)
    # The turns' background work (audit events, diaries, tables) runs on the real worker: snapshot after it,
    # or a job finishing during the erasure adds a row the snapshot of the kept user lacks.
    wait_for(_outbox_drained, timeout=60, message="the turns' background work to finish")
    before = reachable(alice.product, GONE)
    assert len(before) >= len([m for m in owner_models() if m._meta.app_label != "lifecycle"])
    kept = reachable(alice.product, KEPT)
    for user in (GONE, KEPT):  # entries the prepares built may already be tombstoned by the completions
        cache.set(Scope(alice.product.pk, user, "c1", "probe").key, "x", 300)
    assert _keys(alice.product.pk, GONE) and _keys(alice.product.pk, KEPT)

    started = alice.delete(f"/v1/users/{GONE}")
    assert started.status_code == 202
    erasure_id = started.json()["erasureId"]
    from memoryhub.outbox.models import OutboxMessage

    try:
        wait_for(
            lambda: Erasure.objects.get(pk=erasure_id).status in ("done", "failed"),
            timeout=60,
            message="the erasure to finish",
        )
    except AssertionError as exc:
        raise AssertionError(
            list(OutboxMessage.objects.values("task", "kwargs", "done_at", "outcome", "last_error", "attempts"))
        ) from exc
    assert Erasure.objects.get(pk=erasure_id).status == "done", Erasure.objects.get(pk=erasure_id).error

    assert reachable(alice.product, GONE) == {}
    for label, pks in before.items():
        assert not apps.get_model(label)._base_manager.filter(pk__in=list(pks)).exists(), label
    for hit in rows_mentioning(GONE):
        label, pk = hit.split(":", 1)
        assert apps.get_model(label)._base_manager.get(pk=pk).product_id == bob.product.pk, hit
    assert _keys(alice.product.pk, GONE) == [] and _keys(alice.product.pk, KEPT)
    assert reachable(alice.product, KEPT) == kept
    receipt = Erasure.objects.get(pk=erasure_id)
    assert receipt.pending_user == "" and receipt.counts["workingSetKeys"] >= 1
    assert alice.get(f"/v1/users/{GONE}/conversations/c1/messages").json()["results"] == []

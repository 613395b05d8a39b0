"""Retention: per-product settings (GET/PATCH /v1/product, admin) and the pruning sweep that keeps current versions."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.contrib.admin.utils import quote
from django.test import Client
from django.utils import timezone

from memories.lifecycle.models import ProductRetention
from memories.lifecycle.services.retention import prune_all
from memories.models import Event, MemoryRevision, Turn
from memories.state.models import ConversationState, ConversationStateRevision
from tables.models import MemoryTable, MemoryTableVersion
from tests.compact.support import create_scenario, eager_celery, play
from tests.factories import SuperuserFactory
from tests.support.api import assert_envelope

pytestmark = pytest.mark.django_db
CONV = "/v1/users/r1/conversations/c1"
EVERYTHING = {
    "memoryRevisionsKeep": None,
    "memoryRevisionsDays": None,
    "eventsDays": None,
    "turnPromptsDays": None,
    "tableVersionsKeep": None,
    "stateVersionsKeep": None,
}


@pytest.fixture(autouse=True)
def _eager(monkeypatch) -> None:
    eager_celery(monkeypatch)


def test_defaults_keep_everything_and_patch_changes_only_what_it_names(alice, bob) -> None:
    body = alice.get("/v1/product").json()
    assert body["productId"] == alice.product.pk and body["retention"] == EVERYTHING
    changed = alice.patch("/v1/product", {"retention": {"eventsDays": 30, "memoryRevisionsKeep": 5}})
    assert changed.status_code == 200, changed.json()
    assert changed.json()["retention"] == {**EVERYTHING, "eventsDays": 30, "memoryRevisionsKeep": 5}
    again = alice.patch("/v1/product", {"retention": {"eventsDays": None}}).json()["retention"]
    assert again == {**EVERYTHING, "memoryRevisionsKeep": 5}
    assert bob.get("/v1/product").json()["retention"] == EVERYTHING
    assert_envelope(alice.patch("/v1/product", {"retention": {"eventsDays": 0}}), 400, "invalid_request")
    for huge in (1_000_001, 10**20):  # SQLite could not bind 10**20 (500); a day count overflowed timedelta
        assert_envelope(alice.patch("/v1/product", {"retention": {"eventsDays": huge}}), 400, "invalid_request")
    assert_envelope(alice.patch("/v1/product", {"retention": {"bogus": 1}}), 400, "invalid_request")


def _table(product, versions: int) -> MemoryTable:
    table = MemoryTable.objects.create(
        product=product,
        user_id="r1",
        conversation_id="c1",
        name="t",
        position=0,
        columns=[],
        rules={},
        max_rows=10,
        rows=[],
        version=versions,
    )
    for n in range(1, versions + 1):
        MemoryTableVersion.objects.create(product=product, table=table, version=n, rows=[], cause="edit", actor="t")
    return table


def _state(product, revisions: int) -> ConversationState:
    state = ConversationState.objects.create(
        product=product, user_id="r1", conversation_id="c1", revision=revisions, text="", records=[]
    )
    for n in range(1, revisions + 1):
        ConversationStateRevision.objects.create(
            product=product, state=state, revision=n, text="", records=[], changes=[], round=n
        )
    return state


def test_the_sweep_prunes_in_batches_and_never_the_current_version(alice, bob, caplog) -> None:
    create_scenario(alice)
    for n in range(6):
        assert alice.put(f"{CONV}/memory", {"expectedRevision": n, "memory": {"n": n}}).status_code == 200
    play(alice, "hello there", "hi")
    table, state = _table(alice.product, 4), _state(alice.product, 4)
    _table(bob.product, 4)
    long_ago = timezone.now() - timedelta(days=40)
    Event.objects.filter(product=alice.product).update(created_at=long_ago)
    Turn.objects.filter(product=alice.product).update(created_at=long_ago)
    events_before = Event.objects.filter(product=alice.product).count()
    assert events_before and prune_all() == {}  # no settings: nothing pruned

    settings = {"memoryRevisionsKeep": 2, "eventsDays": 30, "turnPromptsDays": 30, "tableVersionsKeep": 1}
    alice.patch("/v1/product", {"retention": {**settings, "stateVersionsKeep": 1}})
    with caplog.at_level("INFO", logger="memories.lifecycle.services.retention"):
        counts = prune_all()[alice.product.pk]
    assert counts["memories.MemoryRevision"] == 4 and counts["memories.Event"] == events_before
    assert sorted(MemoryRevision.objects.values_list("revision", flat=True)) == [5, 6]
    assert alice.get(f"{CONV}/memory").json()["revision"] == 6
    assert list(MemoryTableVersion.objects.filter(table=table).values_list("version", flat=True)) == [4]
    assert MemoryTableVersion.objects.filter(product=bob.product).count() == 4
    assert list(ConversationStateRevision.objects.filter(state=state).values_list("revision", flat=True)) == [4]
    turn = Turn.objects.get(product=alice.product)
    assert turn.prompt == "" and turn.user_message == "hello there"
    assert "memory revisions: 4 pruned" in caplog.text
    assert prune_all()[alice.product.pk]["memories.MemoryRevision"] == 0  # idempotent


def test_a_limit_stored_out_of_range_skips_its_product_and_not_the_others(alice, bob, caplog) -> None:
    ProductRetention.objects.create(product=alice.product, events_days=2_000_000_000)  # as an old admin saved it
    ProductRetention.objects.create(product=bob.product, events_days=1)
    done = prune_all()
    assert alice.product.pk not in done and bob.product.pk in done
    assert "skipped, out of range: eventsDays" in caplog.text


def test_the_admin_edits_retention(alice) -> None:
    operator = Client()
    operator.force_login(SuperuserFactory(username="op"))
    assert operator.get("/admin/lifecycle/productretention/add/").status_code == 200
    response = operator.post(
        "/admin/lifecycle/productretention/add/", {"product": alice.product.pk, "events_days": "7"}
    )
    assert response.status_code == 302
    assert ProductRetention.objects.get().events_days == 7
    assert alice.get("/v1/product").json()["retention"]["eventsDays"] == 7
    # quote: the admin unquotes "_22", "_5F", … in a path, and a product id is "prd_" + random hex
    change = f"/admin/lifecycle/productretention/{quote(alice.product.pk)}/change/"
    for field, bad in (("memory_revisions_keep", "0"), ("events_days", "1000001"), ("events_days", "99999999999")):
        refused = operator.post(change, {"product": alice.product.pk, "events_days": "7", field: bad})
        assert refused.status_code == 200 and "a whole number from 1 to 1000000" in refused.content.decode(), bad
    kept = alice.get("/v1/product").json()["retention"]
    assert (kept["eventsDays"], kept["memoryRevisionsKeep"]) == (7, None)  # nothing saved

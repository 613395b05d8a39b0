"""memoryhub.cas: the one compare-and-set every versioned write goes through (documents, tables, long-term memories)."""

from __future__ import annotations

import pytest
from django.core.cache import cache
from django.db import connection
from django.test.utils import CaptureQueriesContext
from prometheus_client import REGISTRY

from memories.models import MemoryDocument, MemoryRevision
from memoryhub import cas, working_set
from memoryhub.errors import InternalInconsistency, NotFound, RevisionConflict
from tables.models import MemoryTable, MemoryTableVersion

pytestmark = pytest.mark.django_db


def conflicts(kind: str) -> float:
    return REGISTRY.get_sample_value("memoryhub_conflicts_total", {"kind": kind}) or 0.0


@pytest.fixture
def document(alice) -> MemoryDocument:
    return MemoryDocument.objects.create(
        product=alice.product, user_id="u1", conversation_id="c1", revision=3, memory={"v": 3}
    )


@pytest.fixture
def table(alice) -> MemoryTable:
    return MemoryTable.objects.create(
        product=alice.product,
        user_id="u1",
        conversation_id="c1",
        name="t",
        position=0,
        columns=["a"],
        rows=[["old"]],
        version=2,
    )


def scope_of(row) -> working_set.Scope:
    return working_set.Scope(row.product_id, row.user_id, row.conversation_id, "test-variable")


def cached(scope: working_set.Scope) -> None:
    working_set.get_or_build(scope, lambda: "value read before the write")
    assert working_set.get_or_build(scope, lambda: "rebuilt") == ("value read before the write", True)


def revision_row(document: MemoryDocument) -> cas.Versioned:
    return cas.Versioned(MemoryDocument, {"pk": document.pk}, kind="test_revision")


def version_row(table: MemoryTable) -> cas.Versioned:
    return cas.Versioned(MemoryTable, {"pk": table.pk}, kind="test_version", field="version")


def document_history(document: MemoryDocument):
    def write(revision: int) -> None:
        MemoryRevision.objects.create(
            product_id=document.product_id,
            user_id=document.user_id,
            conversation_id=document.conversation_id,
            revision=revision,
            memory={"v": 4},
            actor_type="api_key",
            actor="k",
        )

    return write


def test_a_write_at_the_expected_revision_bumps_it_writes_history_and_invalidates_first(document):
    scope = scope_of(document)
    cached(scope)
    new = cas.compare_and_set(
        revision_row(document), 3, changes={"memory": {"v": 4}}, history=document_history(document), invalidate=[scope]
    )
    assert new == 4
    document.refresh_from_db()
    assert (document.revision, document.memory) == (4, {"v": 4})
    assert list(MemoryRevision.objects.values_list("revision", flat=True)) == [4]
    assert working_set.get_or_build(scope, lambda: "rebuilt") == ("rebuilt", False)


def test_a_conflict_on_revision_raises_counts_writes_nothing_and_still_invalidates(document):
    scope = scope_of(document)
    cached(scope)
    before = conflicts("test_revision")
    with pytest.raises(RevisionConflict) as caught:
        cas.compare_and_set(
            revision_row(document),
            2,
            changes={"memory": {"lost": True}},
            history=document_history(document),
            invalidate=[scope],
        )
    assert caught.value.code == "revision_conflict" and caught.value.current == 3
    assert caught.value.details == {"currentRevision": 3}
    assert conflicts("test_revision") == before + 1
    document.refresh_from_db()
    assert (document.revision, document.memory) == (3, {"v": 3})
    assert not MemoryRevision.objects.exists()
    # Invalidated before the write was attempted: no reader keeps what it read before.
    assert working_set.get_or_build(scope, lambda: "rebuilt") == ("rebuilt", False)


def test_a_conflict_on_version_carries_current_version_too_and_the_resource_message(table):
    row = cas.Versioned(
        MemoryTable,
        {"pk": table.pk},
        kind="test_version",
        field="version",
        conflict_message="at {current}, not {expected}",
    )
    before = conflicts("test_version")
    with pytest.raises(RevisionConflict) as caught:
        cas.compare_and_set(row, 1, changes={"rows": [["lost"]]}, history=lambda v: pytest.fail("no history"))
    assert caught.value.details == {"currentRevision": 2, "currentVersion": 2}
    assert caught.value.message == "at 2, not 1"
    assert conflicts("test_version") == before + 1
    table.refresh_from_db()
    assert (table.version, table.rows) == (2, [["old"]])


def test_a_row_that_is_gone_is_a_conflict_at_zero_or_not_found_when_the_resource_says_so(table):
    gone = {"pk": table.pk + 1000}
    with pytest.raises(RevisionConflict) as caught:
        cas.compare_and_set(
            cas.Versioned(MemoryTable, gone, kind="test_version", field="version"), 2, changes={"rows": []}
        )
    assert caught.value.details == {"currentRevision": 0, "currentVersion": 0}
    before = conflicts("test_version")
    with pytest.raises(NotFound):
        cas.compare_and_set(
            cas.Versioned(MemoryTable, gone, kind="test_version", field="version", missing_message="no such row"),
            2,
            changes={"rows": []},
        )
    assert conflicts("test_version") == before  # not a lost race


def test_one_conditional_update_no_read_before_it(table):
    with CaptureQueriesContext(connection) as queries:
        cas.compare_and_set(
            version_row(table),
            2,
            changes={"rows": [["new"]]},
            history=lambda version: MemoryTableVersion.objects.create(
                product_id=table.product_id, table=table, version=version, rows=[["new"]], cause="api_key"
            ),
        )
    statements = [q["sql"] for q in queries.captured_queries if not q["sql"].startswith(("SAVEPOINT", "RELEASE"))]
    assert len(statements) == 2 and statements[0].startswith("UPDATE") and statements[1].startswith("INSERT")
    assert '"version" = 2' in statements[0]  # the version check is in the UPDATE itself
    assert list(MemoryTableVersion.objects.values_list("version", flat=True)) == [3]


def test_a_conditional_delete(table):
    with pytest.raises(RevisionConflict):
        cas.compare_and_set(version_row(table), 1, delete=True)
    assert MemoryTable.objects.filter(pk=table.pk).exists()
    written = []
    assert cas.compare_and_set(version_row(table), 2, delete=True, history=written.append) == 2
    assert written == [2] and not MemoryTable.objects.filter(pk=table.pk).exists()


def test_a_statement_of_its_own_reports_conflicts_and_impossible_versions(document):
    before = conflicts("test_revision")
    with pytest.raises(RevisionConflict) as caught:
        cas.compare_and_set(revision_row(document), 2, statement=lambda: None)
    assert caught.value.details == {"currentRevision": 3} and conflicts("test_revision") == before + 1
    with pytest.raises(InternalInconsistency) as caught:
        cas.compare_and_set(revision_row(document), 3, statement=lambda: 5)  # M7: only old + 1 is accepted
    assert caught.value.details == {"expectedRevision": 3, "committedRevision": 5}
    assert cas.compare_and_set(revision_row(document), 3, statement=lambda: 4) == 4


def test_a_cache_outage_fails_before_anything_is_written(document, monkeypatch):
    def down(*args, **kwargs):
        raise ConnectionError("cache down")

    monkeypatch.setattr(cache, "set", down)
    monkeypatch.setattr(cache, "set_many", down)
    with pytest.raises(ConnectionError):
        cas.compare_and_set(revision_row(document), 3, changes={"memory": {"v": 4}}, invalidate=[scope_of(document)])
    document.refresh_from_db()
    assert document.revision == 3


def test_exactly_one_kind_of_write(document):
    for kwargs in ({}, {"changes": {}, "delete": True}, {"delete": True, "statement": lambda: 1}):
        with pytest.raises(TypeError):
            cas.compare_and_set(revision_row(document), 3, **kwargs)

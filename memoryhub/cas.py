"""Compare-and-set: the one way a versioned row is written (documents, memory tables, long-term memories).

A write names the row (its model and a lookup that finds at most one row), its version field and the
version the caller read. The helper then, in this order:

1. invalidates the working-set entries the row feeds, so a cache outage fails the request before
   anything is written, and the tombstone keeps readers that loaded the old row from caching it again;
2. runs ONE conditional statement — `UPDATE … SET <field> = <field> + 1 … WHERE <field> = expected`
   (or `DELETE … WHERE <field> = expected`, or a caller's own single statement, e.g. the PostgreSQL
   function behind JSON documents) — and checks what it changed, never a read-check-write in Python;
3. writes the history row of the new version in the same transaction;
4. on a lost race counts the conflict (metrics.CONFLICTS{kind}) and raises the one RevisionConflict,
   with details.currentVersion too where the row calls its field `version` (no client breaks).

A committed version other than expected + 1 is an InternalInconsistency, never accepted silently.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from django.db import transaction
from django.db.models import F, Model, QuerySet

from memoryhub import metrics, working_set
from memoryhub.errors import InternalInconsistency, NotFound, RevisionConflict

History = Callable[[int], object]
Statement = Callable[[], "int | None"]


@dataclass(frozen=True)
class Versioned:
    """One versioned row: where it is and how a lost race on it is reported."""

    model: type[Model]
    where: Mapping[str, Any]  # the lookup that finds the one row, e.g. {"pk": 7}
    kind: str  # the conflict metric's label, e.g. "memory_document"
    field: str = "revision"
    # "{current}" and "{expected}" are filled in; None keeps RevisionConflict's own message.
    conflict_message: str | None = None
    # Set for resources that are looked up before the write: a row gone meanwhile is then a 404, not "revision 0".
    missing_message: str | None = None

    @property
    def versioned(self) -> bool:
        return self.field == "version"

    def rows(self) -> QuerySet[Any]:
        # Built when needed, not up front: a statement= write that wins never builds a queryset.
        return self.model._default_manager.filter(**self.where)

    def current(self) -> int | None:
        return self.rows().values_list(self.field, flat=True).first()


def compare_and_set(
    row: Versioned,
    expected: int,
    *,
    changes: Mapping[str, Any] | None = None,
    delete: bool = False,
    statement: Statement | None = None,
    history: History | None = None,
    invalidate: Iterable[working_set.Scope] = (),
) -> int:
    """Write `row` iff its version is still `expected`; return the committed version (the deleted one for a delete).

    Exactly one of `changes` (an UPDATE bumping the version), `delete` or `statement` (one atomic call that
    performs the conditional write and its history itself and returns the committed version, or None when
    the version had moved on). Raises RevisionConflict on a lost race; nothing is written then.
    """
    if sum((changes is not None, delete, statement is not None)) != 1:
        raise TypeError("compare_and_set needs exactly one of changes=, delete=True or statement=")
    working_set.invalidate(*invalidate)  # first: a cache outage must fail before anything is written
    if statement is not None:
        committed = statement()  # already atomic: no BEGIN/COMMIT round trips around it
        if committed is None:
            raise _conflict(row, expected)
    else:
        with transaction.atomic():  # a savepoint inside a caller's transaction: a conflict leaves it usable
            committed = _write(row, expected, changes, delete)
            if committed is None:
                raise _conflict(row, expected)  # inside: whatever the statement touched is rolled back
            if history is not None:
                history(committed)
    wanted = expected if delete else expected + 1
    if committed != wanted:
        raise InternalInconsistency(
            f"the store committed revision {committed}, expected {wanted}; read it back before retrying",
            details={"expectedRevision": expected, "committedRevision": committed},
        )
    return committed


def _write(row: Versioned, expected: int, changes: Mapping[str, Any] | None, delete: bool) -> int | None:
    """The one conditional statement; its row count says whether the version was still `expected`."""
    target = row.rows().filter(**{row.field: expected})
    if delete:
        _, per_model = target.delete()
        return expected if per_model.get(target.model._meta.label, 0) == 1 else None
    updated = target.update(**{row.field: F(row.field) + 1}, **(changes or {}))
    return expected + 1 if updated == 1 else None


def _conflict(row: Versioned, expected: int) -> Exception:
    current = row.current()
    if current is None and row.missing_message is not None:
        return NotFound(row.missing_message)
    metrics.CONFLICTS.labels(kind=row.kind).inc()
    current = current or 0
    message = row.conflict_message.format(current=current, expected=expected) if row.conflict_message else None
    return RevisionConflict(current, versioned=row.versioned, message=message)

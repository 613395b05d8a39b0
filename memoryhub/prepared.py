"""Queries on the hottest paths, compiled by the ORM once per database instead of on every request.

Building and compiling a queryset costs far more CPU than the round trip it makes: the API key lookup
that every request pays took ~0.85 ms of CPU through the ORM against ~0.14 ms for the same SQL sent
directly (docs/performance.md). These helpers keep the ORM's SQL, converters and model construction, and
only skip re-deriving them: a `PreparedSelect` is an ordinary queryset compiled once with marker values
for its parameters; `insert_one` is `Model.objects.create` without building an `InsertQuery`.

Both go through Django's cursors, so they are logged, counted by `CaptureQueriesContext`, routed like the ORM
(reads by the database router, writes to the default database) and run in the caller's transaction.
`binding_cursor` is Django's cursor with parameters bound by the server on PostgreSQL: large values (a
turn's prompt, a query vector in binary) are sent as they are instead of quoted into the SQL text.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any, Generic, TypeVar

from django.db import connections, router, transaction
from django.db.models import Model, QuerySet, signals
from django.db.models.query import get_related_populators

M = TypeVar("M", bound=Model)


class _Marker(str):
    """A parameter placeholder while compiling: found again, by identity, in the compiled parameters."""


class PreparedSelect(Generic[M]):
    """`build(*markers)` → a queryset; `first(*values)` / `all(*values)` run it with the values in their places.

    The queryset must use each argument as a plain parameter (a lookup value), as `filter(prefix=arg)` does.
    On PostgreSQL, `function` names a PL/pgSQL function (created by a migration) that takes the arguments in
    order and returns the compiled query's columns in order: it runs in its place, so that the server plans it
    once per connection instead of on every call, behind any connection pooler (tests/test_prepared.py checks
    that its columns match the query's).
    """

    def __init__(
        self, model: type[M], build: Callable[..., QuerySet[M]], arity: int, function: str | None = None
    ) -> None:
        self.model, self.build, self.arity, self.function = model, build, arity, function
        self._local = threading.local()  # a compiler holds its thread's connection

    def _compile(self, alias: str) -> tuple:
        markers = [_Marker(f"prepared-parameter-{i}") for i in range(self.arity)]
        compiler = self.build(*markers).query.get_compiler(using=alias)
        sql, params = compiler.as_sql()
        positions = []
        for param in params:
            index = next((i for i, marker in enumerate(markers) if param is marker), None)
            if index is None:
                raise ValueError(f"{self.model.__name__}: a compiled parameter is not an argument: {param!r}")
            positions.append(index)
        if self.function and compiler.connection.vendor == "postgresql":
            sql, positions = f"SELECT * FROM {self.function}({', '.join(['%s'] * self.arity)})", list(range(self.arity))
        klass_info, select = compiler.klass_info, compiler.select
        start, end = klass_info["select_fields"][0], klass_info["select_fields"][-1] + 1
        init_list = [column[0].target.attname for column in select[start:end]]
        populators = get_related_populators(klass_info, select, alias)  # type: ignore[call-arg]  # stubs: Django 6
        converters = compiler.get_converters([column[0] for column in select[: compiler.col_count]])
        compiled = (compiler, sql, positions, start, end, init_list, populators, converters)
        self._local.__dict__[alias] = compiled
        return compiled

    def first(self, *values: Any) -> M | None:
        found = self._run(values, many=False)
        return found[0] if found else None

    def all(self, *values: Any) -> list[M]:
        return self._run(values, many=True)

    def _run(self, values: tuple, *, many: bool) -> list[M]:
        alias = router.db_for_read(self.model) or "default"
        compiled = self._local.__dict__.get(alias) or self._compile(alias)
        compiler, sql, positions, start, end, init_list, populators, converters = compiled
        with connections[alias].cursor() as cursor:
            cursor.execute(sql, [values[i] for i in positions])
            rows = cursor.fetchall() if many else cursor.fetchmany(1)
        objects = []
        for row in compiler.apply_converters(rows, converters) if converters else rows:  # results_iter, converters kept
            obj = self.model.from_db(alias, init_list, row[start:end])
            for populator in populators:
                populator.populate(row, obj)
            objects.append(obj)
        return objects


def insert_one(obj: M) -> M:
    """Save a new instance with one `INSERT … RETURNING`, as `Model.objects.create` would (signals included).

    For models without parents or generated fields; the primary key and other returned columns are set.
    """
    model, alias = type(obj), router.db_for_write(type(obj), instance=obj) or "default"
    connection, meta = connections[alias], obj._meta
    ops: Any = connection.ops
    signals.pre_save.send(sender=model, instance=obj, raw=False, using=alias, update_fields=None)
    returning = meta.db_returning_fields
    fields = [f for f in meta.local_concrete_fields if f not in returning]
    sql, returning_sql = _insert_sql(connection, model, fields, returning)
    params = [f.get_db_prep_save(f.pre_save(obj, True), connection) for f in fields]
    with transaction.mark_for_rollback_on_error(alias), binding_cursor(connection) as cursor:
        cursor.execute(sql + returning_sql, params)
        if returning_sql:
            values = ops.fetch_returned_insert_columns(cursor, returning_params=())
        else:
            values = (ops.last_insert_id(cursor, meta.db_table, meta.pk.column),)
    for field, value in zip(returning, values, strict=True):
        for converter in field.get_db_converters(connection):
            value = converter(value, field, connection)
        setattr(obj, field.attname, value)
    obj._state.adding, obj._state.db = False, alias
    signals.post_save.send(sender=model, instance=obj, created=True, update_fields=None, raw=False, using=alias)
    return obj


@contextmanager
def binding_cursor(connection) -> Iterator:
    """`connection.cursor()`, but on PostgreSQL one that binds parameters on the server.

    Django's default psycopg cursor interpolates parameters into the SQL text on the client: every string
    is escaped and every float formatted, which costs more than the round trip for large values. Everything
    else is Django's own: the health-checked connection, its adapters, error wrapping and query logging.
    """
    if connection.vendor != "postgresql":
        with connection.cursor() as cursor:
            yield cursor
        return
    import psycopg

    connection.close_if_health_check_failed()  # what connection.cursor() does before it makes a cursor
    connection.ensure_connection()
    connection.validate_thread_sharing()
    with connection.wrap_database_errors:
        raw = psycopg.Cursor(connection.connection)  # psycopg's own cursor binds on the server
    cursor = connection.make_debug_cursor(raw) if connection.queries_logged else connection.make_cursor(raw)
    with cursor:
        yield cursor


_INSERTS: dict[tuple, tuple[str, str]] = {}


def _insert_sql(connection, model: type[Model], fields: list, returning: list) -> tuple[str, str]:
    key = (connection.alias, connection.vendor, model)
    if key not in _INSERTS:
        quote = connection.ops.quote_name
        columns = ", ".join(quote(f.column) for f in fields)
        placeholders = ", ".join(["%s"] * len(fields))
        returning_sql = ""
        if returning and connection.features.can_return_columns_from_insert:
            returning_sql, _ = connection.ops.return_insert_columns(returning)
            returning_sql = " " + returning_sql
        insert = f"INSERT INTO {quote(model._meta.db_table)} ({columns}) VALUES ({placeholders})"
        _INSERTS[key] = (insert, returning_sql)
    return _INSERTS[key]

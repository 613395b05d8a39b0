"""A JSON list of names that a query can ask "holds this name?" of, on PostgreSQL and SQLite alike."""

from __future__ import annotations

from django.db import models


class NameListField(models.JSONField):
    """A JSON array of strings with the lookup `__has_name` (Django's `__contains` is unsupported on SQLite)."""


@NameListField.register_lookup
class HasName(models.Lookup):
    lookup_name = "has_name"
    prepare_rhs = False

    def get_db_prep_lookup(self, value, connection):
        return ("%s", [value])

    def as_postgresql(self, compiler, connection):
        lhs, lhs_params = self.process_lhs(compiler, connection)
        rhs, rhs_params = self.process_rhs(compiler, connection)
        return f"{lhs} @> jsonb_build_array({rhs}::text)", [*lhs_params, *rhs_params]

    def as_sql(self, compiler, connection):  # SQLite: the array's elements as a table
        lhs, lhs_params = self.process_lhs(compiler, connection)
        rhs, rhs_params = self.process_rhs(compiler, connection)
        return f"EXISTS (SELECT 1 FROM json_each({lhs}) WHERE json_each.value = {rhs})", [*lhs_params, *rhs_params]

"""memoryhub.prepared: the compiled API-key lookup and the one-statement INSERT behave as the ORM does."""

from __future__ import annotations

import pytest
from django.db import connection
from django.db.models.signals import post_save, pre_save
from django.test.utils import CaptureQueriesContext

from memories.models import ApiKey, Conversation, Turn
from memories.services.products import api_key_authenticate, api_key_create, api_key_revoke, product_create
from memoryhub.prepared import PreparedSelect, binding_cursor, insert_one

pytestmark = pytest.mark.django_db


def test_the_key_lookup_returns_the_orm_instances_with_a_fresh_product():
    product, issued = product_create(name="p")
    with CaptureQueriesContext(connection) as captured:
        found = api_key_authenticate(issued.plaintext)
    assert len(captured) == 1  # the key and its product in one query, as select_related does
    expected = ApiKey.objects.select_related("product").get(pk=issued.api_key.pk)
    assert found == expected and found.product == expected.product
    assert [getattr(found, f.attname) for f in ApiKey._meta.concrete_fields] == [
        getattr(expected, f.attname) for f in ApiKey._meta.concrete_fields
    ]
    assert found.product.created_at == expected.product.created_at and found._state.db == "default"
    type(product).objects.filter(pk=product.pk).update(erasures_in_progress=2)
    assert api_key_authenticate(issued.plaintext).product.erasures_in_progress == 2  # read every time


def test_a_revoked_or_unknown_key_is_not_found():
    product, issued = product_create(name="p")
    other = api_key_create(product=product, name="second")
    api_key_revoke(api_key=issued.api_key)
    assert api_key_authenticate(issued.plaintext) is None
    assert api_key_authenticate(other.plaintext).product == product
    assert api_key_authenticate("mhk_000000000000_nothing") is None


@pytest.mark.requires_postgres
def test_the_key_lookup_function_answers_the_orm_querys_columns_and_rows():
    from memories.services.products import _ACTIVE_KEY

    product, issued = product_create(name="p")
    revoked = api_key_create(product=product, name="revoked")
    api_key_revoke(api_key=revoked.api_key)
    compiler = _ACTIVE_KEY.build(issued.api_key.prefix).query.get_compiler(using="default")
    orm_sql, orm_params = compiler.as_sql()
    with connection.cursor() as cursor:
        for prefix in (issued.api_key.prefix, revoked.api_key.prefix, "unknown"):
            cursor.execute(orm_sql, [prefix, *orm_params[1:]])
            orm_types, orm_rows = [c.type_code for c in cursor.description], cursor.fetchall()
            cursor.execute("SELECT * FROM memoryhub_active_api_key(%s)", [prefix])
            assert [c.type_code for c in cursor.description] == orm_types  # same columns, same order
            assert cursor.fetchall() == orm_rows
    with CaptureQueriesContext(connection) as captured:
        assert api_key_authenticate(issued.plaintext) == issued.api_key
    assert "memoryhub_active_api_key" in captured[0]["sql"]  # the function, not the query, runs


def test_a_prepared_select_refuses_a_parameter_that_is_not_an_argument():
    prepared = PreparedSelect(ApiKey, lambda prefix: ApiKey.objects.filter(prefix=prefix, name="fixed")[:1], arity=1)
    with pytest.raises(ValueError, match="not an argument"):
        prepared.first("x")


def test_insert_one_is_create_in_one_statement_with_its_signals():
    product, _ = product_create(name="p")
    conversation = Conversation.objects.create(product=product, user_id="u", conversation_id="c")
    seen = []

    def record(sender, instance, **kwargs):
        seen.append((kwargs.get("created"), instance.pk))

    fields = dict(
        product=product,
        conversation_row_id=conversation.pk,
        user_id="u",
        conversation_id="c",
        scenario_slug="s",
        scenario_version=1,
        runtime="personalization",
        round=1,
        user_message="谁拿着钥匙?",
        prompt="<p>",
        variables={"jsonMemory": '{"a": 1}'},
        sources=[{"variable": "jsonMemory", "status": "ok", "cached": True}],
    )
    pre_save.connect(record, sender=Turn)
    post_save.connect(record, sender=Turn)
    try:
        with CaptureQueriesContext(connection) as captured:
            turn = insert_one(Turn(**fields))
    finally:
        pre_save.disconnect(record, sender=Turn)
        post_save.disconnect(record, sender=Turn)
    assert len(captured) == 1 and captured[0]["sql"].startswith("INSERT")
    assert seen == [(None, None), (True, turn.pk)]
    assert turn.pk and not turn._state.adding and turn.created_at is not None
    stored, created = Turn.objects.get(pk=turn.pk), Turn.objects.create(**fields)
    for field in Turn._meta.concrete_fields:
        if field.name not in ("id", "created_at"):
            assert getattr(stored, field.attname) == getattr(created, field.attname), field.name
    assert stored.created_at == turn.created_at


def test_all_returns_every_row_in_the_querysets_order():
    product, first = product_create(name="p")
    second = api_key_create(product=product, name="b")
    prepared = PreparedSelect(ApiKey, lambda pk: ApiKey.objects.filter(product_id=pk).order_by("-id"), arity=1)
    assert prepared.all(product.pk) == [second.api_key, first.api_key]
    assert prepared.all("prd_none") == []


@pytest.mark.requires_postgres
def test_the_binding_cursor_sends_values_as_parameters_and_stays_djangos_cursor():
    """Server-side binding: values are never quoted into the SQL text, yet logged, wrapped and transactional."""
    import psycopg
    from django.db import IntegrityError
    from pgvector import Vector

    tricky = 'it\'s 100% \\ "quoted" -- ; DROP TABLE x; 中文 \u2028'
    with CaptureQueriesContext(connection) as captured, binding_cursor(connection) as cursor:
        cursor.execute("SELECT %s::text, %s::vector <=> %s::vector", [tricky, Vector([1.0, 0.0]), Vector([1.0, 0.0])])
        assert cursor.fetchone() == (tricky, 0.0)  # the vector went in pgvector's binary format
        assert type(cursor.cursor) is psycopg.Cursor  # not Django's ClientCursor
    assert len(captured) == 1  # logged like any statement (CaptureQueriesContext, DEBUG)
    product, _ = product_create(name="p")
    with pytest.raises(IntegrityError), binding_cursor(connection) as cursor:  # Django's exception, not psycopg's
        cursor.execute("INSERT INTO memories_product (id) VALUES (%s)", [product.pk])

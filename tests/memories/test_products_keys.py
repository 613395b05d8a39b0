"""Products and API keys (docs/contract.md, "Tenancy"): shown once, stored hashed, several per product, revocable."""

from __future__ import annotations

import hashlib
import json
from io import StringIO

import pytest
from django.core.management import CommandError, call_command

from memories.models import ApiKey, Product
from memories.services.products import api_key_create, api_key_revoke
from tests.support.api import assert_envelope, client_for

URL = "/v1/users/u1/conversations/c1/memory"


def run_create_product(*args: str) -> str:
    out = StringIO()
    call_command("create_product", *args, stdout=out)
    return out.getvalue()


@pytest.mark.django_db
def test_create_product_json_prints_one_json_line_last_with_a_working_key():
    output = run_create_product("--name", "Acme 聊天", "--json")
    lines = output.strip().splitlines()
    last = json.loads(lines[-1])
    assert set(last) == {"productId", "apiKey"}
    assert sum(1 for line in lines if line.lstrip().startswith("{")) == 1
    product = Product.objects.get(pk=last["productId"])
    assert product.name == "Acme 聊天"
    response = client_for(last["apiKey"]).put(URL, {"expectedRevision": 0, "memory": {"ok": True}}, format="json")
    assert response.json() == {"revision": 1}


@pytest.mark.django_db
def test_create_product_without_json_prints_a_readable_message_with_the_key():
    output = run_create_product("--name", "Readable")
    product = Product.objects.get(name="Readable")
    assert product.pk in output
    assert "Readable" in output
    key = next(word for word in output.split() if word.startswith("mhk_"))
    assert client_for(key).get(URL).status_code == 200
    with pytest.raises(json.JSONDecodeError):
        json.loads(output.strip().splitlines()[-1])


@pytest.mark.django_db
def test_create_product_requires_a_name():
    with pytest.raises(CommandError):
        run_create_product("--json")
    assert Product.objects.count() == 0


@pytest.mark.django_db
def test_each_create_product_makes_a_distinct_product_and_key():
    first = json.loads(run_create_product("--name", "A", "--json").strip().splitlines()[-1])
    second = json.loads(run_create_product("--name", "A", "--json").strip().splitlines()[-1])
    assert first["productId"] != second["productId"]
    assert first["apiKey"] != second["apiKey"]


def test_several_keys_of_one_product_all_work_on_the_same_documents(alice):
    keys = [alice.key] + [api_key_create(product=alice.product, name=f"k{i}").plaintext for i in range(2)]
    for revision, key in enumerate(keys):
        response = client_for(key).put(URL, {"expectedRevision": revision, "memory": {"by": revision}}, format="json")
        assert response.json() == {"revision": revision + 1}
    for key in keys:
        assert client_for(key).get(URL).json() == {"revision": 3, "memory": {"by": 2}}


def test_revoked_key_is_401_and_the_other_keys_keep_working(alice):
    extra = api_key_create(product=alice.product, name="to revoke")
    api_key_revoke(api_key=extra.api_key)
    assert_envelope(client_for(extra.plaintext).get(URL), 401, "unauthenticated")
    assert_envelope(
        client_for(extra.plaintext).put(URL, {"expectedRevision": 0, "memory": {}}, format="json"),
        401,
        "unauthenticated",
    )
    assert alice.get(URL).json() == {"revision": 0, "memory": None}


def test_revoking_twice_keeps_the_first_revocation_time(alice):
    extra = api_key_create(product=alice.product)
    api_key_revoke(api_key=extra.api_key)
    first = ApiKey.objects.get(pk=extra.api_key.pk).revoked_at
    api_key_revoke(api_key=extra.api_key)
    assert ApiKey.objects.get(pk=extra.api_key.pk).revoked_at == first


def test_only_the_hash_of_a_key_is_stored(alice):
    row = ApiKey.objects.filter(product=alice.product).values().get()
    secret = alice.key.split("_", 2)[2]  # mhk_<prefix>_<secret>; the secret itself may contain "_"
    for column, value in row.items():
        assert alice.key not in str(value), column
        assert secret not in str(value), column
    assert row["key_hash"] == hashlib.sha256(alice.key.encode()).hexdigest()


def test_a_key_of_one_product_addresses_only_that_product(alice, bob):
    alice.put(URL, {"expectedRevision": 0, "memory": {"owner": "alice"}})
    assert client_for(bob.key).get(URL).json() == {"revision": 0, "memory": None}
    assert client_for(alice.key).get(URL).json() == {"revision": 1, "memory": {"owner": "alice"}}


def test_key_of_a_deleted_product_is_401(alice):
    key = alice.key
    alice.product.delete()
    assert_envelope(client_for(key).get(URL), 401, "unauthenticated")


@pytest.mark.parametrize("header", [None, "{key}", "Token {key}", "Basic {key}"])
def test_a_key_not_sent_as_bearer_is_told_how_to_send_it(alice, header):
    """A newcomer's `Authorization: mhk_…` answered "credentials were not provided": now the 401 says how."""
    from rest_framework.test import APIClient

    client = APIClient()
    if header is not None:
        client.credentials(HTTP_AUTHORIZATION=header.format(key=alice.key))
    error = assert_envelope(client.get(URL), 401, "unauthenticated")
    assert "Bearer <key>" in error["message"], error

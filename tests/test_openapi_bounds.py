"""The OpenAPI document states the bounds the server enforces on parameters (docs/contract.md: Identifiers,
Idempotency, Lists and paging), so a generated client sees them; each is checked against the server too."""

from __future__ import annotations

import pytest

from memoryhub.identifiers import ID_PATTERN
from tests.support.api import assert_envelope

pytestmark = pytest.mark.django_db

ID = {"type": "string", "minLength": 1, "maxLength": 128, "pattern": "^(?!\\.+$)[A-Za-z0-9_.@-]{1,128}$"}


def parameters(client) -> list[tuple[str, dict]]:
    schema = client.get("/api/schema/?format=json").json()
    return [
        (f"{method.upper()} {path}", parameter)
        for path, operations in schema["paths"].items()
        for method, operation in operations.items()
        if isinstance(operation, dict)
        for parameter in operation.get("parameters", [])
    ]


def test_every_paged_list_declares_its_limit_bounds(client):
    limits = [(where, p["schema"]) for where, p in parameters(client) if p["in"] == "query" and p["name"] == "limit"]
    assert len(limits) >= 15
    for where, schema in limits:
        assert schema == {"type": "integer", "minimum": 1, "maximum": 200, "default": 50}, where


def test_path_ids_declare_the_id_rule(client):
    names = ("user_id", "conversation_id", "task_id", "stage")
    ids = [(where, p) for where, p in parameters(client) if p["in"] == "path" and p["name"] in names]
    assert {p["name"] for _, p in ids} == set(names)
    for where, parameter in ids:
        assert parameter["schema"] == ID, where


@pytest.mark.parametrize(
    ("value", "valid"),
    [("u1", True), ("a..b", True), ("v1.2.3", True), (".", False), ("..", False), ("x" * 129, False)],
)
def test_the_id_pattern_is_a_json_schema_regex_that_means_the_id_rule(value, valid):
    """JSON Schema patterns are ECMA-262 regexes (Python's \\Z broke schema-driven tools: schemathesis)."""
    import jsonschema_rs

    assert jsonschema_rs.validator_for(ID).is_valid(value) is valid
    assert bool(ID_PATTERN.fullmatch(value)) is valid


def test_the_idempotency_key_header_declares_its_length(client):
    headers = [p for _, p in parameters(client) if p["in"] == "header" and p["name"] == "Idempotency-Key"]
    assert headers and all(p["schema"] == {"type": "string", "minLength": 1, "maxLength": 255} for p in headers)


def test_the_declared_bounds_are_the_enforced_ones(alice):
    memory = "/v1/users/u1/conversations/c1/memory"
    for limit, status in (("1", 200), ("200", 200), ("0", 400), ("201", 400)):
        assert alice.get(f"{memory}/revisions?limit={limit}").status_code == status, limit
    body = {"expectedRevision": 0, "memory": {}}
    assert_envelope(alice.put(memory, body, HTTP_IDEMPOTENCY_KEY="k" * 256), 400, "invalid_request")
    assert alice.put(memory, body, HTTP_IDEMPOTENCY_KEY="k" * 255).status_code == 200
    assert alice.get(f"/v1/users/{'u' * 128}/conversations/c1/memory").status_code == 200
    assert_envelope(alice.get(f"/v1/users/{'u' * 129}/conversations/c1/memory"), 400, "invalid_id")

"""One contract per endpoint: the OpenAPI document types, tags and describes every operation.

That every response body matches it is checked for every response the suite receives (tests/conftest.py,
tests/support/openapi.py); a full run also fails for an operation no test got a success answer from.
"""

from __future__ import annotations

import inspect

import pytest
from django.urls import reverse
from drf_spectacular.generators import SchemaGenerator

from memoryhub.api.openapi_operations import OPERATIONS, TAGS
from tests.support import openapi
from tests.support.api import assert_envelope


def _operations():
    for path, ops in openapi.document()["paths"].items():
        for method, op in ops.items():
            if method in openapi.METHODS:
                yield f"{method.upper()} {path}", op


def test_every_operation_has_an_area_a_summary_and_a_description():
    names = set(TAGS)
    assert {t["name"] for t in openapi.document()["tags"]} == names
    for where, op in _operations():
        assert op["operationId"] in OPERATIONS, (
            f"{where}: add {op['operationId']} to memoryhub/api/openapi_operations.py"
        )
        assert len(op["tags"]) == 1 and op["tags"][0] in names, (where, op["tags"])
        assert op.get("summary") and op.get("description"), where
    used = {op["tags"][0] for _, op in _operations()}
    assert used == names, names - used
    assert set(OPERATIONS) == {op["operationId"] for _, op in _operations()}, "a table entry names no operation"


def test_every_response_is_typed_and_every_error_is_the_envelope():
    for where, op in _operations():
        responses = op["responses"]
        assert responses["default"]["content"]["application/json"]["schema"] == {
            "$ref": "#/components/schemas/ErrorEnvelope"
        }, where
        for status, response in responses.items():
            if status == "204":
                assert "content" not in response, where
                continue
            assert response.get("content"), f"{where} {status} has no body schema"
            for media, body in response["content"].items():
                schema = body["schema"]
                free = schema.get("type") == "object" and not ({"properties", "$ref"} & set(schema))
                assert "$ref" in schema or not free, f"{where} {status} {media}: an untyped object"


def test_no_docstring_is_published():
    """Docstrings are maintainers' notes: a description is the view's explicit one or the table's."""
    docs = set()
    generator = SchemaGenerator()
    generator._initialise_endpoints()
    for _path, _pattern, _method, callback in generator.endpoints:
        cls = callback.cls
        docs |= {inspect.getdoc(obj) for obj in (cls, *vars(cls).values()) if callable(obj) or obj is cls}
    docs.discard(None)
    for where, op in _operations():
        assert op["description"] == OPERATIONS[op["operationId"]][2] or op["description"] not in docs, where
    for name, component in openapi.document()["components"]["schemas"].items():
        assert component.get("description") not in docs, name
        assert "unknown fields" not in component.get("description", ""), name


def test_the_served_schema_is_the_one_checked(client):
    served = client.get(reverse("schema"), HTTP_ACCEPT="application/json").json()
    assert served["paths"].keys() == openapi.document()["paths"].keys()


def test_a_wire_body_the_schema_does_not_describe_is_a_violation():
    openapi.take_violations()
    path = "/v1/users/u/conversations/c/memory"
    openapi.check("GET", path, 200, "application/json", b'{"revision": 1, "memory": {}, "extra": 1}')
    openapi.check("GET", path, 200, "application/json", b'{"revision": "1", "memory": {}}')
    openapi.check("GET", path, 201, "application/json", b'{"revision": 1, "memory": {}}')
    openapi.check("GET", path, 409, "application/json", b'{"error": {"code": "x", "message": "y"}}')
    openapi.check("GET", path, 200, "application/json", b'{"revision": 0, "memory": null}')
    openapi.check("GET", path, 404, "application/json", b'{"error": {"code": "x", "message": "y", "details": {}}}')
    found = openapi.take_violations()
    assert len(found) == 4, found
    assert "'extra' was unexpected" in found[0] and "is not of type 'integer'" in found[1]
    assert "201 is not documented" in found[2] and "'details' is a required property" in found[3]


@pytest.mark.django_db
def test_the_tool_call_answers_the_shapes_of_the_memory_endpoints(alice):
    from tests.support.api import client_for

    memory = "/v1/users/u1/conversations/c1/memory"
    minted = alice.post("/v1/users/u1/conversations/c1/tool-tokens", {}).json()
    tool = client_for(minted["token"])
    call = "/v1/tools/call"
    empty = tool.post(call, {"name": "get_memory", "arguments": {}}, format="json")
    assert empty.json() == {"details": {"revision": 0, "memory": None}} == {"details": alice.get(memory).json()}
    written = tool.post(
        call,
        {"name": "update_memory", "arguments": {"expectedRevision": 0, "memory": {"scene": "gate"}}},
        format="json",
    )
    assert written.json() == {"details": {"revision": 1}}
    read = tool.post(call, {"name": "get_memory", "arguments": {}}, format="json")
    assert (
        read.json()
        == {"details": alice.get(memory).json()}
        == {"details": {"revision": 1, "memory": {"scene": "gate"}}}
    )
    stale = tool.post(
        call, {"name": "update_memory", "arguments": {"expectedRevision": 0, "memory": {"scene": "x"}}}, format="json"
    )
    assert assert_envelope(stale, 409, "revision_conflict")["details"] == {"currentRevision": 1}
    unknown = tool.post(call, {"name": "drop_memory", "arguments": {}}, format="json")
    assert assert_envelope(unknown, 400, "invalid_request")["details"] == {"field": "name"}
    bad = tool.post(
        call, {"name": "update_memory", "arguments": {"expectedRevision": "1", "memory": {}}}, format="json"
    )
    assert assert_envelope(bad, 400, "invalid_request")["details"] == {"field": "arguments.expectedRevision"}
    # details.field names the argument at fault: a missing or unknown one, a float revision, the whole value.
    for arguments, field in (
        ({"memory": {}}, "arguments.expectedRevision"),
        ({"expectedRevision": 1}, "arguments.memory"),
        ({"expectedRevision": 1, "memory": {}, "colour": 1}, "arguments.colour"),
        ({"expectedRevision": 1.0, "memory": {}}, "arguments.expectedRevision"),
        ([], "arguments"),
    ):
        refused = tool.post(call, {"name": "update_memory", "arguments": arguments}, format="json")
        assert assert_envelope(refused, 400, "invalid_request")["details"] == {"field": field}, arguments
    assert alice.get(memory).json() == {"revision": 1, "memory": {"scene": "gate"}}  # nothing written
    assert_envelope(alice.post(call, {"name": "get_memory", "arguments": {}}), 401)  # a product key is not a token
    assert openapi.take_violations() == []

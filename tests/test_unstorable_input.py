"""Input no store keeps — U+0000, a lone surrogate, a number beyond a double — is the client's error: 400
invalid_request naming the place, on every database (PostgreSQL answered 503 storage_unavailable, the
turn's rate limiter 500), and nothing is written (docs/contract.md#request-bodies)."""

from __future__ import annotations

import pytest

from memories.longterm.models import LongTermMemory
from memories.models import Scenario
from memoryhub.json_text import INT_OVERFLOW
from tests.support.api import assert_envelope, client_for

pytestmark = pytest.mark.django_db

CONVERSATION = "/v1/users/u1/conversations/c1"
MEMORY = f"{CONVERSATION}/memory"
PREFERENCE = (
    '{"kind": "preference", "content": {"language": "zh", "detail": "brief", "text": %s},'
    ' "evidence": "以后请用简短的中文回答我", "source": "以后请用简短的中文回答我，谢谢。", "consent": true}'
)


def _send(api, method: str, path: str, body: str):
    return api.client.generic(method, path, body.encode(), content_type="application/json")


def _refused(response, path: str) -> dict:
    error = assert_envelope(response, 400, "invalid_request")
    assert error["details"] == {"path": path}, error
    return error


@pytest.mark.parametrize(
    ("memory", "path"),
    [
        ('{"a": "x\\u0000y"}', "/memory/a"),
        ('{"a": {"b\\u0000": 1}}', "/memory/a/b\\u0000"),
        ('{"list": [1, "ok", "\\ud800x"]}', "/memory/list/2"),
        ('{"a": "\\udc00"}', "/memory/a"),
        (r'{"a": "\\ud83d\ude00"}', "/memory/a"),  # a backslash, then "ud83d", then a lone low surrogate
        (r'{"ok": "\ud83d\ude00", "a": ["\ud83d\ude00\ude00"]}', "/memory/a/0"),
        ('{"a": 1e400}', "/memory/a"),
        ('{"a": [-1E+999]}', "/memory/a/0"),
        ('{"a": 1%s.0}' % ("0" * 400), "/memory/a"),
        ('{"a": 1%s}' % ("0" * 400), "/memory/a"),  # the same number as an integer literal
        ('{"a": {"b": [-1%s]}}' % ("0" * 400), "/memory/a/b/0"),
        (f'{{"a": {INT_OVERFLOW}}}', "/memory/a"),  # the smallest integer a double rounds to infinity
    ],
)
def test_a_memory_document_that_no_store_keeps_is_400_naming_its_path(alice, memory, path):
    _refused(_send(alice, "PUT", MEMORY, '{"expectedRevision": 0, "memory": ' + memory + "}"), path)
    assert alice.get(MEMORY).json() == {"revision": 0, "memory": None}


def test_escapes_that_are_text_are_kept(alice):
    body = '{"expectedRevision": 0, "memory": {"emoji": "\\ud83d\\ude00", "slash": "\\\\u0000", "big": 1e308}}'
    assert _send(alice, "PUT", MEMORY, body).status_code == 200
    memory = alice.get(MEMORY).json()["memory"]
    assert (memory["emoji"], memory["slash"], float(memory["big"])) == ("😀", "\\u0000", 1e308)  # jsonb: 1000…0


def test_the_largest_integer_a_double_holds_is_kept(alice):
    body = f'{{"expectedRevision": 0, "memory": {{"big": {INT_OVERFLOW - 1}, "small": {1 - INT_OVERFLOW}}}}}'
    assert _send(alice, "PUT", MEMORY, body).status_code == 200
    memory = alice.get(MEMORY).json()["memory"]
    assert (memory["big"], memory["small"]) == (INT_OVERFLOW - 1, 1 - INT_OVERFLOW)
    assert float(memory["big"]) == 1.7976931348623157e308


def test_an_integer_beyond_a_double_through_tools_call_is_400_and_writes_nothing(alice):
    token = alice.post(f"{CONVERSATION}/tool-tokens", {}).json()["token"]
    body = '{"name": "update_memory", "arguments": {"expectedRevision": 0, "memory": {"a": 1%s}}}' % ("0" * 400)
    response = client_for(token).generic("POST", "/v1/tools/call", body.encode(), content_type="application/json")
    _refused(response, "/arguments/memory/a")
    assert alice.get(MEMORY).json() == {"revision": 0, "memory": None}


def test_the_fast_put_path_refuses_the_same(alice):
    # A key the process has seen takes memoryhub/api/fast_validation.py's path: the same check applies.
    assert _send(alice, "PUT", MEMORY, '{"expectedRevision": 0, "memory": {}}').status_code == 200
    _refused(_send(alice, "PUT", MEMORY, '{"expectedRevision": 1, "memory": {"a": "\\u0000"}}'), "/memory/a")
    assert alice.get(MEMORY).json() == {"revision": 1, "memory": {}}


@pytest.mark.parametrize(
    ("body", "path"),
    [
        ('{"id": "g", "name": "Gate", "template": "a\\u0000 {{userMessage}}"}', "/template"),
        (
            '{"id": "g", "name": "Gate", "template": "{{userMessage}}", "memorySchema": {"x\\u0000": 1}}',
            "/memorySchema/x\\u0000",
        ),
        ('{"id": "g", "name": "Gate\\ud800", "template": "{{userMessage}}"}', "/name"),
    ],
)
def test_a_scenario_with_unstorable_text_is_400(alice, body, path):
    _refused(_send(alice, "POST", "/v1/scenarios", body), path)
    assert not Scenario.objects.exists()


def test_a_scenario_patch_with_unstorable_text_is_400(alice):
    assert alice.post("/v1/scenarios", {"id": "g", "name": "Gate", "template": "{{userMessage}}"}).status_code == 201
    _refused(_send(alice, "PATCH", "/v1/scenarios/g", '{"template": "\\u0000"}'), "/template")
    assert alice.get("/v1/scenarios/g").json()["template"] == "{{userMessage}}"


def test_long_term_content_with_nul_is_400(alice):
    _refused(_send(alice, "POST", "/v1/users/u1/memories", PREFERENCE % '"brief\\u0000"'), "/content/text")
    assert not LongTermMemory.objects.exists()


def test_a_turn_whose_scenario_id_has_a_lone_surrogate_is_400_not_500(alice):
    assert alice.post("/v1/scenarios", {"id": "g", "name": "Gate", "template": "{{userMessage}}"}).status_code == 201
    body = '{"scenarioId": "\\ud800x", "userMessage": "hi"}'
    _refused(_send(alice, "POST", f"{CONVERSATION}/turns", body), "/scenarioId")


@pytest.mark.parametrize("query", ["kind=%00", "kind=preference%00", "cursor=%00", "limit=5&k%00=1"])
def test_a_query_parameter_with_nul_is_400_naming_it(alice, query):
    error = assert_envelope(alice.get(f"/v1/users/u1/memories?{query}"), 400, "invalid_request")
    name = query.rpartition("&")[2].partition("=")[0].replace("%00", "\\u0000")
    assert error["details"] == {"field": name}


def test_a_query_parameter_with_nul_is_400_before_authentication(db):
    from rest_framework.test import APIClient

    assert_envelope(APIClient().get(f"{MEMORY}?x=%00"), 400, "invalid_request")


def test_nan_and_infinity_literals_stay_400(alice):
    for literal in ("NaN", "Infinity", "-Infinity"):
        body = '{"expectedRevision": 0, "memory": {"a": ' + literal + "}}"
        assert_envelope(_send(alice, "PUT", MEMORY, body), 400, "invalid_request")


@pytest.mark.parametrize(
    ("charset", "body"),
    [
        ("utf-7", b'{"expectedRevision": 0, "memory": {"x": "+2AA-"}}'),  # +2AA- is U+D800 in UTF-7
        ("unicode_escape", b'{"expectedRevision": 0, "memory": {"x": "\\ud800"}}'),
    ],
)
def test_a_lone_surrogate_decoded_from_another_charset_is_400_naming_its_path(alice, charset, body):
    """docs/contract.md: a body is UTF-8 unless the Content-Type names another charset; what that decodes to is
    checked like a \\u escape (it was a 500 when the JSON held the surrogate itself, not its escape)."""
    response = alice.client.generic("PUT", MEMORY, body, content_type=f"application/json; charset={charset}")
    _refused(response, "/memory/x")
    assert alice.get(MEMORY).json() == {"revision": 0, "memory": None}


@pytest.mark.parametrize(
    ("path", "body", "field"),
    [
        ("/v1/users/u1/history/search", {"query": "x", "conversations": ["c1\n"]}, "conversations.0"),
        ("/v1/lorebooks", {"id": "lb3 ", "name": "x", "worldInfo": {"entries": {}}}, "id"),
        (
            "/v1/users/u1/memories",
            {"kind": "preference", "content": {"language": "zh"}, "evidence": "e", "source": "e", "consent": True,
             "operationId": "op9\n"},
            "operationId",
        ),
    ],
)  # fmt: skip
def test_an_id_in_a_body_with_whitespace_at_its_ends_is_refused_not_trimmed(alice, path, body, field):
    """docs/contract.md, "Identifiers": "c1\\n" is not c1 (a trimmed copy reached c1's rows, or another retry's)."""
    error = assert_envelope(alice.post(path, body), 400, "invalid_request")
    assert field in error["details"]["fields"], error

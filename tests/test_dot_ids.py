"""Ids made only of dots are refused (docs/contract.md, "Identifiers"): URL parsers (httpx, WHATWG `fetch`) fold a
`.` or `..` path segment, `%2e%2e` included, so `DELETE …/conversations/..` reached `DELETE /v1/users/{u}` and
erased the whole user. Such an id is never stored, and in a path never reaches a handler as that id."""

from __future__ import annotations

import pytest

from lorebooks.models import Lorebook, LorebookEntry
from memories.models import Conversation, MemoryDocument
from tests.lorebooks.support import import_world, world_info
from tests.support.api import assert_envelope

pytestmark = pytest.mark.django_db

DOTS = [".", "..", "..."]
ESCAPED = {".": "%2e", "..": "%2e%2e", "...": "..."}  # what a client that does not fold would send


@pytest.mark.parametrize("dots", DOTS)
@pytest.mark.parametrize(
    ("method", "template", "field"),
    [
        ("get", "/v1/users/{}/conversations/c1/memory", "userId"),
        ("put", "/v1/users/u1/conversations/{}/memory", "conversationId"),
        ("delete", "/v1/users/u1/conversations/{}", "conversationId"),
        ("delete", "/v1/users/{}", "userId"),
        ("get", "/v1/users/u1/tasks/{}", "taskId"),
        ("put", "/v1/users/u1/tasks/t1/checkpoints/{}", "stage"),
    ],
)
def test_a_dot_only_id_in_a_path_is_400_invalid_id(alice, dots, method, template, field):
    alice.put("/v1/users/u1/conversations/c1/memory", {"expectedRevision": 0, "memory": {"keep": True}})
    body = {"expectedRevision": 0, "memory": {"x": 1}} if method == "put" else None
    response = getattr(alice, method)(template.format(ESCAPED[dots]), *([body] if body else []))
    error = assert_envelope(response, 400, "invalid_id")
    assert error["details"] == {"field": field}
    assert "not only dots" in error["message"]
    assert alice.get("/v1/users/u1/conversations/c1/memory").json() == {"revision": 1, "memory": {"keep": True}}
    assert not MemoryDocument.objects.exclude(conversation_id="c1").exists()


@pytest.mark.parametrize("dots", DOTS)
def test_a_dot_only_id_in_a_body_is_400_naming_the_field(alice, dots):
    search = alice.post("/v1/users/u1/history/search", {"query": "x", "conversations": [dots]})
    assert "conversations.0" in assert_envelope(search, 400, "invalid_request")["details"]["fields"]
    book = alice.post("/v1/lorebooks", {"id": dots, "name": "x", "worldInfo": {"entries": {}}})
    assert "id" in assert_envelope(book, 400, "invalid_request")["details"]["fields"]
    assert not Lorebook.objects.exists()


@pytest.mark.parametrize("dots", DOTS)
def test_a_dot_only_conversation_header_at_hinos_is_400(alice, dots):
    body = {"user_id": "u1", "messages": [{"role": "user", "content": "hi"}]}
    response = alice.post("/hinos/v1/memory/prepare", body, HTTP_X_FLOW_CONVERSATION_ID=dots)
    assert assert_envelope(response, 400, "invalid_id")["details"] == {"field": "x-flow-conversation-id"}
    hinos_user = alice.post("/hinos/v1/memory/prepare", {**body, "user_id": dots}, HTTP_X_FLOW_CONVERSATION_ID="c1")
    assert "user_id" in assert_envelope(hinos_user, 400, "invalid_request")["details"]["fields"]
    assert not Conversation.objects.exists()


@pytest.mark.parametrize("dots", DOTS)
def test_a_dot_only_entry_uid_is_refused_on_create_and_import(alice, dots):
    import_world(alice)
    created = alice.post("/v1/lorebooks/eldoria/entries", {"entry": {"content": "x"}, "uid": dots})
    assert assert_envelope(created, 400, "invalid_request")["details"] == {"field": "uid"}
    entries = dict(world_info()["entries"])
    entries[dots] = {**entries.pop("0"), "uid": dots}
    imported = alice.post("/v1/lorebooks", {"id": "dotted", "name": "x", "worldInfo": {"entries": entries}})
    assert assert_envelope(imported, 400, "invalid_request")["details"] == {"field": "uid"}
    assert not LorebookEntry.objects.filter(uid=dots).exists()
    assert not Lorebook.objects.filter(slug="dotted").exists()
    assert_envelope(alice.get(f"/v1/lorebooks/eldoria/entries/{ESCAPED[dots]}"), 404, "not_found")


@pytest.mark.parametrize("name", [".a", "a.", "..a", "a..b", "v1.2.3"])
def test_ids_with_dots_among_other_characters_are_ids(alice, name):
    path = f"/v1/users/{name}/conversations/{name}/memory"
    assert alice.put(path, {"expectedRevision": 0, "memory": {"n": 1}}).status_code == 200
    assert alice.get(path).json()["revision"] == 1
    assert MemoryDocument.objects.filter(user_id=name, conversation_id=name).exists()

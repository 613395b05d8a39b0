"""The OpenAPI schema documents the swipe and rollback endpoints (docs/roleplay.md)."""

from __future__ import annotations

import pytest

pytestmark = pytest.mark.django_db

CONV = "/v1/users/{user_id}/conversations/{conversation_id}"


def test_select_edit_and_delete_are_in_the_schema(client):
    schema = client.get("/api/schema/", HTTP_ACCEPT="application/vnd.oai.openapi+json").json()
    paths = schema["paths"]
    select = paths[f"{CONV}/turns/{{turn_id}}/select"]["post"]
    edit = paths[f"{CONV}/messages/{{message_id}}/edit"]["post"]
    delete = paths[f"{CONV}/messages/{{message_id}}"]["delete"]
    assert (select["operationId"], edit["operationId"], delete["operationId"]) == (
        "turns_select",
        "messages_edit",
        "messages_delete",
    )
    for operation in (select, edit, delete):
        assert {"200", "404", "409"} <= set(operation["responses"])
    assert "content" in schema["components"]["schemas"]["MessageEditRequest"]["properties"]
    assert "turnId" in schema["components"]["schemas"]["StateCandidateRequest"]["properties"]
    rollback = schema["components"]["schemas"]["Rollback"]["properties"]
    assert {"action", "cause", "status", "kinds"} <= set(rollback)


def test_complete_accept_and_edit_document_their_conflicts(client):
    paths = client.get("/api/schema/", HTTP_ACCEPT="application/vnd.oai.openapi+json").json()["paths"]
    complete = paths[f"{CONV}/turns/{{turn_id}}/complete"]["post"]["responses"]
    accept = paths[f"{CONV}/turns/{{turn_id}}/accept"]["post"]["responses"]
    edit = paths[f"{CONV}/messages/{{message_id}}/edit"]["post"]["responses"]
    assert {"200", "404", "409"} <= set(complete) and {"200", "404", "409"} <= set(accept)
    assert "turn_already_completed" in complete["409"]["description"]
    for responses in (complete, accept, edit):
        assert "turn_superseded" in responses["409"]["description"]
    assert "turn_not_acceptable" in accept["409"]["description"]


def test_a_messages_superseded_flag_says_a_waiting_regeneration_is_not_visible_yet(client):
    schemas = client.get("/api/schema/", HTTP_ACCEPT="application/vnd.oai.openapi+json").json()["components"]
    assert "waiting for its accept" in schemas["schemas"]["Message"]["properties"]["superseded"]["description"]

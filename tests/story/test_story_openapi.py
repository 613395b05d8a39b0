"""The OpenAPI schema documents the state and story endpoints (issue 11, "For all three")."""

from __future__ import annotations

import pytest

pytestmark = pytest.mark.django_db

CONV = "/v1/users/{user_id}/conversations/{conversation_id}"


def test_state_and_story_operations_are_in_the_schema(client):
    schema = client.get("/api/schema/", HTTP_ACCEPT="application/vnd.oai.openapi+json").json()
    paths = schema["paths"]
    operations = {
        f"{CONV}/state": ("get", "state_get"),
        f"{CONV}/state/candidates": ("post", "state_candidates_submit"),
        f"{CONV}/state/revisions": ("get", "state_revisions"),
        f"{CONV}/story": ("get", "story_get"),
        f"{CONV}/story/versions": ("get", "story_versions"),
        f"{CONV}/story/settlements": ("post", "story_settle"),
    }
    for path, (method, operation_id) in operations.items():
        assert paths[path][method]["operationId"] == operation_id
    candidate = paths[f"{CONV}/state/candidates"]["post"]
    assert {"201", "409", "422"} <= set(candidate["responses"])
    settle = schema["components"]["schemas"]["SettlementRequest"]["properties"]
    assert {"expectedVersion", "anchorMessageId", "setFacts", "unsetFacts", "appendEvents", "narrative"} <= set(settle)

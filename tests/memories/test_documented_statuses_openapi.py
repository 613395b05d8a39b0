"""The OpenAPI schema lists the statuses the docs give these operations, and the shape of `present`
(docs/history.md, docs/contract.md "Scenarios and turns", docs/roleplay.md "Witness scopes")."""

from __future__ import annotations

import pytest

pytestmark = pytest.mark.django_db

CONV = "/v1/users/{user_id}/conversations/{conversation_id}"


@pytest.fixture(scope="module")
def schema(django_db_blocker):
    from django.test import Client

    with django_db_blocker.unblock():
        return Client().get("/api/schema/", HTTP_ACCEPT="application/vnd.oai.openapi+json").json()


@pytest.mark.parametrize(
    ("path", "statuses"),
    [
        (f"{CONV}/messages/import", {"200", "201", "400", "422"}),
        ("/v1/users/{user_id}/history/search", {"200", "400", "503"}),
        (f"{CONV}/turns/{{turn_id}}/complete", {"200", "400", "404", "409"}),
        (f"{CONV}/turns/{{turn_id}}/accept", {"200", "400", "404", "409"}),
    ],
)
def test_documented_statuses_are_in_the_schema(schema, path, statuses):
    responses = schema["paths"][path]["post"]["responses"]
    assert statuses <= set(responses)
    for status in statuses - {"200", "201"}:
        assert responses[status]["content"]["application/json"]["schema"] == {
            "$ref": "#/components/schemas/ErrorEnvelope"
        }


def test_the_409s_name_their_codes(schema):
    complete = schema["paths"][f"{CONV}/turns/{{turn_id}}/complete"]["post"]["responses"]["409"]["description"]
    accept = schema["paths"][f"{CONV}/turns/{{turn_id}}/accept"]["post"]["responses"]["409"]["description"]
    assert "turn_already_completed" in complete and "turn_superseded" in complete
    assert "turn_not_acceptable" in accept and "turn_superseded" in accept


def test_present_is_a_list_of_at_most_50_names(schema):
    present = schema["components"]["schemas"]["TurnPrepareRequest"]["properties"]["present"]
    assert (present["type"], present["maxItems"], present["items"]["type"]) == ("array", 50, "string")

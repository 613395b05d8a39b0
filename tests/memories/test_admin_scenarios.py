"""The admin edits scenarios through the same validation and service as the API; turns show the model input."""

from __future__ import annotations

import html

import pytest

from memories.models import Scenario, ScenarioVersion, Turn
from tests.factories import SuperuserFactory


@pytest.fixture
def operator(client, db):
    client.force_login(SuperuserFactory(username="ops"))  # client.login() has no request for the login throttle
    return client


def _form(product, *, slug="gate", runtime="personalization", sources=(), template="{{userMessage}}", **extra):
    data = {
        "product": product.pk,
        "slug": slug,
        "name": "Gate",
        "memory_runtime": runtime,
        "template": template,
        "memory_ingest": "best_effort",
        "commit_on": "completed",
        "tool_updates": "on",
        "memory_schema": "null",
        "sections": "{}",
        "sources-TOTAL_FORMS": str(len(sources)),
        "sources-INITIAL_FORMS": "0",
        "versions-TOTAL_FORMS": "0",
        "versions-INITIAL_FORMS": "0",
    }
    for i, (source_id, agent_ref, variable) in enumerate(sources):
        data.update(
            {
                f"sources-{i}-source_id": source_id,
                f"sources-{i}-agent_ref": agent_ref,
                f"sources-{i}-variable": variable,
                f"sources-{i}-priority": "",
            }
        )
    data.update(extra)
    return data


def test_admin_creates_a_valid_scenario_through_the_service(operator, alice):
    form = _form(
        alice.product, sources=[("s1", "json-memory", "jsonMemory")], template="{{jsonMemory}} {{userMessage}}"
    )
    response = operator.post("/admin/memories/scenario/add/", form)
    assert response.status_code == 302, response.content.decode()[:3000]
    scenario = Scenario.objects.get(product=alice.product, slug="gate")
    assert ScenarioVersion.objects.filter(scenario=scenario, version=1, actor="operator:ops").exists()
    assert alice.get("/v1/scenarios/gate").json()["memorySources"][0]["variable"] == "jsonMemory"


def test_admin_shows_the_same_validation_messages_and_saves_nothing(operator, alice):
    form = _form(alice.product, runtime="axon_go", sources=[("s1", "json-memory", "jsonMemory")])
    response = operator.post("/admin/memories/scenario/add/", form)
    assert response.status_code == 200
    assert "memorySources[0].variable" in response.content.decode()
    assert not Scenario.objects.filter(product=alice.product).exists()


def test_turn_admin_shows_the_prompt_and_sources(operator, alice):
    alice.post(
        "/v1/scenarios",
        {
            "id": "gate",
            "name": "Gate",
            "template": "M={{jsonMemory}} U={{userMessage}}",
            "memorySources": [{"id": "s1", "agentRef": "json-memory", "variable": "jsonMemory"}],
        },
    )
    alice.put("/v1/users/u1/conversations/c1/memory", {"expectedRevision": 0, "memory": {"k": "铜钥匙"}})
    turn_id = alice.post("/v1/users/u1/conversations/c1/turns", {"scenarioId": "gate", "userMessage": "hi"}).json()[
        "turnId"
    ]
    listing = operator.get("/admin/memories/turn/?q=u1").content.decode()
    assert f"/admin/memories/turn/{turn_id}/change/" in listing
    page = html.unescape(operator.get(f"/admin/memories/turn/{turn_id}/change/").content.decode())
    assert "铜钥匙" in page and "jsonMemory" in page and Turn.objects.get(pk=turn_id).prompt.split("U=")[0] in page


def test_scenario_page_lists_its_versions_read_only(operator, alice):
    alice.post("/v1/scenarios", {"id": "gate", "name": "Gate", "template": "{{userMessage}}"})
    alice.patch("/v1/scenarios/gate", {"name": "Gate 2"})
    scenario = Scenario.objects.get(product=alice.product, slug="gate")
    page = html.unescape(operator.get(f"/admin/memories/scenario/{scenario.pk}/change/").content.decode())
    assert '"name": "Gate 2"' in page and '"name": "Gate"' in page  # both snapshots shown
    assert 'name="versions-0-DELETE"' not in page  # history cannot be deleted from the form

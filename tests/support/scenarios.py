"""Scenario bodies for the scenario API, and creating or being refused one."""

from __future__ import annotations

from memoryhub.runtimes import registry
from tests.support.api import assert_envelope

BASE = {
    "id": "gate",
    "name": "City gate",
    "memorySources": [{"id": "s1", "agentRef": "json-memory", "variable": "jsonMemory"}],
    "template": "Memory: {{jsonMemory}}\nUser: {{userMessage}}",
}


def scenario(**overrides) -> dict:
    return {**BASE, **overrides}


def agent_ref(variable: str, name: str = "diary-main") -> str:
    """The agentRef the registry accepts for the variable; `name` for one whose agentRef is a name (diaries)."""
    registered = registry.get_source(variable)
    return sorted(registered.agent_refs)[0] if registered and registered.agent_refs else name


def source(index: int, variable: str, **extra) -> dict:
    return {"id": f"s{index}", "agentRef": agent_ref(variable, f"ref-{index}"), "variable": variable, **extra}


def create(api, body: dict) -> dict:
    response = api.post("/v1/scenarios", body)
    assert response.status_code == 201, response.json()
    return response.json()


def refused(api, body: dict) -> dict:
    """POST the body, expect a 400 envelope and return details.fields; nothing must have been created."""
    before = api.get("/v1/scenarios").json()["results"]
    error = assert_envelope(api.post("/v1/scenarios", body), 400, "invalid_request")
    assert api.get("/v1/scenarios").json()["results"] == before
    return error["details"]["fields"]

"""The MCP lorebook tools: a model reads the entries of its scenario's lorebooks and proposes an edit of one."""

from __future__ import annotations

import pytest
from jsonschema import Draft202012Validator

from lorebooks.models import LorebookEntryVersion
from tests.mcp.support import call, mint, rpc
from tests.support.openapi import json_schema

from .support import import_world

pytestmark = pytest.mark.django_db


@pytest.fixture
def token(alice):
    import_world(alice)
    alice.post("/v1/lorebooks", {"id": "other", "name": "o", "worldInfo": {"entries": {}}})
    source = {"id": "wi", "agentRef": "lorebook", "variable": "worldInfo", "lorebooks": ["eldoria"]}
    body = {"id": "lore", "name": "lore", "memorySources": [source], "template": "{{worldInfo}}"}
    assert alice.post("/v1/scenarios", body).status_code == 201
    return mint(alice, scenarioId="lore")


def test_the_tools_are_offered_with_a_lorebook_scenario_only(alice, client, token):
    names = {t["name"] for t in rpc(client, token, "tools/list").json()["result"]["tools"]}
    assert {"get_lorebook_entries", "propose_lorebook_entry_edit"} <= names
    plain = {"id": "plain", "name": "p", "memorySources": [], "template": "x"}
    assert alice.post("/v1/scenarios", plain).status_code == 201
    other = rpc(client, mint(alice, scenarioId="plain"), "tools/list").json()["result"]["tools"]
    assert not {"get_lorebook_entries", "propose_lorebook_entry_edit"} & {t["name"] for t in other}


def test_a_model_proposes_an_edit_that_commits_only_when_accepted(alice, client, token):
    read = call(client, token, "get_lorebook_entries")["structuredContent"]
    assert [b["id"] for b in read["lorebooks"]] == ["eldoria"]  # not "other": the scenario does not recall it
    entry = next(e for e in read["lorebooks"][0]["entries"] if e["uid"] == "2")
    edit = {"lorebook": "eldoria", "uid": "2", "baseRevision": entry["revision"], "entry": {"order": 85}}
    proposed = call(client, token, "propose_lorebook_entry_edit", edit | {"reason": "she matters more now"})
    assert proposed["structuredContent"]["status"] == "pending"
    assert alice.get("/v1/lorebooks/eldoria/entries/2").json()["revision"] == 1  # nothing committed yet
    pid = proposed["structuredContent"]["proposalId"]
    listed = alice.get("/v1/lorebooks/eldoria/proposals?status=pending").json()["results"]
    assert [(p["id"], p["uid"], p["entry"], p["reason"]) for p in listed] == [
        (pid, "2", {"order": 85}, "she matters more now")
    ]
    assert listed[0]["proposedBy"].startswith("tool")
    accepted = alice.post(f"/v1/lorebooks/eldoria/proposals/{pid}/accept", {})
    assert accepted.status_code == 200 and accepted.json()["revision"] == 2
    assert alice.get("/v1/lorebooks/eldoria/entries/2").json()["entry"]["order"] == 85
    assert LorebookEntryVersion.objects.get(entry__uid="2", revision=2).cause == "proposal"
    stale = call(client, token, "propose_lorebook_entry_edit", edit)
    assert stale["isError"] is True and "revision 2" in stale["content"][0]["text"]
    foreign = call(client, token, "propose_lorebook_entry_edit", edit | {"lorebook": "other", "baseRevision": 2})
    assert foreign["isError"] is True


def test_the_tools_results_are_what_their_output_schemas_declare(client, token):
    """Read as closed objects, as the API's responses are: a key the outputSchema does not name fails."""
    tools = {t["name"]: t for t in rpc(client, token, "tools/list").json()["result"]["tools"]}
    read = call(client, token, "get_lorebook_entries")["structuredContent"]
    entry = next(e for e in read["lorebooks"][0]["entries"] if e["uid"] == "2")
    edit = {"lorebook": "eldoria", "uid": "2", "baseRevision": entry["revision"], "entry": {"order": 85}}
    written = call(client, token, "propose_lorebook_entry_edit", edit)["structuredContent"]
    for name, result in (("get_lorebook_entries", read), ("propose_lorebook_entry_edit", written)):
        closed = json_schema(tools[name]["outputSchema"])
        assert list(Draft202012Validator(closed).iter_errors(result)) == [], name
    assert (
        Draft202012Validator(json_schema(tools["propose_lorebook_entry_edit"]["outputSchema"])).is_valid(
            {"proposalId": 1, "status": "pending", "x": 1}
        )
        is False
    )

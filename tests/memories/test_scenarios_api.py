"""Scenarios through HTTP (S1, S2, S5): CRUD, product scope, defaults, versions and every validation rule."""

from __future__ import annotations

import pytest

from memoryhub.runtimes import registry
from tests.support.api import assert_envelope
from tests.support.scenarios import BASE, create, refused, scenario, source

# --- CRUD, defaults and product scope ---------------------------------------------------------------


def test_create_fills_the_defaults_and_reads_back(alice):
    created = create(alice, BASE)
    assert created["memoryRuntime"] == "personalization"
    assert created["memoryIngest"] == "best_effort"
    assert created["commitOn"] == "completed"
    assert created["toolUpdates"] is True
    assert created["version"] == 1
    assert created["memorySources"] == BASE["memorySources"]
    assert alice.get("/v1/scenarios/gate").json() == created
    assert [s["id"] for s in alice.get("/v1/scenarios").json()["results"]] == ["gate"]


def test_explicit_fields_are_kept(alice):
    body = scenario(
        memoryRuntime="axon_shadow",
        memoryIngest="required",
        commitOn="accepted",
        toolUpdates=False,
        memorySources=[source(1, "jsonMemory", priority=2), source(2, "compassMemory")],
        template="{{compassMemory}} {{jsonMemory}} {{userMessage}}",
    )
    created = create(alice, body)
    for key in ("memoryRuntime", "memoryIngest", "commitOn", "toolUpdates", "memorySources", "template"):
        assert created[key] == body[key], key


def test_the_same_id_twice_is_a_conflict(alice):
    create(alice, BASE)
    assert_envelope(alice.post("/v1/scenarios", scenario(name="other")), 409)
    assert alice.get("/v1/scenarios/gate").json()["name"] == "City gate"


def test_unknown_scenario_is_404(alice):
    assert_envelope(alice.get("/v1/scenarios/nope"), 404, "not_found")
    assert_envelope(alice.patch("/v1/scenarios/nope", {"name": "x"}), 404, "not_found")
    assert_envelope(alice.put("/v1/scenarios/nope", BASE), 404, "not_found")
    assert_envelope(alice.delete("/v1/scenarios/nope"), 404, "not_found")
    assert_envelope(alice.get("/v1/scenarios/nope/versions"), 404, "not_found")


def test_another_product_gets_404_on_every_scenario_endpoint_and_changes_nothing(alice, bob):
    create(alice, BASE)
    assert_envelope(bob.get("/v1/scenarios/gate"), 404, "not_found")
    assert_envelope(bob.get("/v1/scenarios/gate/versions"), 404, "not_found")
    assert_envelope(bob.patch("/v1/scenarios/gate", {"name": "stolen"}), 404, "not_found")
    assert_envelope(bob.put("/v1/scenarios/gate", scenario(name="stolen")), 404, "not_found")
    assert_envelope(bob.delete("/v1/scenarios/gate"), 404, "not_found")
    assert bob.get("/v1/scenarios").json() == {"results": [], "next": None}
    mine = alice.get("/v1/scenarios/gate").json()
    assert mine["name"] == "City gate" and mine["version"] == 1


def test_another_product_can_create_its_own_scenario_with_the_same_id(alice, bob):
    create(alice, BASE)
    theirs = create(bob, scenario(name="Bob's gate", commitOn="accepted"))
    assert theirs["name"] == "Bob's gate"
    assert alice.get("/v1/scenarios/gate").json()["name"] == "City gate"
    assert alice.get("/v1/scenarios/gate").json()["commitOn"] == "completed"


def test_delete_removes_the_scenario(alice):
    create(alice, BASE)
    response = alice.delete("/v1/scenarios/gate")
    assert response.status_code == 204
    assert_envelope(alice.get("/v1/scenarios/gate"), 404, "not_found")
    create(alice, BASE)  # the id is free again


def test_a_scenario_created_again_after_a_delete_continues_the_versions_its_turns_used(alice):
    """A turn keeps (scenarioId, scenarioVersion): after a delete and a new scenario of the same id, that pair
    must not name another definition (docs/contract.md, "Scenarios and turns")."""
    create(alice, BASE)
    assert alice.put("/v1/scenarios/gate", {**BASE, "name": "Second"}).json()["version"] == 2
    turn = alice.post("/v1/users/u1/conversations/c1/turns", {"scenarioId": "gate", "userMessage": "hi"}).json()
    assert turn["scenarioVersion"] == 2
    assert alice.delete("/v1/scenarios/gate").status_code == 204
    again = create(alice, {**BASE, "name": "Again"})
    assert again["version"] == 3
    assert [v["version"] for v in alice.get("/v1/scenarios/gate/versions").json()["results"]] == [3]
    assert alice.delete("/v1/scenarios/gate").status_code == 204
    assert create(alice, {**BASE, "id": "fresh"})["version"] == 1  # an id no turn used starts at 1


def test_list_is_paginated(alice):
    for index in range(3):
        create(alice, scenario(id=f"sc{index}"))
    first = alice.get("/v1/scenarios?limit=2").json()
    assert [s["id"] for s in first["results"]] == ["sc0", "sc1"] and first["next"]
    second = alice.get(f"/v1/scenarios?limit=2&cursor={first['next']}").json()
    assert [s["id"] for s in second["results"]] == ["sc2"] and second["next"] is None


# --- versions -----------------------------------------------------------------------------------------


def test_every_change_is_a_numbered_version_listed_newest_first(alice):
    create(alice, BASE)
    patched = alice.patch("/v1/scenarios/gate", {"name": "Gate v2"})
    assert patched.status_code == 200 and patched.json()["version"] == 2
    replaced = alice.put("/v1/scenarios/gate", scenario(name="Gate v3", commitOn="accepted"))
    assert replaced.status_code == 200 and replaced.json()["version"] == 3
    assert alice.get("/v1/scenarios/gate").json()["version"] == 3
    versions = alice.get("/v1/scenarios/gate/versions").json()
    assert [v["version"] for v in versions["results"]] == [3, 2, 1]
    assert [v["scenario"]["name"] for v in versions["results"]] == ["Gate v3", "Gate v2", "City gate"]
    assert versions["results"][0]["scenario"]["commitOn"] == "accepted"
    assert versions["results"][2]["scenario"]["commitOn"] == "completed"
    assert all(v["actor"].startswith("api_key:") and v["createdAt"].endswith("Z") for v in versions["results"])


def test_versions_are_paginated(alice):
    create(alice, BASE)
    for name in ("b", "c"):
        alice.patch("/v1/scenarios/gate", {"name": name})
    first = alice.get("/v1/scenarios/gate/versions?limit=2").json()
    assert [v["version"] for v in first["results"]] == [3, 2] and first["next"]
    rest = alice.get(f"/v1/scenarios/gate/versions?limit=2&cursor={first['next']}").json()
    assert [v["version"] for v in rest["results"]] == [1] and rest["next"] is None


def test_a_refused_change_creates_no_version(alice):
    create(alice, BASE)
    assert_envelope(alice.patch("/v1/scenarios/gate", {"memoryRuntime": "bogus"}), 400, "invalid_request")
    assert alice.get("/v1/scenarios/gate").json()["version"] == 1
    assert [v["version"] for v in alice.get("/v1/scenarios/gate/versions").json()["results"]] == [1]


# --- PUT vs PATCH, id ----------------------------------------------------------------------------------


def test_patch_changes_only_the_fields_sent(alice):
    create(alice, scenario(commitOn="accepted", toolUpdates=False))
    body = alice.patch("/v1/scenarios/gate", {"name": "Renamed"}).json()
    assert body["name"] == "Renamed"
    assert body["commitOn"] == "accepted" and body["toolUpdates"] is False
    assert body["memorySources"] == BASE["memorySources"] and body["template"] == BASE["template"]


def test_put_replaces_the_whole_scenario_and_omitted_fields_return_to_defaults(alice):
    create(alice, scenario(commitOn="accepted", toolUpdates=False, memoryIngest="required"))
    body = alice.put("/v1/scenarios/gate", {"name": "Bare"}).json()
    assert body["name"] == "Bare"
    assert body["commitOn"] == "completed" and body["toolUpdates"] is True and body["memoryIngest"] == "best_effort"
    assert body["memorySources"] == [] and body["template"] == ""


def test_put_is_validated_as_a_whole(alice):
    create(alice, BASE)
    # the template still names jsonMemory, but the PUT configures no source for it
    fields = assert_envelope(alice.put("/v1/scenarios/gate", {"name": "x", "template": "{{jsonMemory}}"}), 400)[
        "details"
    ]["fields"]
    assert "template" in fields
    assert alice.get("/v1/scenarios/gate").json()["name"] == "City gate"


def test_patch_is_validated_against_the_merged_scenario(alice):
    create(alice, BASE)
    # dropping the source while the stored template still references it is refused
    fields = assert_envelope(alice.patch("/v1/scenarios/gate", {"memorySources": []}), 400)["details"]["fields"]
    assert "template" in fields
    assert alice.get("/v1/scenarios/gate").json()["memorySources"] == BASE["memorySources"]


@pytest.mark.parametrize("method", ["put", "patch"])
def test_the_id_cannot_change(alice, method):
    create(alice, BASE)
    body = scenario(id="renamed") if method == "put" else {"id": "renamed"}
    fields = assert_envelope(getattr(alice, method)("/v1/scenarios/gate", body), 400, "invalid_request")["details"][
        "fields"
    ]
    assert "id" in fields
    assert_envelope(alice.get("/v1/scenarios/renamed"), 404)
    assert alice.get("/v1/scenarios/gate").json()["version"] == 1


def test_sending_the_same_id_in_an_update_is_allowed(alice):
    create(alice, BASE)
    assert alice.put("/v1/scenarios/gate", scenario(name="Same id")).status_code == 200
    assert alice.patch("/v1/scenarios/gate", {"id": "gate", "name": "Again"}).status_code == 200


# --- validation: each rule names its field ---------------------------------------------------------


@pytest.mark.parametrize("missing", ["id", "agentRef"])
def test_a_source_without_id_or_agent_ref_is_refused_naming_the_field(alice, missing):
    second = source(2, "preferences")
    del second[missing]
    body = scenario(memorySources=[source(1, "jsonMemory"), second], template="{{jsonMemory}}")
    assert f"memorySources[1].{missing}" in refused(alice, body)


def test_an_empty_agent_ref_is_refused(alice):
    body = scenario(memorySources=[source(1, "jsonMemory", agentRef="  ")], template="")
    assert "memorySources[0].agentRef" in refused(alice, body)


def test_a_duplicated_variable_is_refused(alice):
    body = scenario(memorySources=[source(1, "jsonMemory"), source(2, "jsonMemory")], template="")
    fields = refused(alice, body)
    assert "memorySources[1].variable" in fields and "twice" in fields["memorySources[1].variable"]


def test_a_duplicated_source_id_is_refused(alice):
    body = scenario(memorySources=[source(1, "jsonMemory"), source(2, "preferences", id="s1")], template="")
    assert "memorySources[1].id" in refused(alice, body)


def test_an_unknown_variable_is_refused(alice):
    assert "memorySources[0].variable" in refused(alice, scenario(memorySources=[source(1, "madeUp")], template=""))


def test_a_non_integer_priority_is_refused(alice):
    body = scenario(memorySources=[source(1, "jsonMemory", priority="high")], template="")
    assert "memorySources[0].priority" in refused(alice, body)


def test_an_unknown_runtime_is_refused(alice):
    fields = refused(alice, scenario(memoryRuntime="axon_turbo"))
    assert "memoryRuntime" in fields and "personalization" in fields["memoryRuntime"]


def test_axon_go_refuses_json_memory(alice):
    body = scenario(
        memoryRuntime="axon_go",
        memorySources=[source(1, "compassMemory"), source(2, "jsonMemory")],
        template="{{compassMemory}}",
    )
    fields = refused(alice, body)
    assert "memorySources[1].variable" in fields and "axon_go" in fields["memorySources[1].variable"]
    assert "memorySources[0].variable" not in fields


def test_axon_go_accepts_compass_memory_and_memory_table(alice):
    body = scenario(
        memoryRuntime="axon_go",
        memorySources=[source(1, "compassMemory"), source(2, "memoryTable")],
        template="{{compassMemory}}\n{{memoryTable}}\n{{userMessage}}",
    )
    assert create(alice, body)["memoryRuntime"] == "axon_go"


def test_a_placeholder_naming_an_unconfigured_variable_is_refused(alice):
    fields = refused(alice, scenario(template="{{jsonMemory}} {{compassMemory}} {{userMessage}}"))
    assert "template" in fields and "compassMemory" in fields["template"]
    assert "{{compassMemory}}" in fields["template"]
    assert "{{jsonMemory}}" not in fields["template"] and "{{userMessage}}" not in fields["template"]


def test_a_placeholder_naming_nothing_known_is_refused(alice):
    assert "template" in refused(alice, scenario(template="{{jsonMemory}} {{ whoKnows }}"))


def test_the_built_in_user_message_placeholder_is_accepted(alice):
    created = create(alice, scenario(memorySources=[], template="Only the user: {{ userMessage }}"))
    assert created["template"] == "Only the user: {{ userMessage }}"


def test_an_unknown_field_is_refused(alice):
    fields = refused(alice, scenario(memorySourcez=[]))
    assert fields.get("memorySourcez") == "unknown field"


def test_an_unknown_field_on_a_source_is_refused(alice):
    body = scenario(memorySources=[source(1, "jsonMemory", query="x")], template="")
    assert "memorySources[0].query" in refused(alice, body)


@pytest.mark.parametrize(
    ("field", "value"),
    [
        ("memoryIngest", "sometimes"),
        ("commitOn", "never"),
        ("toolUpdates", "yes"),
        ("name", ""),
        ("id", "has space"),
        ("id", ""),
        ("template", 5),
        ("memorySources", {"id": "s1"}),
        ("memorySchema", {"type": "not-a-type"}),
    ],
)
def test_a_bad_core_field_is_refused_naming_it(alice, field, value):
    assert field in refused(alice, scenario(**{field: value}))


def test_several_errors_are_reported_together(alice):
    body = scenario(memoryRuntime="nope", commitOn="later", memorySources=[{"variable": "jsonMemory"}])
    fields = refused(alice, body)
    assert {"memoryRuntime", "commitOn", "memorySources[0].id", "memorySources[0].agentRef"} <= set(fields)


def test_a_body_that_is_not_an_object_is_refused(alice):
    assert_envelope(alice.post("/v1/scenarios", [BASE]), 400, "invalid_request")
    assert_envelope(alice.client.post("/v1/scenarios", "{not json", content_type="application/json"), 400)


def test_a_registered_section_is_validated_by_its_owner_and_stored(alice):
    def validate(value):
        if not isinstance(value, dict) or not isinstance(value.get("size"), int):
            raise registry.SectionInvalid({"testSection.size": "must be an integer"})
        return {"size": value["size"], "normalized": True}

    registry.register_scenario_section("testSection", validate)
    fields = refused(alice, scenario(testSection={"size": "big"}))
    assert fields == {"testSection.size": "must be an integer"}
    created = create(alice, scenario(testSection={"size": 3}))
    assert created["testSection"] == {"size": 3, "normalized": True}
    assert alice.patch("/v1/scenarios/gate", {"name": "x"}).json()["testSection"] == {"size": 3, "normalized": True}


def test_a_source_with_a_bad_option_is_the_only_error_not_the_template_too(alice):
    """The template names the source's variable: that is right, and only the option is reported."""
    body = scenario(
        memorySources=[{"id": "past", "agentRef": "history-search", "variable": "recalledHistory", "topK": 21}],
        template="{{recalledHistory}} {{userMessage}}",
    )
    fields = refused(alice, body)
    assert list(fields) == ["memorySources[0].topK"], fields
    assert "template" in refused(alice, scenario(template="{{nowhere}} {{userMessage}}"))

"""Product-defined memory kinds through HTTP: define, admit, search, recall in a turn, limits, tenancy, delete."""

from __future__ import annotations

from datetime import datetime, timedelta

import pytest

from memories.longterm.models import AdmissionRefusal, LongTermMemory, LongTermMemoryVersion, MemoryKind
from tests.longterm.kind_support import DIET_KIND, KINDS_URL, VEGETARIAN, define, diet
from tests.longterm.support import create, memories_url, search
from tests.support.api import assert_envelope
from tests.support.turns import prepare

pytestmark = pytest.mark.django_db


def parse(value: str) -> datetime:
    return datetime.fromisoformat(value.replace("Z", "+00:00"))


# --- defining a kind ------------------------------------------------------------------------------------


def test_a_kind_is_defined_read_listed_changed_and_deleted(alice):
    kind = define(alice)
    assert {k: kind[k] for k in DIET_KIND} == DIET_KIND
    assert kind["singleValuedFields"] == ["restriction"] and kind["createdAt"].endswith("Z")
    assert alice.get(f"{KINDS_URL}/diet").json() == kind
    assert [k["name"] for k in alice.get(KINDS_URL).json()["results"]] == ["diet"]
    changed = alice.patch(f"{KINDS_URL}/diet", {"description": "Diet", "maxPerUser": None})
    assert changed.status_code == 200, changed.json()
    assert changed.json()["description"] == "Diet" and changed.json()["maxPerUser"] is None
    assert changed.json()["contentSchema"] == DIET_KIND["contentSchema"]  # a PATCH changes what it names
    assert alice.delete(f"{KINDS_URL}/diet").status_code == 204
    assert_envelope(alice.get(f"{KINDS_URL}/diet"), 404, "not_found")


INVALID = [
    ("not a schema", {"contentSchema": {"type": "nonsense"}}, "contentSchema"),
    ("not an object schema", {"contentSchema": {"type": "string"}}, "contentSchema"),
    ("remote reference", {"contentSchema": {"type": "object", "$ref": "http://example.com/s.json"}}, "contentSchema"),
    ("stated field not a property", {"statedFields": ["dish"]}, "statedFields"),
    ("text field not a property", {"textField": "dish"}, "textField"),
    ("built-in name", {"name": "preference"}, "name"),
    ("bad name", {"name": "Diet Kind"}, "name"),
    ("single-valued not boolean", {"contentSchema": {"type": "object", "properties": {"a": {"x-single-valued": 1}}}},
     "contentSchema"),
]  # fmt: skip


@pytest.mark.parametrize("changes,field", [c[1:] for c in INVALID], ids=[c[0] for c in INVALID])
def test_an_invalid_definition_is_400_naming_the_field(alice, changes, field):
    error = assert_envelope(alice.post(KINDS_URL, {**DIET_KIND, **changes}), 400)
    assert error["details"]["field"] == field or field in error["details"].get("fields", {}), error
    assert not MemoryKind.objects.exists()


def test_a_kind_name_is_unique_per_product_and_searchable_is_fixed(alice, bob):
    define(alice)
    assert_envelope(alice.post(KINDS_URL, DIET_KIND), 409, "already_exists")
    define(bob)  # another product may use the same name
    error = assert_envelope(alice.patch(f"{KINDS_URL}/diet", {"searchable": False}), 400)
    assert error["details"]["field"] == "searchable"


def test_another_products_kind_is_404_and_cannot_be_written(alice, bob):
    define(alice)
    assert_envelope(bob.get(f"{KINDS_URL}/diet"), 404, "not_found")
    assert_envelope(bob.patch(f"{KINDS_URL}/diet", {"description": "mine"}), 404, "not_found")
    assert_envelope(bob.delete(f"{KINDS_URL}/diet"), 404, "not_found")
    assert bob.get(KINDS_URL).json()["results"] == []
    error = assert_envelope(bob.post(memories_url(), diet()), 422, "rejected_by_policy")
    assert error["details"]["reason"] == "unknown_kind"
    assert MemoryKind.objects.get().description == DIET_KIND["description"]


# --- writing a memory of a product kind -----------------------------------------------------------------


def test_a_memory_of_a_product_kind_is_admitted_with_its_default_expiry(alice):
    define(alice)
    record = create(alice, diet())
    assert record["kind"] == "diet" and record["content"] == diet()["content"] and record["version"] == 1
    lifetime = parse(record["expiresAt"]) - parse(record["createdAt"])
    assert timedelta(days=30) - timedelta(seconds=5) < lifetime <= timedelta(days=30)
    version = LongTermMemoryVersion.objects.get(memory_id=record["id"])
    assert version.action == "created" and version.decision is not None


def test_stated_values_are_compared_after_width_and_case_folding(alice):
    define(alice)
    body = diet(evidence="我是ＶＥＧＡＮ", source="对了，我是ＶＥＧＡＮ。", content={"restriction": "Vegan"})
    assert create(alice, body)["content"]["restriction"] == "Vegan"


REFUSALS = [
    ("no consent", dict(consent=False), "no_consent", "/consent"),
    ("evidence not in source", dict(evidence="I am a vegan"), "evidence_not_in_source", "/evidence"),
    ("secret in source", dict(source="I am vegan. My password is hunter2abc"), "secret_detected", "/source"),
    ("schema: wrong type", dict(content={"restriction": 7}), "schema_violation", "/content/restriction"),
    ("schema: missing field", dict(content={"note": "vegan"}), "schema_violation", "/content"),
    ("schema: unknown field", dict(content={"restriction": "vegan", "dish": "x"}), "schema_violation", "/content"),
    ("not stated", dict(content={"restriction": "pescatarian"}), "not_stated", "/content/restriction"),
    ("negated", dict(evidence="I am not vegan", source="I am not vegan."), None, None),
    ("a guess", dict(evidence="I might be vegan", source="I might be vegan, not sure"), None, "/evidence"),
]


@pytest.mark.parametrize("changes,code,path", [r[1:] for r in REFUSALS], ids=[r[0] for r in REFUSALS])
def test_refusals_name_their_code_and_failing_path_and_write_nothing(alice, changes, code, path):
    define(alice)
    error = assert_envelope(alice.post(memories_url(), diet(**changes)), 422, "rejected_by_policy")
    if code:
        assert error["details"]["reason"] == code, error
    if path:
        assert error["details"]["path"] == path, error
    assert not LongTermMemory.objects.exists()
    refusal = AdmissionRefusal.objects.get()
    # details.reason names why; a not_durable_preference refusal keeps its code in details.code
    assert refusal.kind == "diet" and refusal.code == error["details"].get("code", error["details"]["reason"])


def test_max_per_user_is_enforced_with_a_code(alice):
    schema = {"type": "object", "properties": {"restriction": {"type": "string"}}}
    define(alice, contentSchema=schema, maxPerUser=2, textField="")
    for word in ("vegan", "gluten"):
        create(alice, diet(content={"restriction": word}, evidence=f"I am {word}", source=f"I am {word}."))
    error = assert_envelope(
        alice.post(
            memories_url(), diet(content={"restriction": "kosher"}, evidence="I eat kosher", source="I eat kosher")
        ),
        422,
        "max_per_user_reached",
    )
    assert error["details"] == {"kind": "diet", "maxPerUser": 2}
    create(alice, diet(content={"restriction": "kosher"}, evidence="I eat kosher", source="I eat kosher"), user="u2")


# --- search and recall ----------------------------------------------------------------------------------


def test_a_searchable_kind_is_found_by_keyword_and_by_meaning(alice):
    define(alice)
    stored = create(alice, diet())
    create(alice)  # a preference of the same user: another kind
    keyword = search(alice, "vegan", "keyword").json()["results"]
    assert [r["id"] for r in keyword] == [stored["id"]] and keyword[0]["kind"] == "diet"
    semantic = search(alice, "which food does the user avoid, meat or dairy?", "semantic").json()["results"]
    assert semantic[0]["kind"] == "diet"


def test_a_kind_that_is_not_searchable_is_stored_but_never_found(alice):
    define(alice, searchable=False)
    record = create(alice, diet())
    row = LongTermMemory.objects.get(memory_id=record["id"])
    assert row.embedding is None
    assert search(alice, "vegan", "keyword").json()["results"] == []
    assert search(alice, "vegan food", "semantic").json()["results"] == []


def scenario(api, kinds: list[str], *, in_section: bool = False) -> dict:
    """A `preferences` source naming the kinds it recalls (or, with in_section, the scenario section naming them)."""
    source = {"id": "memories", "agentRef": "longterm", "variable": "preferences"}
    body = {
        "id": "cook",
        "name": "Cook",
        "memorySources": [source if in_section else {**source, "kinds": kinds}],
        "template": "Known about the user:\n{{preferences}}\nUser: {{userMessage}}",
        **({"preferences": {"kinds": kinds}} if in_section else {}),
    }
    response = api.post("/v1/scenarios", body)
    assert response.status_code == 201, response.json()
    return response.json()


def test_write_search_recall_in_a_turn_for_a_product_kind(alice):
    define(alice)
    scenario(alice, ["preference", "diet"])
    record = create(alice, diet())
    preference = create(alice)
    turn = prepare(alice, "cook", "What should I cook tonight?")
    assert "- diet: The user is vegan: no meat, fish, eggs or dairy" in turn["prompt"]
    assert "language: zh; detail: brief" in turn["prompt"]
    used = turn["sources"][0]["details"]["memories"]
    assert {"id": record["id"], "version": 1, "kind": "diet"} in used
    assert {"id": preference["id"], "version": 1} in used


def test_a_source_names_its_kinds_and_the_scenario_keeps_them(alice):
    define(alice)
    stored = scenario(alice, ["diet"])
    assert stored["memorySources"][0]["kinds"] == ["diet"]
    assert alice.get("/v1/scenarios/cook").json()["memorySources"][0]["kinds"] == ["diet"]
    record = create(alice, diet())
    create(alice)  # a preference: not named by the source
    turn = prepare(alice, "cook", "What should I cook tonight?")
    assert "- diet: The user is vegan" in turn["prompt"] and "language: zh" not in turn["prompt"]
    assert turn["sources"][0]["details"]["memories"] == [{"id": record["id"], "version": 1, "kind": "diet"}]


def test_the_scenario_section_may_name_the_kinds_too(alice):
    define(alice)
    scenario(alice, ["diet"], in_section=True)
    create(alice, diet())
    assert "- diet: The user is vegan" in prepare(alice, "cook", "What should I cook tonight?")["prompt"]


@pytest.mark.parametrize(
    "source_fields,field",
    [
        ({"kinds": ["Diet!"]}, "memorySources[0].kinds"),
        ({"kinds": []}, "memorySources[0].kinds"),
        ({"kinds": "diet"}, "memorySources[0].kinds"),
        ({"colour": "red"}, "memorySources[0].colour"),
    ],
)
def test_a_scenario_names_only_valid_kind_lists(alice, source_fields, field):
    source = {"id": "m", "agentRef": "longterm", "variable": "preferences", **source_fields}
    error = assert_envelope(alice.post("/v1/scenarios", {"id": "s", "name": "S", "memorySources": [source]}), 400)
    assert field in error["details"]["fields"], error
    error = assert_envelope(alice.post("/v1/scenarios", {"id": "s", "name": "S", "preferences": {"kinds": ["X"]}}), 400)
    assert "preferences.kinds" in error["details"]["fields"]


def test_other_variables_accept_no_extra_source_fields(alice):
    source = {"id": "doc", "agentRef": "json-memory", "variable": "jsonMemory", "kinds": ["diet"]}
    error = assert_envelope(alice.post("/v1/scenarios", {"id": "s", "name": "S", "memorySources": [source]}), 400)
    assert error["details"]["fields"]["memorySources[0].kinds"] == "unknown field"


def test_a_kind_change_reaches_the_next_turn(alice):
    define(alice)
    scenario(alice, ["diet"])
    create(alice, diet())
    assert "- diet: The user is vegan" in prepare(alice, "cook", "What should I cook tonight?")["prompt"]
    assert alice.patch(f"{KINDS_URL}/diet", {"textField": "restriction"}).status_code == 200
    assert "- diet: vegan\n" in prepare(alice, "cook", "What should I cook tonight?")["prompt"]


# --- deleting a kind ------------------------------------------------------------------------------------


def test_deleting_a_kind_in_use_is_409_unless_cascade(alice):
    define(alice)
    scenario(alice, ["diet"])
    record = create(alice, diet())
    prepare(alice, "cook", "What should I cook tonight?")  # the snapshot is cached
    error = assert_envelope(alice.delete(f"{KINDS_URL}/diet"), 409, "kind_in_use")
    assert error["details"] == {"memories": 1}
    assert_envelope(alice.delete(f"{KINDS_URL}/diet?cascade=maybe"), 400)
    assert alice.delete(f"{KINDS_URL}/diet?cascade=true").status_code == 204
    assert not LongTermMemory.objects.exists()
    assert not LongTermMemoryVersion.objects.filter(memory_id=record["id"]).exists()
    turn = prepare(alice, "cook", "What should I cook tonight?")
    assert "vegan" not in turn["prompt"] and turn["sources"][0]["status"] == "empty"
    define(alice)  # defined again: the old memories do not come back from the cache
    assert "vegan" not in prepare(alice, "cook", "What should I cook tonight?")["prompt"]


def test_a_contraction_states_its_value(alice):
    define(alice)
    assert create(alice, VEGETARIAN)["content"]["restriction"] == "vegetarian"  # "I'm vegetarian now"


# --- contract -------------------------------------------------------------------------------------------


def test_openapi_documents_the_kind_endpoints_and_the_new_fields(alice):
    schema = alice.get("/api/schema/", HTTP_ACCEPT="application/json").json()
    paths = schema["paths"]
    assert {"get", "post"} <= set(paths["/v1/memory-kinds"])
    assert {"get", "patch", "delete"} <= set(paths["/v1/memory-kinds/{name}"])
    assert any(p["name"] == "cascade" for p in paths["/v1/memory-kinds/{name}"]["delete"]["parameters"])
    assert any(p["name"] == "include" for p in paths["/v1/users/{user_id}/memories"]["get"]["parameters"])
    memory = schema["components"]["schemas"]["Memory"]["properties"]
    assert {"expiresAt", "supersededBy", "supersededAt"} <= set(memory)
    assert "contentSchema" in schema["components"]["schemas"]["KindCreateRequest"]["properties"]

"""User-supplied JSON Schemas run in bounded time: RE2 for every regex keyword, local non-looping $refs only.

A scenario's memorySchema, a product's memory_schema (admin) and a kind's contentSchema are checked by one
rule set (memories.schemas) when saved; the writes under them (PUT, update_memory, long-term memories) never
hand a pattern to Python's backtracking `re`.
"""

from __future__ import annotations

import time

import pytest
from django.urls import reverse

from memories.longterm.models import LongTermMemory, MemoryKind
from memories.models import Product, Scenario
from tests.longterm.kind_support import DIET_KIND, KINDS_URL, define, diet
from tests.longterm.support import memories_url
from tests.memories.test_admin_documents import INLINE_MANAGEMENT
from tests.memories.test_tools_api import CONV, call, make_scenario, mint
from tests.support.api import assert_envelope
from tests.support.scenarios import refused, scenario

pytestmark = pytest.mark.django_db

EVIL = "^(a+)+$"
# Python's re needs ~2^27 steps to refuse this (seconds); RE2 answers in microseconds.
EVIL_VALUE = "a" * 27 + "!"
FAST = 1.5  # seconds: generous for a shared machine, far below what backtracking takes


def _object(**properties) -> dict:
    return {"type": "object", "properties": properties}


def _tool_write(api, schema: dict, memory: dict):
    make_scenario(api, "strict", memorySchema=schema)
    token = mint(api, scenarioId="strict")["token"]
    started = time.monotonic()
    response = call(token, "update_memory", {"expectedRevision": 0, "memory": memory})
    return response, time.monotonic() - started


# --- ReDoS through a model's update_memory ----------------------------------------------------------------


@pytest.mark.parametrize(
    "schema,memory,status",
    [
        (_object(scene={"type": "string", "pattern": EVIL}), {"scene": EVIL_VALUE}, 422),
        # the key matches no pattern, so its (integer) subschema does not apply: stored
        ({"type": "object", "patternProperties": {EVIL: {"type": "integer"}}}, {EVIL_VALUE: "x"}, 200),
        ({"type": "object", "patternProperties": {EVIL: {}}, "additionalProperties": False}, {EVIL_VALUE: 1}, 422),
        ({"type": "object", "propertyNames": {"pattern": EVIL}}, {EVIL_VALUE: 1}, 422),
    ],
    ids=["pattern", "patternProperties", "additionalProperties", "propertyNames"],
)
def test_a_catastrophic_pattern_is_judged_in_linear_time(alice, schema, memory, status):
    response, elapsed = _tool_write(alice, schema, memory)
    assert elapsed < FAST, f"{elapsed:.1f}s: the pattern backtracked"
    assert response.status_code == status, response.json()
    if status == 422:
        assert_envelope(response, 422, "rejected_by_policy")
        assert alice.get(f"{CONV}/memory").json()["revision"] == 0


def test_a_matching_value_still_passes_the_pattern(alice):
    response, _ = _tool_write(alice, _object(scene={"type": "string", "pattern": "^[a-z]+$"}), {"scene": "gate"})
    assert response.status_code == 200, response.json()


def test_patterns_speak_re2_unicode_classes_are_written_with_p(alice):
    # As in JSON Schema (ECMA-262), \w, \d and \s are ASCII; \p{…} names a script or a category.
    response, _ = _tool_write(alice, _object(scene={"type": "string", "pattern": "^\\p{Han}+$"}), {"scene": "城门"})
    assert response.status_code == 200, response.json()
    token = mint(alice, scenarioId="strict")["token"]
    refused = call(token, "update_memory", {"expectedRevision": 1, "memory": {"scene": "gate"}})
    assert "does not match" in assert_envelope(refused, 422, "rejected_by_policy")["message"]


def test_a_value_too_long_to_match_fails_the_pattern_and_names_its_path(alice):
    memory = {"scene": "a" * 10_001}
    response, _ = _tool_write(alice, _object(scene={"type": "string", "pattern": "^a+$"}), memory)
    error = assert_envelope(response, 422, "rejected_by_policy")
    assert error["details"]["path"] == "/scene" and "longer than 10000 characters" in error["message"]


def test_patterns_that_would_cost_too_much_on_a_value_are_refused(alice):
    # (.*a){300} is a 3,304-instruction RE2 program: six 9,800-character strings would take over a second.
    schema = {"type": "object", "additionalProperties": {"type": "string", "pattern": "(.*a){300}"}}
    memory = {str(i): "ab" * 4_900 for i in range(6)}
    response, elapsed = _tool_write(alice, schema, memory)
    error = assert_envelope(response, 422, "rejected_by_policy")
    assert "take too long" in error["message"] and elapsed < FAST


def test_anyof_over_nested_values_stops_at_the_step_budget(alice):
    # Each level fails its first branch deep down and retries the second: 2^depth evaluations without a budget.
    schema = {
        "type": "object",
        "properties": {
            "tree": {"$ref": "#/$defs/node"},
        },
        "$defs": {
            "node": {
                "anyOf": [
                    {"type": "array", "items": {"$ref": "#/$defs/node"}, "maxItems": 0},
                    {"type": "array", "items": {"$ref": "#/$defs/node"}},
                    {"type": "integer"},
                ]
            }
        },
    }
    tree: object = "leaf"
    for _ in range(24):
        tree = [tree]
    response, elapsed = _tool_write(alice, schema, {"tree": tree})
    error = assert_envelope(response, 422, "rejected_by_policy")
    assert "would take more than" in error["message"] and elapsed < 30  # 100,000 steps or 2 s, whichever first


# --- refused when saved ------------------------------------------------------------------------------------


UNRUNNABLE = [
    ("backreference", _object(a={"pattern": "(a)\\1"}), "/properties/a/pattern"),
    ("lookahead", _object(a={"pattern": "^(?!x)"}), "/properties/a/pattern"),
    ("patternProperties lookbehind", {"patternProperties": {"(?<=a)b": {}}}, "/patternProperties/(?<=a)b"),
    ("too long", _object(a={"pattern": "a" * 1001}), "/properties/a/pattern"),
    ("too large a program", _object(a={"pattern": "(\\w+\\s?){1,1000}"}), "/properties/a/pattern"),
    ("inside a $ref target", {"x": {"pattern": "(?=a)"}, "$ref": "#/x"}, "/x/pattern"),
    ("looping $ref", {"$ref": "#"}, "/"),
    ("looping $defs", {"$defs": {"a": {"allOf": [{"$ref": "#/$defs/a"}]}}, "$ref": "#/$defs/a"}, "/$defs/a"),
    ("remote $ref", {"$ref": "https://example.com/s.json"}, "/$ref"),
    ("unresolvable $ref", {"$ref": "#/$defs/missing"}, "/$ref"),
    ("$ref to a non-schema", {"$ref": "#/type", "type": "object"}, "/$ref"),
    ("another dialect", _object(a={"$schema": "http://json-schema.org/draft-07/schema#"}), "/properties/a/$schema"),
    ("$dynamicRef", {"$dynamicRef": "#meta"}, "/$dynamicRef"),
    ("unevaluatedProperties with patternProperties", {"patternProperties": {"a": {}}, "unevaluatedProperties": False},
     "/"),
]  # fmt: skip


@pytest.mark.parametrize("schema,path", [c[1:] for c in UNRUNNABLE], ids=[c[0] for c in UNRUNNABLE])
def test_a_scenario_schema_it_cannot_run_is_400_naming_the_path(alice, schema, path):
    fields = refused(alice, scenario(memorySchema=schema))
    assert f"(at {path})" in fields["memorySchema"], fields


@pytest.mark.parametrize("schema,path", [c[1:] for c in UNRUNNABLE], ids=[c[0] for c in UNRUNNABLE])
def test_a_kind_schema_it_cannot_run_is_400_naming_the_path(alice, schema, path):
    body = {**DIET_KIND, "contentSchema": {"type": "object", **schema}, "statedFields": [], "textField": ""}
    error = assert_envelope(alice.post(KINDS_URL, body), 400, "invalid_request")
    assert error["details"]["field"] == "contentSchema" and f"(at {path})" in error["message"], error
    assert not MemoryKind.objects.exists()


def test_a_recursive_schema_that_descends_into_the_value_is_accepted(alice):
    tree = {"type": "object", "properties": {"children": {"type": "array", "items": {"$ref": "#"}}}}
    make_scenario(alice, "tree", memorySchema=tree)
    token = mint(alice, scenarioId="tree")["token"]
    ok = call(token, "update_memory", {"expectedRevision": 0, "memory": {"children": [{"children": []}]}})
    assert ok.status_code == 200, ok.json()


def test_the_admin_refuses_a_product_schema_it_cannot_run(admin_client, db):
    data = {"name": "Loop", "memory_schema": '{"$ref": "#"}', **INLINE_MANAGEMENT}
    response = admin_client.post(reverse("admin:memories_product_add"), data)
    assert response.status_code == 200
    assert "loops back" in str(response.context["adminform"].form.errors["memory_schema"])
    assert not Product.objects.filter(name="Loop").exists()


# --- a schema stored before these rules -------------------------------------------------------------------


@pytest.mark.parametrize(
    "schema",
    [
        {"$ref": "#"},
        _object(scene={"pattern": "(?=a)"}),
        {"$ref": "https://example.com/s.json"},
        {"type": "object", "$ref": "#/type"},
    ],
    ids=["looping", "lookahead", "remote", "non-schema"],
)
def test_a_write_under_a_stored_schema_it_cannot_run_is_422_not_500(alice, schema):
    make_scenario(alice, "old")
    Scenario.objects.filter(product=alice.product, slug="old").update(memory_schema=schema)  # saved before the fix
    token = mint(alice, scenarioId="old")["token"]
    response = call(token, "update_memory", {"expectedRevision": 0, "memory": {"scene": "gate"}})
    error = assert_envelope(response, 422, "rejected_by_policy")
    assert "cannot be checked" in error["message"]
    assert alice.get(f"{CONV}/memory").json()["revision"] == 0


# --- long-term memories of a product kind ---------------------------------------------------------------


def test_a_kind_pattern_runs_in_linear_time(alice):
    schema = {**DIET_KIND["contentSchema"]}
    schema["properties"] = {**schema["properties"], "restriction": {"type": "string", "pattern": EVIL}}
    define(alice, contentSchema=schema)
    started = time.monotonic()
    said = f"I am {EVIL_VALUE}"
    response = alice.post(memories_url(), diet(content={"restriction": EVIL_VALUE}, evidence=said, source=said))
    assert time.monotonic() - started < FAST
    error = assert_envelope(response, 422, "rejected_by_policy")
    assert error["details"]["path"] == "/content/restriction", error
    assert not LongTermMemory.objects.exists()

"""The turn pipeline's one registry: what the apps register, reset(), and the runtime/agentRef lists derived from it."""

from __future__ import annotations

from pathlib import Path

import pytest
from django.core.exceptions import ValidationError

from memories.admin.turns import ScenarioForm
from memories.api.serializers.turns import ScenarioSerializer
from memories.models import Scenario
from memoryhub.runtimes import registry
from memoryhub.runtimes.base import Recall, RecallRequest, SourceResult, TurnContext
from memoryhub.runtimes.common import LocalRuntime, recall_all
from memoryhub.runtimes.rendering import render_template, template_placeholders
from tests.support.api import assert_envelope

BUILT_IN_RUNTIMES = ["personalization", "axon_go", "axon_shadow", "hinos"]
ECHO_SOURCE = {"id": "echo", "agentRef": "echo-agent", "variable": "echoMemory"}


class EchoRuntime(LocalRuntime):
    """A runtime a test registers: it accepts only echoMemory."""

    name = "echo"
    allowed_variables = frozenset({"echoMemory"})

    def recall(self, context: TurnContext) -> Recall:
        variables, statuses = recall_all(context, context.sources, with_query=True)
        return Recall(variables=variables, sources=statuses)


def produce_echo(request: RecallRequest) -> SourceResult:
    return SourceResult(text=f"echo of {request.user_message}", status="ok")


def register_echo() -> None:
    registry.register_runtime("echo", EchoRuntime)
    registry.register_source(
        "echoMemory", description="the user's message, echoed", producer=produce_echo, agent_refs=["echo-agent"]
    )


def echo_scenario(slug: str = "echo", **overrides) -> dict:
    return {
        "id": slug,
        "name": "Echo",
        "memoryRuntime": "echo",
        "memorySources": [ECHO_SOURCE],
        "template": "{{echoMemory}} / {{userMessage}}",
        **overrides,
    }


def refused_fields(api, body: dict) -> dict:
    return assert_envelope(api.post("/v1/scenarios", body), 400, "invalid_request")["details"]["fields"]


def model_accepts(runtime: str) -> bool:
    try:
        Scenario._meta.get_field("memory_runtime").clean(runtime, None)
    except ValidationError:
        return False
    return True


def schema_runtimes(client) -> list[str]:
    schemas = client.get("/api/schema/", HTTP_ACCEPT="application/vnd.oai.openapi+json").json()["components"]["schemas"]
    reference = schemas["Scenario"]["properties"]["memoryRuntime"]["$ref"]  # an enum component, as before
    return schemas[reference.rsplit("/", 1)[1]]["enum"]


def registered() -> dict:
    return {
        "runtimes": registry.runtime_names(),
        "producers": {v: registry.get_producer(v) for v in registry.variable_names()},
        "hooks": dict.fromkeys(registry.commit_hook_names()),
        "sections": registry.scenario_section_names(),
    }


# --- what the apps register -----------------------------------------------------------------------------


def test_memoryhub_and_the_apps_register_their_runtimes_sources_hooks_and_sections():
    assert registry.runtime_names() == BUILT_IN_RUNTIMES
    variables = {"jsonMemory", "preferences", "hinosMemory", "compassMemory", "memoryTable"}
    variables |= {"conversationState", "story"}  # memories.state, memories.story
    variables |= {"history"}  # memories.compact
    variables |= {"recalledHistory"}  # memories.history (the history-search source)
    assert set(registry.variable_names()) == variables
    assert registry.get_producer("hinosMemory") is None  # the Hinos runtime fills it itself
    assert all(registry.get_producer(v) for v in ("jsonMemory", "preferences", "compassMemory", "memoryTable"))
    assert set(registry.commit_hook_names()) == {"memories.turn_committed_audit", "diaries", "tables", "compact"}
    sections = ["compact", "diary", "hinos", "preferences", "state", "tableWebhook", "tables"]
    assert registry.scenario_section_names() == sections
    assert registry.get_runtime("hinos") is registry.get_runtime("hinos")  # one instance per name


def test_reset_restores_what_the_apps_registered():
    before = registered()
    register_echo()
    registry.register_commit_hook("probe", lambda pk: True)
    registry.register_scenario_section("probe", lambda value: value)
    registry.unregister_commit_hook("tables")
    registry.set_producer("jsonMemory", None)
    assert registered() != before

    registry.reset()

    assert registered() == before
    with pytest.raises(KeyError):
        registry.get_runtime("echo")


# --- runtime choices come from the registry -----------------------------------------------------------------


def test_an_unknown_runtime_is_refused_naming_the_field_and_the_registered_runtimes(alice):
    fields = refused_fields(alice, echo_scenario())
    assert fields["memoryRuntime"] == f"unknown runtime; one of: {', '.join(BUILT_IN_RUNTIMES)}"
    assert fields["memorySources[0].variable"].startswith("unknown variable; one of: ")


def test_a_registered_runtime_is_valid_in_the_api_model_serializer_admin_and_schema_until_reset(alice, client):
    register_echo()
    created = alice.post("/v1/scenarios", echo_scenario())
    assert created.status_code == 201, created.json()
    assert created.json()["memoryRuntime"] == "echo"
    turn = alice.post("/v1/users/u1/conversations/c1/turns", {"scenarioId": "echo", "userMessage": "hi"}).json()
    assert (turn["runtime"], turn["prompt"]) == ("echo", "echo of hi / hi")
    assert "echo" in ScenarioSerializer().fields["memoryRuntime"].choices
    assert model_accepts("echo") and ("echo", "echo") in ScenarioForm().fields["memory_runtime"].choices
    assert schema_runtimes(client) == [*BUILT_IN_RUNTIMES, "echo"]

    registry.reset()

    assert "memoryRuntime" in refused_fields(alice, echo_scenario("echo-2"))
    assert list(ScenarioSerializer().fields["memoryRuntime"].choices) == BUILT_IN_RUNTIMES
    assert not model_accepts("echo") and model_accepts("hinos")
    assert [value for value, _ in ScenarioForm().fields["memory_runtime"].choices] == BUILT_IN_RUNTIMES
    assert schema_runtimes(client) == BUILT_IN_RUNTIMES


def test_a_source_registered_with_agent_refs_accepts_only_those(alice):
    register_echo()
    source = {**ECHO_SOURCE, "agentRef": "someone-else"}
    fields = refused_fields(alice, echo_scenario(memorySources=[source]))
    assert fields["memorySources[0].agentRef"] == "unknown agentRef for echoMemory; one of: echo-agent"
    assert alice.post("/v1/scenarios", echo_scenario()).status_code == 201


@pytest.mark.parametrize(
    ("variable", "agent_ref"),
    [
        ("jsonMemory", "json-memory"),
        ("memoryTable", "table-agent"),
        ("hinosMemory", "hinos"),
        ("preferences", "longterm"),
        ("conversationState", "state"),
        ("history", "history"),
        ("story", "story"),
    ],
)
def test_every_source_accepts_only_its_registered_agent_ref(alice, variable, agent_ref):
    assert registry.get_source(variable).agent_refs == frozenset([agent_ref])
    runtime = "hinos" if variable == "hinosMemory" else "personalization"
    scenario = {"id": "gate", "name": "Gate", "template": f"{{{{{variable}}}}}", "memoryRuntime": runtime}
    source = {"id": "s1", "variable": variable}
    fields = refused_fields(alice, {**scenario, "memorySources": [{**source, "agentRef": "no-such-agent"}]})
    assert fields["memorySources[0].agentRef"] == f"unknown agentRef for {variable}; one of: {agent_ref}"
    accepted = alice.post("/v1/scenarios", {**scenario, "memorySources": [{**source, "agentRef": agent_ref}]})
    assert accepted.status_code == 201, accepted.json()


def test_every_registered_source_declares_its_agent_refs():
    with pytest.raises(ValueError, match="names no agentRef"):
        registry.register_source("emptyMemory", description="none", agent_refs=[])
    named = [v for v in registry.variable_names() if registry.get_source(v).agent_refs is None]
    assert named == ["compassMemory"]


def test_the_readme_names_each_sources_agent_ref():
    readme = (Path(__file__).resolve().parents[2] / "README.md").read_text(encoding="utf-8")
    table = readme[readme.index("| kind | variable (agentRef) |") :].split("\n\n")[0]
    for variable in registry.variable_names():
        refs = registry.get_source(variable).agent_refs
        row = next((line for line in table.splitlines() if f"| `{variable}` (" in line), None)
        assert row is not None, variable
        assert all(f"`{ref}`" in row for ref in refs or ()), (variable, row)
        assert refs or "the diary's name" in row


def test_a_diary_source_names_its_diary_with_an_identifier(alice):
    base = {"id": "gate", "name": "Gate", "template": "{{compassMemory}}"}
    bad = {**base, "memorySources": [{"id": "s1", "agentRef": "a diary!", "variable": "compassMemory"}]}
    assert "names its agent" in refused_fields(alice, bad)["memorySources[0].agentRef"]
    good = {**base, "memorySources": [{"id": "s1", "agentRef": "diary-main", "variable": "compassMemory"}]}
    assert alice.post("/v1/scenarios", good).status_code == 201


# --- rendering -------------------------------------------------------------------------------------------


def test_placeholders_are_listed_once_in_order_of_first_use():
    assert template_placeholders("{{b}} {{ a }} {{b}} {{not a placeholder") == ["b", "a"]


def test_rendering_substitutes_in_one_pass_and_blanks_unknown_placeholders():
    rendered = render_template("{{a}} | {{ b }} | {{c}}", {"a": "{{b}}", "b": "B"}, max_chars=100)
    assert rendered == "{{b}} | B | "  # recalled text is never re-interpreted as a template

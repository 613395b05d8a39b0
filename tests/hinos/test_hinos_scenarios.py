"""A hinos scenario (H1): the runtime's own rule on its sources, through the scenario API."""

from __future__ import annotations

from tests.support.scenarios import create, refused, scenario, source


def test_hinos_without_a_hinos_memory_source_is_refused(alice):
    body = scenario(memoryRuntime="hinos", memorySources=[source(1, "jsonMemory")], template="{{jsonMemory}}")
    assert "memorySources" in refused(alice, body)


def test_hinos_with_two_hinos_memory_sources_is_refused(alice):
    body = scenario(
        memoryRuntime="hinos",
        memorySources=[source(1, "hinosMemory"), source(2, "hinosMemory")],
        template="{{hinosMemory}}",
    )
    fields = refused(alice, body)
    assert "memorySources" in fields and "exactly one" in fields["memorySources"]


def test_hinos_with_exactly_one_hinos_memory_source_is_accepted(alice):
    body = scenario(
        memoryRuntime="hinos", memorySources=[source(1, "hinosMemory")], template="{{hinosMemory}}\n{{userMessage}}"
    )
    assert create(alice, body)["memoryRuntime"] == "hinos"


def test_hinos_memory_under_personalization_is_refused(alice):
    body = scenario(memorySources=[source(1, "hinosMemory")], template="{{hinosMemory}}")
    fields = refused(alice, body)
    assert "memorySources[0].variable" in fields and "personalization" in fields["memorySources[0].variable"]

"""A variable names the runtimes that accept it when it is registered (registry.register_source(runtimes=…))."""

from __future__ import annotations

from memoryhub.runtimes import registry
from memoryhub.runtimes.base import SourceConfig


def errors(runtime: str, variable: str) -> dict[str, str]:
    return registry.get_runtime(runtime).validate_sources([SourceConfig("s", "ref", variable)])


def test_the_apps_variables_are_accepted_by_the_runtimes_they_name():
    assert registry.runtime_variables("personalization") >= {"conversationState", "story"}
    assert "conversationState" in registry.runtime_variables("axon_shadow")
    assert "story" not in registry.runtime_variables("axon_shadow")
    assert errors("personalization", "story") == {}
    assert errors("axon_shadow", "conversationState") == {}
    assert "memorySources[0].variable" in errors("axon_go", "conversationState")
    assert "memorySources[0].variable" in errors("axon_shadow", "story")


def test_a_registration_adds_to_the_built_in_set_and_reset_removes_it():
    registry.register_source("probeMemory", description="a probe", agent_refs=["probe"], runtimes=["axon_go"])
    assert errors("axon_go", "probeMemory") == {}
    assert errors("axon_go", "memoryTable") == {}  # the built-in set is kept
    assert "memorySources[0].variable" in errors("personalization", "probeMemory")
    registry.reset()
    assert "probeMemory" not in registry.runtime_variables("axon_go")
    assert "memorySources[0].variable" in errors("axon_go", "probeMemory")

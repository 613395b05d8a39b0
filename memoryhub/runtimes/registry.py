"""The turn pipeline's one registry: runtimes, sources (variables and their producers), commit hooks, scenario sections.

memoryhub imports no app. It registers its own runtimes (personalization, axon_go, axon_shadow) below; every
app registers what it owns from its `AppConfig.ready`: memories (jsonMemory, the audit hook), longterm
(preferences), hinos (the hinos runtime, hinosMemory, the "hinos" section), diaries (compassMemory, the "diary"
section and hook) and tables (memoryTable, the "tables"/"tableWebhook" sections and hook). Every list of runtime
names, variables and agentRefs — scenario validation, the Scenario model and admin form, the API serializer —
is read from here, so a runtime or variable exists exactly when it is registered.

Tests: what the apps registered while Django loaded them is the baseline. It is snapshotted on the first use of
the registry once `django.apps.apps.ready` is true (always before any later change, since changes go through
the same accessor), and `reset()` restores it, undoing whatever a test registered, replaced or removed;
tests/conftest.py calls it after every test.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass, field, replace
from typing import Literal

from django.apps import apps
from django.db import transaction
from django.utils.module_loading import import_string

from memoryhub.working_set import Scope

from .base import Producer, RecallRequest, Runtime, SourceConfig

DEFAULT_RUNTIME = "personalization"
# Placeholders a template may use without a source: the turn service fills them in.
BUILTIN_VARIABLES: dict[str, str] = {"userMessage": "the current user message"}

# Receives the committed turn's primary key; returns True when it scheduled memory work for the turn.
CommitHook = Callable[[int], bool]
# Receives (superseded turn pk, the turn superseding it (None for a delete)), inside the transaction that supersedes
# it; returns what it undid (a small JSON report, e.g. {"status": "rolled_back", …}) or None when it had nothing.
SupersedeHook = Callable[[int, "int | None"], "dict | None"]
# Receives (the turn made current again by a select, the turn it superseded); returns a report or None.
ReapplyHook = Callable[[int, "int | None"], "dict | None"]
# Returns the normalized section value or raises SectionInvalid.
SectionValidator = Callable[[object], object]
# Receives a source's fields besides id/agentRef/variable/priority; returns them normalized or raises
# SectionInvalid keyed by field name (e.g. {"kinds": "…"}).
SourceOptionsValidator = Callable[[dict], dict]
# The working-set entries a producer will read, so a turn can fetch all of them in one round trip.
ScopesFor = Callable[[RecallRequest], list[Scope]]
# A runtime class (or any zero-argument factory), or its dotted path when importing it here would be a cycle.
RuntimeFactory = Callable[[], Runtime]


class SectionInvalid(Exception):
    """A scenario section failed validation; `errors` maps field paths (e.g. "diary.minRounds") to messages."""

    def __init__(self, errors: dict[str, str]):
        super().__init__("; ".join(f"{k}: {v}" for k, v in errors.items()))
        self.errors = errors


@dataclass(frozen=True)
class Source:
    """A variable a scenario source may name, and what produces its text."""

    variable: str
    description: str
    # None: nothing produces it here (a runtime fills it, e.g. hinosMemory); a turn reports it "unavailable".
    producer: Producer | None = None
    scopes: ScopesFor | None = None
    # The agentRefs a source of this variable may name; None (NAMED): the agentRef names one of the app's own
    # agents (a diary per agentRef), any identifier.
    agent_refs: frozenset[str] | None = None
    # The runtimes that accept this variable besides their built-in ones (see runtime_variables).
    runtimes: frozenset[str] = frozenset()
    # Validates the fields a source of this variable may carry besides the common ones; None: no others.
    options: SourceOptionsValidator | None = None
    # Suffixes of the further variables a source fills besides its own (`{variable}{part}`, e.g. a lorebook's
    # worldInfoBefore): its producer returns their texts in SourceResult.parts.
    parts: tuple[str, ...] = ()


@dataclass
class _Registrations:
    runtimes: dict[str, str | RuntimeFactory] = field(default_factory=dict)
    sources: dict[str, Source] = field(default_factory=dict)
    commit_hooks: dict[str, CommitHook] = field(default_factory=dict)
    sections: dict[str, SectionValidator] = field(default_factory=dict)
    supersede_hooks: dict[str, SupersedeHook] = field(default_factory=dict)
    reapply_hooks: dict[str, ReapplyHook] = field(default_factory=dict)
    # Sources named by their agentRef, whose variable is the scenario's choice (e.g. "lorebook").
    agent_sources: dict[str, Source] = field(default_factory=dict)

    def copy(self) -> _Registrations:
        return _Registrations(
            dict(self.runtimes),
            dict(self.sources),
            dict(self.commit_hooks),
            dict(self.sections),
            dict(self.supersede_hooks),
            dict(self.reapply_hooks),
            dict(self.agent_sources),
        )


_live = _Registrations(
    runtimes={
        # Dotted paths: these modules import the registry (through runtimes.common), so they are imported on first use.
        "personalization": "memoryhub.runtimes.personalization.PersonalizationRuntime",
        "axon_go": "memoryhub.runtimes.axon.AxonGoRuntime",
        "axon_shadow": "memoryhub.runtimes.axon.AxonShadowRuntime",
    }
)
_baseline: _Registrations | None = None
_instances: dict[str, Runtime] = {}


def _current() -> _Registrations:
    """Every read and write comes through here, so the baseline is taken before anything changes after loading."""
    global _baseline
    if _baseline is None and apps.ready:
        _baseline = _live.copy()
    return _live


def reset() -> None:
    """Restore the registrations made while Django loaded the apps (for tests)."""
    global _live
    _current()
    if _baseline is None:
        raise RuntimeError("the registry has no baseline before the apps are loaded")
    _live = _baseline.copy()
    _instances.clear()


# --- runtimes -------------------------------------------------------------------------------------------------


def register_runtime(name: str, runtime: str | RuntimeFactory) -> None:
    _current().runtimes[name] = runtime
    _instances.pop(name, None)


def runtime_names() -> list[str]:
    """Registered runtime names, in registration order (memoryhub's own first)."""
    return list(_current().runtimes)


def runtime_choices() -> list[tuple[str, str]]:
    """`choices` for the Scenario model and the admin form."""
    return [(name, name) for name in runtime_names()]


def get_runtime(name: str) -> Runtime:
    """The runtime registered under `name` (one instance per name); KeyError when none is."""
    if name not in _instances:
        factory = _current().runtimes[name]
        _instances[name] = (import_string(factory) if isinstance(factory, str) else factory)()
    return _instances[name]


# --- sources --------------------------------------------------------------------------------------------------


# `agent_refs=NAMED`: the source's agentRef is a name the app keys its data by (diaries), not a fixed choice.
NAMED = "named"


def register_source(
    variable: str,
    *,
    description: str,
    agent_refs: Iterable[str] | Literal["named"],
    producer: Producer | None = None,
    scopes: ScopesFor | None = None,
    runtimes: Iterable[str] = (),
    options: SourceOptionsValidator | None = None,
) -> None:
    """Declare a variable scenario sources may name, with its producer, working-set scopes and agentRefs.

    `runtimes`: the runtimes that accept the variable (an app adds its variable to a runtime here instead of
    editing the runtime's built-in set). `options`: validates the fields a source of this variable may carry
    besides id/agentRef/variable/priority (they reach the producer as `SourceConfig.options`).
    """
    refs = None if agent_refs == NAMED else frozenset(agent_refs)
    if refs is not None and not refs:
        raise ValueError(f"{variable}: agent_refs names no agentRef (pass the choices, or NAMED)")
    _current().sources[variable] = Source(variable, description, producer, scopes, refs, frozenset(runtimes), options)


def set_producer(variable: str, producer: Producer | None) -> None:
    """Install (or, with None, remove) the producer of a registered variable, keeping its scopes and agentRefs."""
    sources = _current().sources
    sources[variable] = replace(sources[variable], producer=producer)


def variable_names() -> list[str]:
    """Variables a scenario source may name, in registration order."""
    return list(_current().sources)


def runtime_variables(runtime: str) -> frozenset[str]:
    """The registered variables that name `runtime` among the runtimes accepting them."""
    return frozenset(source.variable for source in _current().sources.values() if runtime in source.runtimes)


def get_source(variable: str) -> Source | None:
    return _current().sources.get(variable)


def get_producer(variable: str) -> Producer | None:
    source = get_source(variable)
    return source.producer if source else None


def register_agent_source(
    agent_ref: str,
    *,
    description: str,
    producer: Producer,
    scopes: ScopesFor | None = None,
    runtimes: Iterable[str] = (),
    options: SourceOptionsValidator | None = None,
    parts: tuple[str, ...] = (),
) -> None:
    """Declare a source named by its agentRef whose `variable` is any placeholder name the scenario picks.

    Such a source may appear once per variable (e.g. two lorebook sources filling two variables); its
    `variable` must not be one registered with register_source.
    """
    refs = frozenset({agent_ref})
    _current().agent_sources[agent_ref] = Source(
        "", description, producer, scopes, refs, frozenset(runtimes), options, tuple(parts)
    )


def get_agent_source(agent_ref: str) -> Source | None:
    return _current().agent_sources.get(agent_ref)


def source_for(variable: str, agent_ref: str) -> Source | None:
    """The registration a scenario source uses: its agentRef's when one is registered, else its variable's."""
    return get_agent_source(agent_ref) or get_source(variable)


def source_variables(config: SourceConfig) -> list[str]:
    """The placeholders a configured source fills: its variable, then one per part of its registration."""
    source = source_for(config.variable, config.agent_ref)
    return [config.variable] + [config.variable + part for part in (source.parts if source else ())]


def runtime_agent_refs(runtime: str) -> frozenset[str]:
    """The agentRef-named sources that name `runtime` among the runtimes accepting them."""
    return frozenset(ref for ref, source in _current().agent_sources.items() if runtime in source.runtimes)


def producer_for(config: SourceConfig) -> Producer | None:
    source = source_for(config.variable, config.agent_ref)
    return source.producer if source else None


def declared_scopes(requests: list[RecallRequest]) -> list[Scope]:
    """The working-set entries the producers of these requests will read."""
    scopes: list[Scope] = []
    for request in requests:
        source = source_for(request.source.variable, request.source.agent_ref)
        if source is not None and source.scopes is not None:
            scopes.extend(source.scopes(request))
    return scopes


# --- commit hooks ---------------------------------------------------------------------------------------------
# Run when a turn is committed (inside its transaction); a hook decides whether the turn needs its app's job and
# schedules it with `memoryhub.turn_jobs.schedule` (an outbox row in this transaction, sent after the commit), so
# a rolled-back commit schedules nothing and a broker outage loses nothing.


def register_commit_hook(name: str, hook: CommitHook) -> None:
    _current().commit_hooks[name] = hook


def unregister_commit_hook(name: str) -> None:
    _current().commit_hooks.pop(name, None)


def commit_hook_names() -> list[str]:
    return list(_current().commit_hooks)


def run_commit_hooks(turn_pk: int) -> list[str]:
    """Run every hook; return the names of those that scheduled memory work (so "pending" is never a guess)."""
    return [name for name, hook in list(_current().commit_hooks.items()) if hook(turn_pk)]


# --- supersede hooks -----------------------------------------------------------------------------------------
# Run when a regenerated reply is stored and the turn it replaces (with its messages) becomes superseded, inside
# that transaction: state derived from the superseded reply (a compaction covering it, a story snapshot anchored
# on it) is rolled back or invalidated in the same commit.


def register_supersede_hook(name: str, hook: SupersedeHook) -> None:
    _current().supersede_hooks[name] = hook


def run_supersede_hooks(superseded_turn_pk: int, new_turn_pk: int | None) -> dict[str, dict]:
    """Run every hook, each in its own savepoint (one transaction per kind); return {name: report} of those
    that undid something."""
    return _run_each(_current().supersede_hooks, superseded_turn_pk, new_turn_pk)


# --- reapply hooks --------------------------------------------------------------------------------------------
# Run when a select makes a superseded turn current again (a swipe back), after the supersede hooks of the turn it
# displaces: each kind writes the selected turn's writes back as a new revision (docs/roleplay.md).


def register_reapply_hook(name: str, hook: ReapplyHook) -> None:
    _current().reapply_hooks[name] = hook


def run_reapply_hooks(selected_turn_pk: int, displaced_turn_pk: int | None) -> dict[str, dict]:
    return _run_each(_current().reapply_hooks, selected_turn_pk, displaced_turn_pk)


def _run_each(hooks: dict, turn_pk: int, other_pk: int | None) -> dict[str, dict]:
    reports: dict[str, dict] = {}
    for name, hook in list(hooks.items()):
        with transaction.atomic():
            report = hook(turn_pk, other_pk)
        if report:
            reports[name] = report
    return reports


# --- scenario sections ----------------------------------------------------------------------------------------
# Settings owned by another app (e.g. "diary", "tables"), validated by it and stored in `Scenario.sections`;
# the scenario API and admin call the same validators.


def register_scenario_section(name: str, validate: SectionValidator) -> None:
    _current().sections[name] = validate


def scenario_section_names() -> list[str]:
    return sorted(_current().sections)


def validate_section(name: str, value: object) -> object:
    return _current().sections[name](value)

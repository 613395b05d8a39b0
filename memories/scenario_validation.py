"""One scenario validation (S2), used by the API serializer path and the admin form alike."""

from __future__ import annotations

import re

from django.conf import settings

from memories.schemas import validate_schema_definition
from memoryhub.errors import DomainError
from memoryhub.identifiers import ID_PATTERN
from memoryhub.runtimes import registry
from memoryhub.runtimes.base import SourceConfig
from memoryhub.runtimes.registry import BUILTIN_VARIABLES, DEFAULT_RUNTIME
from memoryhub.runtimes.rendering import PLACEHOLDER, template_placeholders

SLUG = re.compile(r"[A-Za-z0-9][A-Za-z0-9_-]{0,99}")
CORE_FIELDS = {
    "id",
    "name",
    "memoryRuntime",
    "memorySources",
    "template",
    "memoryIngest",
    "commitOn",
    "toolUpdates",
    "memorySchema",
}
DEFAULTS = {
    "memoryRuntime": DEFAULT_RUNTIME,
    "memorySources": [],
    "template": "",
    "memoryIngest": "best_effort",
    "commitOn": "completed",
    "toolUpdates": True,
    "memorySchema": None,
}
SOURCE_FIELDS = {"id", "agentRef", "variable", "priority"}
FREE_VARIABLE = re.compile(r"[A-Za-z_][A-Za-z0-9_]{0,63}")


class ScenarioInvalid(DomainError):
    """400 with every failing field named in details.fields."""

    def __init__(self, errors: dict[str, str]):
        super().__init__("the scenario is invalid", details={"fields": errors})
        self.errors = errors


def _is_one_of(value: object, choices) -> bool:
    return isinstance(value, str) and value in choices  # a JSON object or list is unhashable: check the type first


def validate_scenario(data: object) -> dict:
    """Return the normalized scenario dict (API field names) or raise ScenarioInvalid naming each field."""
    if not isinstance(data, dict):
        raise ScenarioInvalid({"non_field_errors": "the scenario must be a JSON object"})
    errors: dict[str, str] = {}
    out = {**DEFAULTS, **{k: v for k, v in data.items() if k in CORE_FIELDS}}
    for key in sorted(set(data) - CORE_FIELDS - set(registry.scenario_section_names())):
        errors[key] = "unknown field"
    _check_scalars(out, errors)
    sources = _check_sources(out.get("memorySources"), errors)
    if sources is not None and _is_one_of(out["memoryRuntime"], registry.runtime_names()):
        errors.update(registry.get_runtime(out["memoryRuntime"]).validate_sources(sources))
        _check_template(out["template"], sources, errors)
    out.update(_check_sections(data, errors))
    if errors:
        raise ScenarioInvalid(errors)
    return out


def _check_scalars(out: dict, errors: dict[str, str]) -> None:
    if not isinstance(out.get("id"), str) or not SLUG.fullmatch(out["id"]):
        errors["id"] = "required: 1-100 characters of A-Za-z0-9_- starting with a letter or digit"
    if not isinstance(out.get("name"), str) or not 1 <= len(out["name"].strip()) <= 200:
        errors["name"] = "required: a non-empty string of at most 200 characters"
    runtimes = registry.runtime_names()
    if not _is_one_of(out["memoryRuntime"], runtimes):
        errors["memoryRuntime"] = f"unknown runtime; one of: {', '.join(runtimes)}"
    if not isinstance(out["template"], str):
        errors["template"] = "must be a string"
    if out["memoryIngest"] not in ("best_effort", "required"):
        errors["memoryIngest"] = "must be 'best_effort' or 'required'"
    if out["commitOn"] not in ("completed", "accepted"):
        errors["commitOn"] = "must be 'completed' or 'accepted'"
    if not isinstance(out["toolUpdates"], bool):
        errors["toolUpdates"] = "must be a boolean"
    if out["memorySchema"] is not None:
        try:
            validate_schema_definition(out["memorySchema"])
        except DomainError as exc:
            errors["memorySchema"] = exc.message


def _check_sources(raw: object, errors: dict[str, str]) -> list[SourceConfig] | None:
    if not isinstance(raw, list):
        errors["memorySources"] = "must be a list"
        return None
    sources, seen_ids = [], set()
    seen_variables: set[str] = set()
    for index, item in enumerate(raw):
        source = _check_source(index, item, errors)
        if source is None:
            continue
        names = registry.source_variables(source)  # its variable and those of its parts
        if seen_variables.intersection(names):
            errors[f"memorySources[{index}].variable"] = (
                f"variable {sorted(seen_variables.intersection(names))[0]!r} is configured twice"
            )
        if source.id in seen_ids:
            errors[f"memorySources[{index}].id"] = f"source id {source.id!r} is used twice"
        seen_variables.update(names)
        seen_ids.add(source.id)
        sources.append(source)
    return sources


def _check_source(index: int, item: object, errors: dict[str, str]) -> SourceConfig | None:
    where = f"memorySources[{index}]"
    if not isinstance(item, dict):
        errors[where] = "must be an object with id, agentRef, variable and optional priority"
        return None
    before = len(errors)
    variable = item.get("variable")
    agent_ref = item.get("agentRef")
    by_agent = registry.get_agent_source(agent_ref) if isinstance(agent_ref, str) else None
    registered = by_agent or (registry.get_source(variable) if isinstance(variable, str) else None)  # unhashable list
    extra = {key: item[key] for key in sorted(set(item) - SOURCE_FIELDS)}
    options: dict = {}
    # An agentRef-named source's validator always runs: its fields may be required (e.g. a lorebook's ids).
    if (extra or by_agent is not None) and registered is not None and registered.options is not None:
        try:
            options = registered.options(extra)  # fields the variable's registration accepts (e.g. kinds)
        except registry.SectionInvalid as exc:
            errors.update({f"{where}.{key}": message for key, message in exc.errors.items()})
    else:
        for key in extra:
            errors[f"{where}.{key}"] = "unknown field"
    for key in ("id", "agentRef"):
        value = item.get(key)
        if not isinstance(value, str) or not value.strip() or len(value) > 200:
            errors[f"{where}.{key}"] = "required: a non-empty string"
    if by_agent is not None:
        _check_free_variable(where, variable, errors)
    elif registered is None:
        errors[f"{where}.variable"] = f"unknown variable; one of: {', '.join(registry.variable_names())}"
    elif f"{where}.agentRef" not in errors:
        _check_agent_ref(where, item["agentRef"], registered, errors)
    priority = item.get("priority")
    if priority is not None and (not isinstance(priority, int) or isinstance(priority, bool)):
        errors[f"{where}.priority"] = "must be an integer"
    if registered is None or len(errors) > before:
        return None
    chosen = item["variable"] if by_agent is not None else registered.variable
    return SourceConfig(item["id"], item["agentRef"], chosen, priority, options)


def _check_free_variable(where: str, variable: object, errors: dict[str, str]) -> None:
    """A source named by its agentRef (e.g. lorebook) fills a variable of the scenario's choosing."""
    if not isinstance(variable, str) or not FREE_VARIABLE.fullmatch(variable):
        errors[f"{where}.variable"] = "required: a placeholder name (A-Za-z_ then A-Za-z0-9_, at most 64)"
    elif registry.get_source(variable) is not None or variable in BUILTIN_VARIABLES:
        errors[f"{where}.variable"] = f"{variable!r} is the variable of another source; choose another name"


def _check_agent_ref(where: str, agent_ref: str, registered: registry.Source, errors: dict[str, str]) -> None:
    """One of the variable's registered agentRefs, or, for a variable registered NAMED, an identifier."""
    if registered.agent_refs is None:
        if not ID_PATTERN.fullmatch(agent_ref):
            errors[f"{where}.agentRef"] = (
                f"the agentRef of {registered.variable} names its agent: 1–128 characters of A-Za-z0-9_.@-, "
                "not only dots"
            )
    elif agent_ref not in registered.agent_refs:
        choices = ", ".join(sorted(registered.agent_refs))
        errors[f"{where}.agentRef"] = f"unknown agentRef for {registered.variable}; one of: {choices}"


def _check_template(template: object, sources: list[SourceConfig], errors: dict[str, str]) -> None:
    if not isinstance(template, str):
        return
    if len(template) > settings.TEMPLATE_MAX_CHARS:
        errors["template"] = f"longer than {settings.TEMPLATE_MAX_CHARS} characters"
        return
    uses = sum(1 for _ in PLACEHOLDER.finditer(template))
    if uses > settings.TEMPLATE_MAX_PLACEHOLDERS:
        errors["template"] = f"{uses} placeholders; the limit is {settings.TEMPLATE_MAX_PLACEHOLDERS}"
        return
    if any(key.startswith("memorySources") for key in errors):
        return  # a refused source fills nothing: its placeholders would be reported as unknown, falsely
    configured = {name for s in sources for name in registry.source_variables(s)}
    unknown = [name for name in template_placeholders(template) if name not in configured | set(BUILTIN_VARIABLES)]
    if unknown:
        errors["template"] = (
            f"placeholder(s) {', '.join('{{' + n + '}}' for n in unknown)} name neither a configured "
            f"source variable nor a built-in ({', '.join(BUILTIN_VARIABLES)})"
        )


def _check_sections(data: dict, errors: dict[str, str]) -> dict:
    sections = {}
    for name in registry.scenario_section_names():
        if name not in data:
            continue
        try:
            sections[name] = registry.validate_section(name, data[name])
        except registry.SectionInvalid as exc:
            errors.update(exc.errors)
    return sections

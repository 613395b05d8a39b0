"""Scenarios: validated by the one scenario validation, versioned on every change (S5)."""

from __future__ import annotations

from django.db import IntegrityError, transaction
from django.db.models import Max
from django.db.models.signals import post_delete
from django.dispatch import receiver

from memories.models import MemorySource, Product, Scenario, ScenarioVersion, Turn
from memories.scenario_validation import CORE_FIELDS, SOURCE_FIELDS, ScenarioInvalid, validate_scenario
from memoryhub import working_set
from memoryhub.actors import Actor
from memoryhub.errors import Conflict, NotFound
from memoryhub.runtimes.base import SourceConfig

_MODEL_FIELDS = {
    "name": "name",
    "memoryRuntime": "memory_runtime",
    "template": "template",
    "memoryIngest": "memory_ingest",
    "commitOn": "commit_on",
    "toolUpdates": "tool_updates",
    "memorySchema": "memory_schema",
}


def scenario_to_dict(scenario: Scenario) -> dict:
    """The API representation; also the snapshot kept in each ScenarioVersion."""
    data = {"id": scenario.slug, **{api: getattr(scenario, field) for api, field in _MODEL_FIELDS.items()}}
    data["memorySources"] = [source_to_dict(s) for s in scenario.sources.all()]
    data.update(scenario.sections or {})
    return data


def source_to_dict(source: MemorySource) -> dict:
    out: dict[str, object] = {"id": source.source_id, "agentRef": source.agent_ref, "variable": source.variable}
    if source.priority is not None:
        out["priority"] = source.priority
    out.update(source.options or {})  # the source's own fields its variable accepts (e.g. `kinds`)
    return out


def scenario_sources(scenario: Scenario) -> tuple[SourceConfig, ...]:
    """The scenario's sources in recall order; built once per instance (a prepare asks three times)."""
    built = scenario.__dict__.get("_recall_sources")
    if built is None:
        rows = sorted(scenario.sources.all(), key=lambda s: (s.priority or 0, s.position))
        built = tuple(SourceConfig(s.source_id, s.agent_ref, s.variable, s.priority, s.options or {}) for s in rows)
        scenario.__dict__["_recall_sources"] = built
    return built


def scenario_for_turn(*, product: Product, slug: str) -> Scenario:
    """The scenario with its sources for a prepare, from the working set; every scenario write invalidates it.

    Two of a prepare's queries otherwise, on the hottest path; a miss rebuilds from the database.
    """
    scenario, _ = working_set.get_or_build(scenario_scope(product.pk, slug), lambda: _load(product, slug))
    if scenario is None:
        raise NotFound(f"no scenario {slug!r}")
    return scenario


def _load(product: Product, slug: str) -> Scenario | None:
    scenario = Scenario.objects.filter(product=product, slug=slug).prefetch_related("sources").first()
    if scenario is not None:
        list(scenario.sources.all())  # evaluated now, so the cached copy carries its sources
    return scenario


def scenario_scope(product_id: str, slug: str) -> working_set.Scope:
    # No user or conversation id is empty, so this entry can never share a key with a user's entries.
    return working_set.Scope(product_id, "", "", f"scenario:{slug}")


@receiver(post_delete, sender=Scenario, dispatch_uid="memories.scenario_working_set")
def _scenario_deleted(sender, instance: Scenario, **kwargs) -> None:
    # Any delete (service, admin, a product's cascade) runs inside its transaction: fail before commit if Redis is down.
    working_set.invalidate(scenario_scope(instance.product_id, instance.slug))


def scenario_create(*, product: Product, data: object, actor: Actor) -> Scenario:
    clean = validate_scenario(data)
    try:
        with transaction.atomic():
            scenario = Scenario(product=product, slug=clean["id"], version=_first_version(product, clean["id"]))
            _apply(scenario, clean)
            _record_version(scenario, actor)
            working_set.invalidate(scenario_scope(product.pk, scenario.slug))
    except IntegrityError:
        raise Conflict(f"a scenario {clean['id']!r} already exists", code="already_exists") from None
    return scenario


def _first_version(product: Product, slug: str) -> int:
    """1, or after a deleted scenario of the same id the version after the last its turns used: a turn's
    (scenarioId, scenarioVersion) keeps naming the one definition it was prepared with."""
    used = Turn.objects.filter(product=product, scenario_slug=slug).aggregate(last=Max("scenario_version"))["last"]
    return (used or 0) + 1


def scenario_update(*, product: Product, slug: str, data: object, actor: Actor, partial: bool) -> Scenario:
    with transaction.atomic():
        scenario = Scenario.objects.select_for_update(no_key=True).filter(product=product, slug=slug).first()
        if scenario is None:
            raise NotFound(f"no scenario {slug!r}")
        if not isinstance(data, dict):
            raise ScenarioInvalid({"non_field_errors": "the scenario must be a JSON object"})
        if "id" in data and data["id"] != slug:
            raise ScenarioInvalid({"id": "the id of a scenario cannot change"})
        merged = {**scenario_to_dict(scenario), **data} if partial else {**data, "id": slug}
        clean = validate_scenario(merged)
        scenario.version += 1
        _apply(scenario, clean)
        _record_version(scenario, actor)
        working_set.invalidate(scenario_scope(product.pk, slug))
    return scenario


def scenario_delete(*, product: Product, slug: str) -> None:
    deleted, _ = Scenario.objects.filter(product=product, slug=slug).delete()
    if not deleted:
        raise NotFound(f"no scenario {slug!r}")


def _apply(scenario: Scenario, clean: dict) -> None:
    for api, field in _MODEL_FIELDS.items():
        setattr(scenario, field, clean[api])
    scenario.sections = {k: v for k, v in clean.items() if k not in CORE_FIELDS}
    scenario.save()
    scenario.sources.all().delete()
    MemorySource.objects.bulk_create(
        MemorySource(
            scenario=scenario,
            position=i,
            source_id=s["id"],
            agent_ref=s["agentRef"],
            variable=s["variable"],
            priority=s.get("priority"),
            options={k: v for k, v in s.items() if k not in SOURCE_FIELDS},
        )
        for i, s in enumerate(clean["memorySources"])
    )


def _record_version(scenario: Scenario, actor: Actor) -> None:
    fresh = Scenario.objects.prefetch_related("sources").get(pk=scenario.pk)
    ScenarioVersion.objects.create(
        scenario=scenario, version=scenario.version, snapshot=scenario_to_dict(fresh), actor=str(actor)
    )

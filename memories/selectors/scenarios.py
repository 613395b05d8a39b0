"""Reads of scenarios and their version history; every selector takes the product."""

from __future__ import annotations

from memories.models import Product, Scenario, ScenarioVersion
from memoryhub.errors import NotFound
from memoryhub.pagination import keyset_page


def scenario_get(*, product: Product, slug: str) -> Scenario:
    """The scenario with its sources (one query for the row, one for the sources)."""
    scenario = Scenario.objects.filter(product=product, slug=slug).prefetch_related("sources").first()
    if scenario is None:
        raise NotFound(f"no scenario {slug!r}")
    return scenario


def scenarios_page(*, product: Product, cursor: str | None, limit: int) -> tuple[list[Scenario], str | None]:
    """A page of the product's scenarios in creation order, sources prefetched for the whole page."""
    queryset = Scenario.objects.filter(product=product).prefetch_related("sources")
    return keyset_page(queryset, field="id", descending=False, cursor=cursor, limit=limit)


def scenario_versions_page(
    *, product: Product, slug: str, cursor: str | None, limit: int
) -> tuple[list[ScenarioVersion], str | None]:
    """A page of one scenario's recorded versions, newest first."""
    scenario = scenario_get(product=product, slug=slug)
    queryset = ScenarioVersion.objects.filter(scenario=scenario)
    return keyset_page(queryset, field="version", descending=True, cursor=cursor, limit=limit)

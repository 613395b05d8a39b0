from __future__ import annotations

from django.db import models

from memoryhub.runtimes.registry import DEFAULT_RUNTIME, runtime_choices

from .products import Product


class Scenario(models.Model):
    """A product's configuration of how memory is assembled for a turn (runtime, sources, template, policies)."""

    product = models.ForeignKey(Product, on_delete=models.CASCADE, related_name="scenarios")
    slug = models.SlugField(max_length=100, help_text="The scenario id used by the API.")
    name = models.CharField(max_length=200)
    # A callable: the registered runtimes, read when used (an app registers its runtime after models load).
    memory_runtime = models.CharField(max_length=32, choices=runtime_choices, default=DEFAULT_RUNTIME)
    template = models.TextField(blank=True)
    memory_ingest = models.CharField(
        max_length=16, choices=[("best_effort", "best_effort"), ("required", "required")], default="best_effort"
    )
    commit_on = models.CharField(
        max_length=16, choices=[("completed", "completed"), ("accepted", "accepted")], default="completed"
    )
    tool_updates = models.BooleanField(default=True, help_text="Offer update_memory to the model.")
    memory_schema = models.JSONField(null=True, blank=True, help_text="JSON Schema for this scenario's memory writes.")
    sections = models.JSONField(default=dict, blank=True, help_text="Settings owned by other apps (diary, tables).")
    version = models.PositiveIntegerField(default=1)
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["product", "slug"], name="scenario_slug_unique")]

    def __str__(self) -> str:
        return f"{self.slug} v{self.version}"


class MemorySource(models.Model):
    """One entry of a scenario's memorySources."""

    scenario = models.ForeignKey(Scenario, on_delete=models.CASCADE, related_name="sources")
    position = models.PositiveSmallIntegerField(default=0)
    source_id = models.CharField("id", max_length=100)
    agent_ref = models.CharField(max_length=200)
    variable = models.CharField(max_length=64)
    priority = models.IntegerField(null=True, blank=True)
    # Fields the variable's registration accepts besides id/agentRef/variable/priority (e.g. `kinds`).
    options = models.JSONField(default=dict, blank=True)

    class Meta:
        ordering = ["position", "pk"]

    def __str__(self) -> str:
        return f"{self.source_id} → {self.variable}"


class ScenarioVersion(models.Model):
    """A numbered snapshot of a scenario as the API returns it, kept for every change (S5)."""

    scenario = models.ForeignKey(Scenario, on_delete=models.CASCADE, related_name="versions")
    version = models.PositiveIntegerField()
    snapshot = models.JSONField()
    actor = models.CharField(max_length=200)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["scenario", "version"], name="scenario_version_unique")]
        ordering = ["-version"]

    def __str__(self) -> str:
        return f"{self.scenario.slug} v{self.version}"

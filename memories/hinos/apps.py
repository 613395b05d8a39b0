from __future__ import annotations

from django.apps import AppConfig


class HinosConfig(AppConfig):
    """The Hinos external-memory protocol: the runtime that calls a Hinos service, and memoryhub's own server."""

    name = "memories.hinos"
    label = "hinos"
    verbose_name = "Hinos"

    def ready(self) -> None:
        from memoryhub.runtimes import registry

        from .runtime import HINOS_VARIABLE, SECTION, HinosRuntime, validate_hinos_section

        registry.register_runtime("hinos", HinosRuntime)
        # Filled by the runtime from the Hinos service's answer, not by a producer.
        registry.register_source(
            HINOS_VARIABLE, description="memory text served by the Hinos external memory service", agent_refs=["hinos"]
        )
        registry.register_scenario_section(SECTION, validate_hinos_section)

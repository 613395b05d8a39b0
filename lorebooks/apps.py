from __future__ import annotations

from django.apps import AppConfig


class LorebooksConfig(AppConfig):
    name = "lorebooks"
    verbose_name = "Lorebooks"

    def ready(self) -> None:
        from lorebooks.producers import register
        from lorebooks.rollback import lorebook_edit_timed_effects
        from memoryhub.runtimes import registry

        register()
        registry.register_supersede_hook("lorebookTimedEffects", lorebook_edit_timed_effects)

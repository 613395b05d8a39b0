from __future__ import annotations

from django.apps import AppConfig


class StoryConfig(AppConfig):
    """Story snapshots (docs/story.md): world facts, events and narrative, settled on replies."""

    name = "memories.story"
    label = "story"
    verbose_name = "Story snapshots"

    def ready(self) -> None:
        from memoryhub.runtimes import registry

        from .producers import produce_story, story_scopes
        from .services import story_reapply_selected, story_rollback_superseded

        registry.register_source(
            "story",
            description="the story snapshot: world facts, the newest events and the narrative",
            producer=produce_story,
            scopes=story_scopes,
            agent_refs=["story"],
            runtimes=["personalization"],
        )
        registry.register_supersede_hook("story", story_rollback_superseded)
        registry.register_reapply_hook("story", story_reapply_selected)

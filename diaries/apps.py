from __future__ import annotations

from django.apps import AppConfig


class DiariesConfig(AppConfig):
    name = "diaries"
    verbose_name = "Diaries"

    def ready(self) -> None:
        from memoryhub import turn_jobs
        from memoryhub.runtimes import registry

        from .producers import compass_scopes, produce_compass_memory
        from .rollback import diary_redo_turn, diary_undo_turn
        from .tasks import RETRIED, RETRY, WORK, diary_plan_run, enqueue_diary_plan

        registry.register_source(
            "compassMemory",
            description="the newest diary summaries of the conversation",
            agent_refs=registry.NAMED,  # the diary's name: each agentRef keeps its own diary
            producer=produce_compass_memory,
            scopes=compass_scopes,
        )
        registry.register_scenario_section("diary", validate_diary_section)
        registry.register_commit_hook(WORK, enqueue_diary_plan)  # memoryWrite.work names it
        turn_jobs.register(
            WORK,
            diary_plan_run,
            queue="diaries",
            retry_on=RETRIED,
            retry=RETRY,
            reports=True,
            rerun_refusal=lambda turn_pk: None,  # a failed plan wrote nothing: running it again is always safe
            rerun_permission="diaries.change_diarystate",
        )
        registry.register_supersede_hook(WORK, diary_undo_turn)
        registry.register_reapply_hook(WORK, diary_redo_turn)


def validate_diary_section(value: object) -> dict:
    """The scenario's "diary" settings, normalized (defaults filled in) or SectionInvalid naming the field."""
    from memoryhub.runtimes.registry import SectionInvalid

    from .planning import PolicyError, parse_diary_policy, policy_to_dict

    try:
        return policy_to_dict(parse_diary_policy(value))
    except PolicyError as exc:
        raise SectionInvalid(exc.errors) from exc

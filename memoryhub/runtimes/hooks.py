"""Extension points the turn pipeline calls without knowing who listens.

- commit hooks: run when a turn is committed (inside its transaction); an app enqueues its Celery
  task from here with `transaction.on_commit`, so a rolled-back commit schedules nothing.
- scenario sections: settings owned by another app (e.g. "diary", "tables"), validated by it and
  stored in `Scenario.sections`; the scenario API and admin call the same validators.
"""
from __future__ import annotations

from collections.abc import Callable

# Receives the committed turn's primary key; returns True when it scheduled memory work for the turn.
CommitHook = Callable[[int], bool]

_commit_hooks: dict[str, CommitHook] = {}


def register_commit_hook(name: str, hook: CommitHook) -> None:
    _commit_hooks[name] = hook


def run_commit_hooks(turn_pk: int) -> list[str]:
    """Run every hook; return the names of those that scheduled memory work (so "pending" is never a guess)."""
    return [name for name, hook in _commit_hooks.items() if hook(turn_pk)]


class SectionInvalid(Exception):
    """A scenario section failed validation; `errors` maps field paths (e.g. "diary.minRounds") to messages."""

    def __init__(self, errors: dict[str, str]):
        super().__init__("; ".join(f"{k}: {v}" for k, v in errors.items()))
        self.errors = errors


SectionValidator = Callable[[object], object]  # returns the normalized value or raises SectionInvalid

_sections: dict[str, SectionValidator] = {}


def register_scenario_section(name: str, validate: SectionValidator) -> None:
    _sections[name] = validate


def scenario_section_names() -> list[str]:
    return sorted(_sections)


def validate_section(name: str, value: object) -> object:
    return _sections[name](value)

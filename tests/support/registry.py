"""Registry helpers for tests; tests/conftest.py resets the registry after every test."""

from __future__ import annotations

from memoryhub.runtimes import registry


def only_commit_hooks(hooks: dict[str, registry.CommitHook]) -> None:
    """Replace every registered commit hook by `hooks` (none when empty)."""
    for name in registry.commit_hook_names():
        registry.unregister_commit_hook(name)
    for name, hook in hooks.items():
        registry.register_commit_hook(name, hook)

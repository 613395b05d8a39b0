"""Running the tests leaves the tracked screenshots alone: the browser tests write outside the tree unless asked."""

from __future__ import annotations

import importlib
from pathlib import Path

from django.conf import settings

import tests.browser.support as support


def test_screenshots_go_outside_the_tree_unless_asked(monkeypatch, tmp_path):
    root = Path(settings.BASE_DIR).resolve()
    monkeypatch.delenv("MEMORYHUB_SCREENSHOTS", raising=False)
    default = importlib.reload(support).SCREENSHOTS.resolve()
    assert not default.is_relative_to(root), default
    monkeypatch.setenv("MEMORYHUB_SCREENSHOTS", str(tmp_path / "asked"))
    assert tmp_path / "asked" == importlib.reload(support).SCREENSHOTS
    monkeypatch.delenv("MEMORYHUB_SCREENSHOTS")
    importlib.reload(support)

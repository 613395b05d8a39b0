"""Fixtures of the long-term memory tests."""

from __future__ import annotations

import pytest

from memories.longterm import admission
from memoryhub.clients.embeddings import reset_embedder_cache


@pytest.fixture
def fresh_embedder():
    """Settings changes rebuild the embedder; forget it afterwards so other tests get the default again."""
    reset_embedder_cache()
    yield
    reset_embedder_cache()


def _note_normalize(content: object) -> dict:
    if not isinstance(content, dict) or not isinstance(content.get("text"), str):
        raise ValueError('a note is {"text": "..."}')
    return {"text": content["text"]}


@pytest.fixture
def note_kind():
    """A second, non-searchable kind: kinds are a registry, and only searchable ones are embedded and found."""
    rules = admission.KindRules(normalize=_note_normalize, check_evidence=lambda evidence, content: None)
    admission.register_kind("note", rules, replace=True)
    yield "note"
    admission._KINDS.pop("note", None)

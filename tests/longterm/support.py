"""Shared requests and fixtures for the long-term memory tests."""
from __future__ import annotations

import copy
import socket

import pytest

from memories.longterm import admission
from memoryhub.clients.embeddings import reset_embedder_cache

SOURCE_ZH = "以后请用简短的中文回答我，谢谢。"
PREFERENCE_ZH = {
    "kind": "preference",
    "content": {"language": "zh", "detail": "brief", "text": "用户喜欢简短的中文回答"},
    "evidence": "以后请用简短的中文回答我",
    "source": SOURCE_ZH,
    "consent": True,
}
PREFERENCE_EN = {
    "kind": "preference",
    "content": {"language": "en", "detail": "detailed", "text": "Please always answer me in detailed English"},
    "evidence": "Please always answer me in English, in detail",
    "source": "Please always answer me in English, in detail. Thanks!",
    "consent": True,
}


def memories_url(user: str = "u1") -> str:
    return f"/v1/users/{user}/memories"


def proposal(base: dict = PREFERENCE_ZH, **changes) -> dict:
    body = copy.deepcopy(base)
    body.update(changes)
    return body


def create(api, body: dict | None = None, user: str = "u1") -> dict:
    response = api.post(memories_url(user), body or proposal())
    assert response.status_code == 201, response.json()
    return response.json()


def update_body(base: dict = PREFERENCE_EN, *, expected: int, **changes) -> dict:
    body = {k: v for k, v in copy.deepcopy(base).items() if k != "kind"}
    body["expectedVersion"] = expected
    body.update(changes)
    return body


def search(api, query: str, mode: str, user: str = "u1", **extra):
    return api.post(f"{memories_url(user)}/search", {"query": query, "mode": mode, **extra})


def closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@pytest.fixture
def fresh_embedder():
    """Settings changes rebuild the embedder; forget it afterwards so other tests get the default again."""
    reset_embedder_cache()
    yield
    reset_embedder_cache()


def _note_normalize(content: object) -> dict:
    if not isinstance(content, dict) or not isinstance(content.get("text"), str):
        raise ValueError("a note is {\"text\": \"...\"}")
    return {"text": content["text"]}


@pytest.fixture
def note_kind():
    """A second, non-searchable kind: kinds are a registry, and only searchable ones are embedded and found."""
    rules = admission.KindRules(normalize=_note_normalize, check_evidence=lambda evidence, content: None)
    admission.register_kind("note", rules, replace=True)
    yield "note"
    admission._KINDS.pop("note", None)

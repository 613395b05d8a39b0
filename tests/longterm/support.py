"""Shared requests of the long-term memory tests (their fixtures are in conftest.py)."""

from __future__ import annotations

import copy

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


# Two preferences that answer no single-valued field (language, detail) differently: both stay current.
# (PREFERENCE_EN contradicts PREFERENCE_ZH on both fields, so writing it supersedes PREFERENCE_ZH.)
ZH_LANGUAGE = {**PREFERENCE_ZH, "content": {"language": "zh", "text": "用户喜欢简短的中文回答"}}
EN_DETAIL = {**PREFERENCE_EN, "content": {"detail": "detailed", "text": "Please always answer me in detailed English"}}


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

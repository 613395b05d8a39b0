"""Helpers of the history tests: import messages and search them through the HTTP API."""

from __future__ import annotations

from memoryhub import outbox
from tests.support.processes import wait_for


def import_url(user: str, conversation: str) -> str:
    return f"/v1/users/{user}/conversations/{conversation}/messages/import"


def search_url(user: str) -> str:
    return f"/v1/users/{user}/history/search"


def message(client_id: str, role: str, content: str, at: str, name: str | None = None) -> dict:
    body = {"clientId": client_id, "role": role, "content": content, "createdAt": at}
    if name is not None:
        body["name"] = name
    return body


def imported(api, user: str, conversation: str, messages: list[dict]) -> dict:
    response = api.post(import_url(user, conversation), {"messages": messages})
    assert response.status_code in (200, 201), response.json()
    outbox.background_wait()  # the vectors are written in background work (threads, or a real worker)
    wait_for(lambda: api.get(f"/v1/users/{user}/history").json()["pending"] == 0, message="the message vectors")
    return response.json()


def search(api, user: str, query: str, mode: str = "hybrid", **fields):
    return api.post(search_url(user), {"query": query, "mode": mode, **fields})


def contents(response) -> list[str]:
    assert response.status_code == 200, response.json()
    return [hit["content"] for hit in response.json()["results"]]

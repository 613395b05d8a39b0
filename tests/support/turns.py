"""Preparing a turn over HTTP, the one helper the turn tests share (each names its scenario and message)."""

from __future__ import annotations

CONV = "/v1/users/u1/conversations/c1"


def post_turn(api, scenario: str, message: str, *, conv: str = CONV, **extra):
    """POST …/turns; the response as it came (for tests of refusals and outages)."""
    return api.post(f"{conv}/turns", {"scenarioId": scenario, "userMessage": message, **extra})


def prepare(api, scenario: str, message: str, *, conv: str = CONV, **extra) -> dict:
    """A prepared turn (201), its body."""
    response = post_turn(api, scenario, message, conv=conv, **extra)
    assert response.status_code == 201, response.json()
    return response.json()

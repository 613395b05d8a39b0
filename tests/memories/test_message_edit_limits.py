"""An edited message gets the limit of its role: a user message what a prepare takes (100,000 characters), a reply
what a complete takes (200,000). An outside check stored a 150,000-character user message through an edit."""

from __future__ import annotations

import pytest

from tests.support.api import assert_envelope

from .roleplay_support import CONV, reply_id, setup, user_message_id

pytestmark = pytest.mark.django_db


def turn(api, message: str, answer: str) -> dict:
    prepared = api.post(f"{CONV}/turns", {"scenarioId": "rp", "userMessage": message})
    assert prepared.status_code == 201, prepared.json()
    completed = api.post(f"{CONV}/turns/{prepared.json()['turnId']}/complete", {"assistantMessage": answer})
    assert completed.status_code == 200, completed.json()
    return completed.json()


def test_an_edited_user_message_has_the_prepares_limit(alice):
    setup(alice)
    a = turn(alice, "Go on.", "ok")
    too_long = alice.post(f"{CONV}/turns", {"scenarioId": "rp", "userMessage": "y" * 100_001})
    prepare_error = assert_envelope(too_long, 400, "invalid_request")
    url = f"{CONV}/messages/{user_message_id(alice, a['turnId'])}/edit"
    edit_error = assert_envelope(alice.post(url, {"content": "y" * 100_001}), 400, "invalid_request")
    assert edit_error["details"]["fields"]["content"] == prepare_error["details"]["fields"]["userMessage"]
    assert [m["content"] for m in alice.get(f"{CONV}/messages").json()["results"]] == ["Go on.", "ok"]
    assert alice.post(url, {"content": "y" * 100_000}).json()["changed"] is True


def test_an_edited_reply_has_the_completes_limit(alice):
    setup(alice)
    a = turn(alice, "Go on.", "ok")
    url = f"{CONV}/messages/{reply_id(alice, a['turnId'])}/edit"
    error = assert_envelope(alice.post(url, {"content": "y" * 200_001}), 400, "invalid_request")
    assert "content" in error["details"]["fields"]
    assert alice.post(url, {"content": "y" * 150_000}).json()["changed"] is True

"""docs/webhooks.md's verification example, run as written against a real delivery."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from .support import register

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.usefixtures("in_process_celery")]

DOC = Path(__file__).resolve().parents[2] / "docs" / "webhooks.md"


def example() -> str:
    [block] = re.findall(r"```python\n(.*?)```", DOC.read_text(), flags=re.S)
    return block


def test_the_documented_receiver_accepts_a_delivery_and_refuses_a_forgery(alice, receiver):
    created = register(alice, receiver, ["memory.updated"])
    alice.put("/v1/users/u1/conversations/c1/memory", {"expectedRevision": 0, "memory": {"a": 1}})
    [delivery] = receiver.received
    stored: dict = {}
    namespace = {"SECRET": created["secret"], "store_once": stored.setdefault}
    exec(example(), namespace)
    assert namespace["handle"](delivery.body, delivery.headers) == 204
    assert stored[delivery.headers["webhook-id"]]["data"] == {"revision": 1, "actorType": "api_key"}
    assert namespace["handle"](delivery.body + b" ", delivery.headers) == 400

"""A reply superseded before its table job ran, then selected (swiped back to): its `<tableEdit>` applies then.

The real Celery worker on PostgreSQL is paused (SIGSTOP) while the reply is completed and regenerated, so the
job of the first reply only runs once its turn is superseded (it then records `superseded` and writes nothing);
the select must apply the edits that never were (docs/roleplay.md, "Swiping back").
"""

from __future__ import annotations

import os
import signal
from contextlib import contextmanager

import pytest

from .roleplay_support import CONV, memory, reply, settled_turn, setup, turn

pytestmark = pytest.mark.django_db(transaction=True)


@contextmanager
def paused(process):
    os.killpg(process.pid, signal.SIGSTOP)
    try:
        yield
    finally:
        os.killpg(process.pid, signal.SIGCONT)


def completed(api, message: str, answer: str, **extra) -> int:
    prepared = api.post(f"{CONV}/turns", {"scenarioId": "rp", "userMessage": message, **extra})
    assert prepared.status_code == 201, prepared.json()
    turn_id = prepared.json()["turnId"]
    done = api.post(f"{CONV}/turns/{turn_id}/complete", {"assistantMessage": answer})
    assert done.status_code == 200 and done.json()["status"] == "committed", done.json()
    return turn_id


def places(api) -> list[str]:
    return [row[2] for row in memory(api)["tables"][0]]


def test_a_reply_superseded_before_its_table_job_ran_applies_its_edits_when_selected(alice, request):
    worker = request.getfixturevalue("celery_worker_process")  # skips without a broker and PostgreSQL
    setup(alice)
    turn(alice, "Where are we?", reply("harbour", "Ann"))
    with paused(worker):
        a = completed(alice, "Go on.", reply("lighthouse", "Eli"))
        b = completed(alice, "Go on.", reply("cellar", "Max"), replacesTurnId=a)
    settled_turn(alice, b)
    settled_turn(alice, a)  # its job ran after the supersede: nothing written
    assert places(alice) == ["harbour", "cellar"]
    tables = alice.get(f"{CONV}/tables").json()["tables"]
    versions = alice.get(f"{CONV}/tables/{tables[0]['id']}/versions").json()["results"]
    assert a not in {v.get("turnId") for v in versions}

    selected = alice.post(f"{CONV}/turns/{a}/select", {})
    assert selected.status_code == 200, selected.json()
    report = selected.json()["rollback"]["kinds"]["tables"]
    assert report["status"] == "reapplied" and report["appliedLate"] == {"outcome": "updated", "applied": 1}
    assert places(alice) == ["harbour", "lighthouse"]  # B's edit undone, A's applied now

    # and a swipe back to B takes A's late edit back like any other write of A
    assert alice.post(f"{CONV}/turns/{b}/select", {}).status_code == 200
    assert places(alice) == ["harbour", "cellar"]
    assert alice.post(f"{CONV}/turns/{a}/select", {}).status_code == 200
    assert places(alice) == ["harbour", "lighthouse"]

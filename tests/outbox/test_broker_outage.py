"""A real broker stopped while turns commit: `complete` still answers 200, and after the broker is back every
scheduled job (audit, table edits, diary planning) runs exactly once.

Everything is a real process on the test database: a private `redis-server` as the broker (started, stopped
and started again by the test; the suite's shared Redis is never touched), the web server, `celery worker` and
`celery beat` (the outbox relay, every second here).
"""

from __future__ import annotations

import tempfile
import time
from pathlib import Path

import httpx
import pytest

from memories.models import Event
from memories.tasks import BACKGROUND_DONE
from memoryhub.outbox.models import OutboxMessage
from tests.factories import TABLE_TEMPLATES
from tests.support.processes import (
    RedisServer,
    start_celery_beat,
    start_celery_worker,
    start_web_server,
    stop_process_group,
    subprocess_env,
    wait_for,
)

pytestmark = [pytest.mark.requires_postgres, pytest.mark.django_db(transaction=True)]

CONV = "/v1/users/u1/conversations/c1"
SCENARIO = {
    "id": "rp",
    "name": "灯塔",
    "memoryRuntime": "axon_go",
    "memorySources": [
        {"id": "tables", "agentRef": "table-agent", "variable": "memoryTable"},
        {"id": "diary", "agentRef": "diary-orchestrator", "variable": "compassMemory"},
    ],
    "template": "{{compassMemory}}\n{{memoryTable}}\n用户：{{userMessage}}",
    "tables": TABLE_TEMPLATES,
    "diary": {"minRounds": 3, "freeRoundsPerDiary": 2},
}


def reply(round_: int) -> str:
    return (
        f"第{round_}夜，艾琳走进旧灯塔。\n<tableEdit>\n<!--\n"
        f'insertRow(1, {{"0": "艾琳", "1": "第{round_}夜", "2": "风灯"}})\n-->\n</tableEdit>'
    )


def effects(product) -> dict[str, int]:
    events = Event.objects.filter(product=product)
    return {
        kind: events.filter(type=kind).count()
        for kind in (BACKGROUND_DONE, "table.updated", "diary.skipped", "diary.written")
    }


@pytest.mark.usefixtures("session_beat_paused")
def test_complete_answers_200_with_the_broker_down_and_every_job_runs_once_after(alice):
    broker = RedisServer().start()
    env = subprocess_env(
        CELERY_BROKER_URL=broker.url,
        OUTBOX_RELAY_INTERVAL_SECONDS="1",
        OUTBOX_REDISPATCH_AFTER_SECONDS="1",
        OUTBOX_BACKOFF_MAX_SECONDS="2",
    )
    processes = []
    with tempfile.TemporaryDirectory(prefix="memoryhub-beat-") as schedule_dir:
        try:
            web = start_web_server(env)
            processes += [web.process, start_celery_worker(env), start_celery_beat(Path(schedule_dir), env)]
            http = httpx.Client(base_url=web.url, headers={"Authorization": f"Bearer {alice.key}"}, timeout=30)
            assert http.post("/v1/scenarios", json=SCENARIO).status_code == 201
            broker.stop()
            for round_ in (1, 2, 3):
                turn = http.post(f"{CONV}/turns", json={"scenarioId": "rp", "userMessage": f"第{round_}夜"})
                assert turn.status_code == 201, turn.text
                started = time.monotonic()
                done = http.post(
                    f"{CONV}/turns/{turn.json()['turnId']}/complete", json={"assistantMessage": reply(round_)}
                )
                assert done.status_code == 200 and done.json()["status"] == "committed", done.text
                assert time.monotonic() - started < 5  # a dead broker does not hold the request
            pending = OutboxMessage.objects.filter(done_at__isnull=True)
            assert pending.count() == 12  # audit, tables, diaries and the history vectors for each of the three turns
            time.sleep(3)  # the relay tries (and fails) meanwhile
            assert effects(alice.product) == {
                BACKGROUND_DONE: 0,
                "table.updated": 0,
                "diary.skipped": 0,
                "diary.written": 0,
            }

            broker.start()
            wait_for(lambda: not pending.exists(), timeout=90, message="every outbox row to be acknowledged")
            expected = {BACKGROUND_DONE: 3, "table.updated": 3, "diary.skipped": 2, "diary.written": 1}
            wait_for(lambda: effects(alice.product) == expected, timeout=30, message=f"effects {expected}")
            time.sleep(4)  # relay rounds after the acknowledgements change nothing
            assert effects(alice.product) == expected
            table = http.get(f"{CONV}/tables").json()["tables"][1]
            assert [row[1] for row in table["rows"]] == ["第1夜", "第2夜", "第3夜"]
            assert len(http.get(f"{CONV}/diaries").json()["results"]) == 1
        finally:
            for process in reversed(processes):
                stop_process_group(process)
            broker.stop()

"""Helpers of the browser tests: where screenshots go, and a product seeded through the real API."""

from __future__ import annotations

import contextlib
import os
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

from memories.models import Product, Turn
from tests.factories import TABLE_TEMPLATES
from tests.support.api import ProductApi

# Outside the tree unless asked: MEMORYHUB_SCREENSHOTS=docs/console refreshes the committed ones (docs/console.md).
SCREENSHOTS = Path(os.environ.get("MEMORYHUB_SCREENSHOTS") or Path(tempfile.gettempdir()) / "memoryhub-screenshots")
USER, CONVERSATION = "u1", "c1"
CONV = f"/v1/users/{USER}/conversations/{CONVERSATION}"
SCENARIO = {
    "id": "lighthouse",
    "name": "灯塔 Lighthouse",
    "memoryRuntime": "axon_go",
    "memorySources": [
        {"id": "tables", "agentRef": "table-agent", "variable": "memoryTable"},
        {"id": "diary", "agentRef": "diary-orchestrator", "variable": "compassMemory"},
    ],
    "template": "Tables:\n{{memoryTable}}\nDiary:\n{{compassMemory}}\nUser: {{userMessage}}",
    "tables": TABLE_TEMPLATES,
    "diary": {"minRounds": 2, "freeRoundsPerDiary": 2},
}
ROUNDS = [
    ("我们在哪？", 'insertRow(0, {"0": "2024-05-01", "1": "夜", "2": "旧灯塔", "3": "艾琳"})'),
    ("灯怎么了？", 'updateRow(0, 0, {"1": "深夜"})'),
    ("明天呢？", 'insertRow(1, {"0": "艾琳", "1": "铜制的旧钥匙", "2": "灯塔钥匙", "3": "父亲留下的"})'),
]


def screenshot(page, name: str) -> Path:
    """Save the whole page as SCREENSHOTS/<name>.png (docs/console/ when asked: the README and docs show them)."""
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    path = SCREENSHOTS / f"{name}.png"
    page.screenshot(path=str(path), full_page=True)
    return path


@dataclass
class Seeded:
    """A product with one conversation (USER/CONVERSATION) of committed turns, made through the real API."""

    api: ProductApi
    turns: list[Turn] = field(default_factory=list)

    @property
    def product(self) -> Product:
        return self.api.product


@contextlib.contextmanager
def jobs_in_process():
    """Run the turns' background jobs (outbox rows) in this process, with or without a broker configured,
    so the seeded tables and diary exist when the test starts (no worker needed)."""
    from memoryhub.celery import app

    before = app.conf.task_always_eager
    app.conf.task_always_eager = True
    try:
        yield
    finally:
        app.conf.task_always_eager = before


def seed_product(name: str = "lighthouse-app", rounds=ROUNDS) -> Seeded:
    """Create a product, its scenario (tables + diary) and one committed turn per round, each reply with a
    `<tableEdit>`; the table and diary jobs run before this returns."""
    seeded = Seeded(ProductApi(name))
    response = seeded.api.post("/v1/scenarios", SCENARIO)
    assert response.status_code == 201, response.json()
    with jobs_in_process():
        for message, call in rounds:
            seeded.turns.append(add_round(seeded.api, message, call))
    return seeded


def add_round(api: ProductApi, message: str, call: str) -> Turn:
    """One committed turn of USER/CONVERSATION whose reply carries the table-edit `call`."""
    prepared = api.post(f"{CONV}/turns", {"scenarioId": "lighthouse", "userMessage": message})
    assert prepared.status_code == 201, prepared.json()
    turn_id = prepared.json()["turnId"]
    reply = f"艾琳提着风灯走进旧灯塔。\n<tableEdit>\n<!--\n{call}\n-->\n</tableEdit>"
    done = api.post(f"{CONV}/turns/{turn_id}/complete", {"assistantMessage": reply})
    assert done.status_code == 200, done.json()
    return Turn.objects.get(pk=turn_id)


FAILURES = {
    "diaries": "UpstreamError: the summariser answered 503",
    "tables": "OperationalError: the database connection was lost",
}


def failed_job_turn(seeded: Seeded, work: str = "diaries") -> Turn:
    """A further committed round whose `work` job ended failed (reported as the task reports a final failure)."""
    from memories.services.memory_write import memory_write_finish

    with jobs_in_process():
        turn = add_round(seeded.api, "灯还亮吗？", 'updateRow(0, 0, {"2": "灯塔顶层"})')
    Turn.objects.filter(pk=turn.pk).update(memory_write={"status": "pending", "work": {work: "pending"}})
    failure = FAILURES.get(work, "RuntimeError: failed")
    memory_write_finish(turn_pk=turn.pk, work=work, failure=failure)
    turn.refresh_from_db()
    return turn

"""A conversation seeded through the real API for the turn inspector, timeline and artefact tests.

One scenario on the `personalization` runtime names jsonMemory, memoryTable, compassMemory, conversationState
and story in its template and configures `preferences` without naming it (an unreferenced variable). Around
three rounds (each reply with a `<tableEdit>`, one call refused), it writes two JSON memory revisions, a state
candidate and a story settlement, then regenerates round 3 (superseded messages). User content carries HTML
so the pages can be checked for escaping. Background jobs run in-process (`jobs_in_process`).
"""

from __future__ import annotations

import contextlib
from dataclasses import dataclass, field

from memories.models import Conversation, Message, Turn
from tests.factories import TABLE_TEMPLATES
from tests.support.api import ProductApi

USER, CONVERSATION = "u1", "c1"
CONV = f"/v1/users/{USER}/conversations/{CONVERSATION}"
XSS = '<img src=x onerror="window.__xss=1">'
TEMPLATE = (
    "Memory: {{jsonMemory}}\nTables:\n{{memoryTable}}\nDiary: {{compassMemory}}\n"
    "State: {{conversationState}}\nStory: {{story}}\nUser: {{userMessage}}"
)
SCENARIO = {
    "id": "inspect",
    "name": "Inspector 灯塔",
    "memoryRuntime": "personalization",
    "memorySources": [
        {"id": "doc", "agentRef": "json-memory", "variable": "jsonMemory"},
        {"id": "tables", "agentRef": "table-agent", "variable": "memoryTable"},
        {"id": "diary", "agentRef": "diary-orchestrator", "variable": "compassMemory"},
        {"id": "state", "agentRef": "state", "variable": "conversationState"},
        {"id": "story", "agentRef": "story", "variable": "story"},
        {"id": "prefs", "agentRef": "longterm", "variable": "preferences"},
    ],
    "template": TEMPLATE,
    "tables": TABLE_TEMPLATES,
    "diary": {"minRounds": 2, "freeRoundsPerDiary": 2},
    "state": {"categories": [{"name": "relationships", "actor": True}]},
}
ROUNDS = [
    ("我们在哪？", 'insertRow(0, {"0": "2024-05-01", "1": "夜", "2": "旧灯塔", "3": "艾琳"})'),
    (f"灯怎么了？ {XSS}", 'updateRow(0, 0, {"1": "深夜"})\ndeleteRow(0, 7)'),
    ("明天呢？", 'insertRow(1, {"0": "艾琳", "1": "铜制的旧钥匙", "2": "灯塔钥匙", "3": "父亲留下的"})'),
]


@dataclass
class Story:
    """What the seed made: the product's API, its turns in order (the regenerated one last)."""

    api: ProductApi
    turns: list[Turn] = field(default_factory=list)

    @property
    def product(self):
        return self.api.product

    @property
    def conversation(self) -> Conversation:
        return Conversation.objects.get(product=self.product, user_id=USER, conversation_id=CONVERSATION)


def reply(call: str) -> str:
    return f"艾琳提着风灯走进旧灯塔。<b>{XSS}</b>\n<tableEdit>\n<!--\n{call}\n-->\n</tableEdit>"


def _ok(response, status: int = 200) -> dict:
    assert response.status_code == status, (response.status_code, response.content[:500])
    return response.json()


def _turn(story: Story, message: str, call: str, **extra) -> Turn:
    body = {"scenarioId": "inspect", "userMessage": message, **extra}
    turn_id = _ok(story.api.post(f"{CONV}/turns", body), 201)["turnId"]
    _ok(story.api.post(f"{CONV}/turns/{turn_id}/complete", {"assistantMessage": reply(call)}))
    turn = Turn.objects.get(pk=turn_id)
    story.turns.append(turn)
    return turn


@contextlib.contextmanager
def jobs_in_process():
    """Run the turns' background jobs in this process, broker or not, so tables and diary exist on return."""
    from memoryhub.celery import app

    before = app.conf.task_always_eager
    app.conf.task_always_eager = True
    try:
        yield
    finally:
        app.conf.task_always_eager = before


def seed_conversation(name: str = "inspect-app") -> Story:
    story = Story(ProductApi(name))
    _ok(story.api.post("/v1/scenarios", SCENARIO), 201)
    _ok(story.api.put(f"{CONV}/memory", {"expectedRevision": 0, "memory": {"mood": "calm", "place": "港口"}}))
    with jobs_in_process():
        _turn(story, *ROUNDS[0])
        candidate = {
            "scenarioId": "inspect",
            "baseRevision": 0,
            "text": "艾琳信任守塔人",
            "upsert": [{"category": "relationships", "key": "keeper", "value": {"trust": 2}}],
        }
        _ok(story.api.post(f"{CONV}/state/candidates", candidate), 201)
        memory = {"mood": XSS, "place": "旧灯塔"}
        _ok(story.api.put(f"{CONV}/memory", {"expectedRevision": 1, "memory": memory}))
        second = _turn(story, *ROUNDS[1])
        anchor = Message.objects.get(turn=second, role="assistant").pk
        settlement = {
            "expectedVersion": 0,
            "anchorMessageId": anchor,
            "setFacts": {"lamp": "lit"},
            "appendEvents": [{"text": "The keeper lit the lamp."}],
        }
        _ok(story.api.post(f"{CONV}/story/settlements", settlement), 201)
        third = _turn(story, *ROUNDS[2])
        _turn(story, "明天呢？（重来）", ROUNDS[2][1], replacesTurnId=third.pk)
    for turn in story.turns:
        turn.refresh_from_db()
    return story

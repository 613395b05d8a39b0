"""When a commit schedules a compaction (80 % of the budget, checkpoint rounds) and what the task keeps."""

from __future__ import annotations

import pytest
import redis.exceptions
from django.db import OperationalError

from memories.compact import tasks as compact_tasks
from memories.compact.services import compaction_for_turn
from memories.compact.tasks import compact_history_task
from tests.support.turns import post_turn

from .support import (
    compactions,
    create_scenario,
    eager_celery,
    events,
    history_source,
    messages,
    play,
    scheduled,
    text,
)

pytestmark = pytest.mark.django_db
L = 90  # a round of two 90-character messages adds 199 characters of history


def test_a_commit_schedules_the_task_once_the_history_passes_80_percent(alice) -> None:
    create_scenario(alice, budget=2000, keep=2)  # trigger: 1,600 characters
    for n in range(1, 10):
        play(alice, text(L, f"u{n}"), text(L, f"a{n}"))
    # 8 rounds: 1,591 characters (not past 1,600); 9 rounds: 1,790.
    assert ["compact" in hooks for hooks in scheduled(alice)] == [False] * 8 + [True]


@pytest.mark.parametrize(("chars", "due"), [(1582, False), (1583, True)])
def test_the_trigger_is_strictly_past_80_percent(alice, chars: int, due: bool) -> None:
    create_scenario(alice, budget=2000, keep=2)
    # One round: (u + 6) + 1 + (a + 11) = u + a + 18 characters; 1,600 is exactly 80 %.
    turn = play(alice, text(chars - 700, "u"), text(700, "a"))
    assert ("compact" in scheduled(alice)[0]) is due
    assert turn["completion"]["memoryWrite"]["status"] == ("pending" if due else "skipped")


def test_scenarios_without_the_history_source_schedule_nothing(alice) -> None:
    response = alice.post(
        "/v1/scenarios",
        {"id": "plain", "name": "Plain", "memorySources": [], "template": "{{userMessage}}", "compact": {}},
    )
    assert response.status_code == 201, response.json()
    for n in range(1, 4):
        play(alice, text(900, f"u{n}"), text(900, f"a{n}"), slug="plain")
    assert all("compact" not in hooks for hooks in scheduled(alice))


def test_the_task_compacts_everything_before_the_recent_window_after_the_commit(
    alice, django_capture_on_commit_callbacks, monkeypatch
) -> None:
    eager_celery(monkeypatch)
    create_scenario(alice, budget=2000, keep=2)
    for n in range(1, 9):
        play(alice, text(L, f"u{n}"), text(L, f"a{n}"))
    with django_capture_on_commit_callbacks(execute=True) as callbacks:
        ninth = play(alice, text(L, "u9"), text(L, "a9"))
    assert len(callbacks) >= 1
    [compaction] = compactions(alice)
    stored = messages(alice)
    assert compaction["trigger"] == "threshold" and compaction["turnId"] == ninth["turnId"]
    assert compaction["throughMessageId"] == stored[-3]["id"] and compaction["messageCount"] == 16
    assert compaction["historyChars"] < 1600  # below the trigger: the next commit does not compact again
    [created] = events(alice, "compact.created")
    assert created["turnId"] == ninth["turnId"] and created["details"]["keptMessages"] == 2
    turn = post_turn(alice, "chat", "next").json()
    assert history_source(turn)["details"]["compaction"]["id"] == compaction["id"]
    assert "compacted" not in history_source(turn)["details"]
    # A redelivered task finds nothing to do.
    assert compaction_for_turn(turn_pk=ninth["turnId"], trigger="threshold").outcome == "below_threshold"
    assert compact_history_task.apply(args=[ninth["turnId"], "checkpoint"]).get() == "nothing_to_compact"
    assert len(compactions(alice)) == 1


def test_a_checkpoint_round_compacts_everything_before_the_recent_window(
    alice, django_capture_on_commit_callbacks, monkeypatch
) -> None:
    eager_celery(monkeypatch)
    create_scenario(alice, budget=100_000, keep=2, checkpoint=3)  # the 80 % trigger is never reached
    for n in range(1, 7):
        with django_capture_on_commit_callbacks(execute=True):  # the task runs right after each commit
            play(alice, f"Round {n}: where is the key?", f"Round {n}: the guard keeps it.")
    assert [("compact" in hooks) for hooks in scheduled(alice)] == [False, False, True, False, False, True]
    stored = messages(alice)
    second, first = compactions(alice)
    assert first["trigger"] == second["trigger"] == "checkpoint"
    assert (first["throughMessageId"], first["roundTo"], first["messageCount"]) == (stored[3]["id"], 2, 4)
    assert (second["throughMessageId"], second["roundTo"], second["messageCount"]) == (stored[9]["id"], 5, 10)
    assert second["previousId"] == first["id"]
    turn = post_turn(alice, "chat", "and now?").json()
    assert turn["variables"]["history"].endswith(
        "user: Round 6: where is the key?\nassistant: Round 6: the guard keeps it."
    )
    assert history_source(turn)["details"]["rawMessages"] == 2


@pytest.mark.parametrize("blip", [OperationalError("server closed the connection"), redis.exceptions.ConnectionError()])
def test_a_database_or_redis_blip_is_retried_not_a_lost_compaction(alice, monkeypatch, blip) -> None:
    create_scenario(alice, budget=2000, keep=2)
    for n in range(1, 10):
        ninth = play(alice, text(L, f"u{n}"), text(L, f"a{n}"))
    attempts: list[int] = []

    def once_away(**kwargs):
        attempts.append(kwargs["attempt"])
        if len(attempts) == 1:
            raise blip  # the first attempt's transaction was rolled back
        return compaction_for_turn(**kwargs)

    monkeypatch.setattr(compact_tasks, "compaction_for_turn", once_away)
    result = compact_history_task.apply(args=[ninth["turnId"], "threshold"])
    assert result.successful() and attempts == [0, 1]
    assert len(compactions(alice)) == 1
    work = alice.get(f"/v1/users/u1/conversations/c1/turns/{ninth['turnId']}").json()["memoryWrite"]
    assert work["work"]["compact"] == "done" and work["status"] != "failed", work

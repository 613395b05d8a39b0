"""Work after a turn is one concept (memoryhub/turn_jobs.py): registered jobs, one task, one retry policy."""

from __future__ import annotations

from dataclasses import replace

import pytest
from django.contrib.auth.models import User
from django.db import OperationalError

from memories.console.services import job_rerun, rerunnable_jobs
from memories.models import Turn
from memoryhub import turn_jobs
from memoryhub.celery import app as celery_app
from memoryhub.clients.errors import UpstreamError
from memoryhub.outbox.models import OutboxMessage
from tests.browser.support import jobs_in_process, seed_product
from tests.factories import TurnFactory

JOBS = {"audit", "diaries", "tables", "compact", "webhook_delivery"}


def test_the_registry_lists_every_job_after_a_turn_and_each_runs_on_its_queue():
    assert set(turn_jobs.names()) == JOBS
    queues = {name: turn_jobs.get(name).queue for name in JOBS}
    assert queues == {
        "audit": "celery",
        "diaries": "diaries",
        "tables": "tables",
        "compact": "diaries",
        "webhook_delivery": "celery",
    }
    router = celery_app.amqp.router
    for name, queue in queues.items():
        routed = router.route({}, turn_jobs.TASK, (), {"job": name, "turn_pk": 1})
        assert routed["queue"].name == queue, name
    assert {job.name for job in turn_jobs.rerunnable()} == {"diaries", "tables"} == set(rerunnable_jobs())


def test_the_former_task_names_still_run_their_jobs():
    """Rows written before the jobs had one task name the old tasks: those names stay registered."""
    legacy = ["memories.turn_committed_audit", "diaries.plan_diary", "tables.apply_table_edits"]
    legacy += ["compact.compact_history", "webhooks.deliver"]
    assert set(legacy) <= set(celery_app.tasks)


@pytest.mark.django_db(transaction=True)
def test_every_job_a_committed_turn_schedules_is_one_outbox_row_of_the_generic_task():
    seeded = seed_product(rounds=[("灯塔里有人吗？", 'insertRow(0, {"0": "艾琳", "2": "风灯"})')])
    rows = list(OutboxMessage.objects.values_list("task", "kwargs"))
    turn_pk = seeded.turns[0].pk
    turn_rows = [kwargs for task, kwargs in rows if kwargs.get("turn_pk") == turn_pk]
    assert {kwargs["job"] for kwargs in turn_rows} == {"audit", "diaries", "tables"}
    assert {task for task, kwargs in rows if "job" in kwargs} == {turn_jobs.TASK}
    assert not {task for task, _ in rows} & {"diaries.plan_diary", "tables.apply_table_edits"}
    turn = Turn.objects.get(pk=turn_pk)
    assert turn.memory_write["status"] == "done" and set(turn.memory_write["work"]) == {"diaries", "tables"}


class Probe:
    """Stands in for a job's function: raises `error` on the first `fails` calls, then answers "ok"."""

    def __init__(self, error: Exception, fails: int) -> None:
        self.error, self.fails, self.calls = error, fails, 0

    def __call__(self, pk: int, attempt: turn_jobs.Attempt, **params) -> str:
        self.calls += 1
        if self.calls <= self.fails:
            raise self.error
        return "ok"


@pytest.fixture
def reports(monkeypatch) -> list[tuple[int, str, str | None]]:
    seen: list[tuple[int, str, str | None]] = []
    monkeypatch.setattr(turn_jobs, "_reporter", [lambda pk, work, failure: seen.append((pk, work, failure))])
    return seen


def _with_function(name: str, function) -> turn_jobs.TurnJob:
    job = replace(turn_jobs.get(name), function=function)
    turn_jobs._current()[name] = job
    return job


def _run(job: turn_jobs.TurnJob, pk: int = 7):
    return turn_jobs.run_turn_job.apply(kwargs={"job": job.name, job.subject: pk})  # eager: retries at once


@pytest.mark.parametrize("name", sorted(JOBS))
def test_a_transient_error_is_retried_the_same_way_whatever_the_job(name, reports):
    limit = turn_jobs.TRANSIENT_RETRY.max_retries
    recovers = _with_function(name, Probe(OperationalError("server closed the connection"), fails=limit))
    assert _run(recovers).get() == "ok" and recovers.function.calls == limit + 1
    assert reports == ([(7, name, None)] if recovers.reports else [])  # a retried attempt reports nothing
    reports.clear()

    gives_up = _with_function(name, Probe(OperationalError("server closed the connection"), fails=limit + 1))
    result = _run(gives_up)
    assert result.failed() and gives_up.function.calls == limit + 1
    expected = [(7, name, "OperationalError: a database error (its text is in the worker's log)")]
    assert reports == (expected if gives_up.reports else [])


@pytest.mark.parametrize("name", sorted(JOBS))
def test_any_other_error_fails_at_once_and_is_reported(name, reports):
    job = _with_function(name, Probe(ValueError("bad row"), fails=1))
    assert _run(job).failed() and job.function.calls == 1
    assert reports == ([(7, name, "ValueError: bad row")] if job.reports else [])


def test_a_jobs_own_errors_follow_its_own_policy(reports):
    diaries = _with_function(
        "diaries", Probe(UpstreamError("the summariser answered 503", service="summarizer"), fails=99)
    )
    assert _run(diaries).failed() and diaries.function.calls == diaries.retry.max_retries + 1 == 5
    audit = _with_function("audit", Probe(UpstreamError("the summariser answered 503", service="summarizer"), fails=99))
    assert _run(audit).failed() and audit.function.calls == 1  # not an error the audit retries


@pytest.mark.django_db(transaction=True)
def test_the_console_rerun_schedules_any_rerunnable_job_through_the_registry(reports):
    probe = Probe(RuntimeError("unused"), fails=0)
    turn_jobs.register(
        "probe", probe, reports=True, rerun_refusal=lambda pk: None, rerun_permission="memories.change_turn"
    )
    turn = TurnFactory()
    Turn.objects.filter(pk=turn.pk).update(
        memory_write={"status": "failed", "work": {"probe": "failed"}, "reason": "probe: RuntimeError: down"}
    )
    admin = User.objects.create_superuser("root", password="pw")
    assert "probe" in rerunnable_jobs()
    with jobs_in_process():
        outcome = job_rerun(turn_pk=turn.pk, work="probe", user=admin)
    assert outcome.status == "scheduled" and probe.calls == 1
    row = OutboxMessage.objects.get(dedup_key=turn_jobs.dedup_key("probe", turn.pk, "rerun-1"))
    assert (row.task, row.kwargs, row.outcome) == (turn_jobs.TASK, {"job": "probe", "turn_pk": turn.pk}, "SUCCESS")
    assert reports == [(turn.pk, "probe", None)]
    assert job_rerun(turn_pk=turn.pk, work="audit", user=admin).status == "not_rerunnable"  # not re-runnable


def test_a_rerunnable_job_must_report_and_name_its_permission():
    with pytest.raises(ValueError):
        turn_jobs.register("half", Probe(RuntimeError(), 0), rerun_refusal=lambda pk: None)

"""Work after a turn: every background job a committed write schedules is registered here and run by one task.

An app registers its job from its `AppConfig.ready` and supplies only the job's function:

    turn_jobs.register("tables", apply_turn_table_edits, queue="tables", reports=True, rerun_refusal=…)

and its commit hook schedules it inside the turn-commit transaction with `turn_jobs.schedule("tables", turn_pk)`.
This module owns everything else, once for every job (docs/architecture.md, "Work after a turn"):

- **scheduling**: `schedule` writes an outbox row for the one Celery task `turn_jobs.run` in the caller's
  transaction: sent after the commit, nothing on a rollback, re-sent by the relay until a worker ran it
  (docs/outbox.md). The task goes to the job's queue (`route`, in CELERY_TASK_ROUTES).
- **the retry policy**: an error of `TRANSIENT_ERRORS` (the database or Redis briefly away: the attempt rolled
  back) is retried the same way for every job (`TRANSIENT_RETRY`); a job may name further errors it retries
  under its own policy (the summariser's UpstreamError for diaries and compaction).
- **reporting**: a job registered with `reports=True` is named in the turn's `memoryWrite.work` by its commit
  hook; its end — success, an `Outcome` with a failure, or its final error (never an attempt that will be
  retried) — goes to the reporter memories installs (`memory_write_finish`).
- **the console's re-run**: `rerun_refusal` marks a job re-runnable; `schedule(..., rerun=n)` is its path.

memoryhub imports no app: apps plug in here as they do in memoryhub/runtimes/registry.py. `reset()` restores the
registrations made while Django loaded the apps (tests/conftest.py calls it after every test).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from celery import shared_task
from celery.utils.time import get_exponential_backoff_interval
from django.apps import apps
from django.db import DatabaseError

from memoryhub import outbox
from memoryhub.transient import TRANSIENT_ERRORS

TASK = "turn_jobs.run"


@dataclass(frozen=True)
class RetryPolicy:
    """How often and how late an attempt that raised a retried error runs again (full jitter, like Celery's)."""

    max_retries: int
    backoff_seconds: int  # the first wait's upper bound, doubled per retry
    backoff_max_seconds: int

    def countdown(self, retries: int) -> int:
        return get_exponential_backoff_interval(
            self.backoff_seconds, retries, self.backoff_max_seconds, full_jitter=True
        )


# The one policy for the database or Redis briefly away, whatever the job.
TRANSIENT_RETRY = RetryPolicy(max_retries=5, backoff_seconds=1, backoff_max_seconds=60)


@dataclass(frozen=True)
class Attempt:
    """Which attempt this is (0: the first) and how many more the job's own retried errors may have."""

    number: int
    retries_left: int


@dataclass(frozen=True)
class Outcome:
    """What a job answers when its end is more than a value: `failure` set reports it failed in memoryWrite."""

    outcome: str
    failure: str | None = None
    # Work that follows the reported end and cannot change it (the tables' webhook export), run after the report.
    then: Callable[[], object] | None = None


# (subject pk, attempt, **params) -> the task's result: an Outcome, or any JSON value (reported as success).
JobFunction = Callable[..., Any]
# (turn pk) -> why the job of that turn must not be re-run now, or None.
RerunRefusal = Callable[[int], "str | None"]
# (turn pk, job name, failure or None): records the end of a job the turn's memoryWrite names.
Reporter = Callable[[int, str, "str | None"], object]


@dataclass(frozen=True)
class TurnJob:
    name: str
    function: JobFunction
    queue: str
    # The argument naming the row the job follows: erasing a user deletes the outbox rows naming its rows by it
    # (`<model>_pk`, memories/lifecycle/services/erasure.py).
    subject: str
    retry_on: tuple[type[Exception], ...]  # the job's own retried errors, under `retry`
    retry: RetryPolicy
    reports: bool
    rerun_refusal: RerunRefusal | None
    rerun_permission: str

    @property
    def rerunnable(self) -> bool:
        return self.rerun_refusal is not None


_live: dict[str, TurnJob] = {}
_baseline: dict[str, TurnJob] | None = None
_reporter: list[Reporter] = []


def _current() -> dict[str, TurnJob]:
    global _baseline
    if _baseline is None and apps.ready:
        _baseline = dict(_live)
    return _live


def reset() -> None:
    """Restore the jobs registered while Django loaded the apps (for tests)."""
    global _live
    _current()
    if _baseline is not None:
        _live = dict(_baseline)


def register(
    name: str,
    function: JobFunction,
    *,
    queue: str = "celery",
    subject: str = "turn_pk",
    retry_on: tuple[type[Exception], ...] = (),
    retry: RetryPolicy = TRANSIENT_RETRY,
    reports: bool = False,
    rerun_refusal: RerunRefusal | None = None,
    rerun_permission: str = "",
    in_background: bool = False,
) -> None:
    """Declare the job `name`; `function(pk, attempt, **params)` does its work and is idempotent.

    `reports`: the commit hook names the job in memoryWrite.work, so its end is reported. `rerun_refusal` (with
    the `rerun_permission` an operator needs) makes a failed run re-runnable from the console. `in_background`:
    never run inside the request that scheduled it, even without a broker (outbound HTTP).
    """
    if rerun_refusal is not None and not (reports and rerun_permission):
        raise ValueError(f"{name}: a re-runnable job reports to memoryWrite and names the permission re-running it")
    _current()[name] = TurnJob(
        name, function, queue, subject, retry_on, retry, reports, rerun_refusal, rerun_permission
    )
    if in_background:
        outbox.run_in_background(TASK, when=_job_is(name))


def _job_is(name: str) -> Callable[[dict[str, Any]], bool]:
    def matches(kwargs: dict[str, Any]) -> bool:
        return kwargs.get("job") == name

    return matches


def set_reporter(reporter: Reporter) -> None:
    """Install the function recording a reporting job's end (memories: memory_write_finish)."""
    _reporter[:] = [reporter]


def names() -> list[str]:
    return list(_current())


def get(name: str) -> TurnJob:
    """The job registered under `name`; KeyError when none is."""
    return _current()[name]


def rerunnable() -> list[TurnJob]:
    return [job for job in _current().values() if job.rerunnable]


def dedup_key(name: str, pk: int, suffix: str = "") -> str:
    return f"{TASK}:{name}:{pk}" + (f":{suffix}" if suffix else "")


def schedule(name: str, pk: int, *, key: str = "", **params: Any) -> bool:
    """Inside the transaction the job follows: an outbox row running job `name` on row `pk` after the commit.

    One row per (job, pk, key), ever: scheduling it again does nothing and answers False. `key` tells apart
    several runs of one job on one row (a console re-run, a webhook attempt).
    """
    job = get(name)
    kwargs = {"job": name, job.subject: pk, **params}
    return outbox.schedule(TASK, kwargs, dedup_key=dedup_key(name, pk, key))


def route(name: str, args: Any, kwargs: dict | None, options: Any, task: Any = None, **_: Any) -> dict | None:
    """The Celery router (CELERY_TASK_ROUTES): the generic task runs on its job's queue."""
    if name != TASK:
        return None
    job = _current().get((kwargs or {}).get("job", ""))
    return {"queue": job.queue} if job else None


def failure_reason(exc: BaseException) -> str:
    """The reason a client reads in `memoryWrite`. A database error's text quotes SQL and stored values: the
    client gets its class only (the worker's log keeps the whole error)."""
    if isinstance(exc, DatabaseError):
        return f"{type(exc).__name__}: a database error (its text is in the worker's log)"
    return f"{type(exc).__name__}: {exc}"[:500]


def _report(job: TurnJob, pk: int, failure: str | None) -> None:
    if job.reports and _reporter:
        _reporter[0](pk, job.name, failure)


def _policy_for(job: TurnJob, exc: Exception) -> RetryPolicy | None:
    if isinstance(exc, TRANSIENT_ERRORS):
        return TRANSIENT_RETRY
    if job.retry_on and isinstance(exc, job.retry_on):
        return job.retry
    return None


def _run(task: Any, job: str, kwargs: dict[str, Any]) -> Any:
    spec = get(job)
    pk = kwargs.pop(spec.subject)
    retries = task.request.retries or 0
    try:
        result = spec.function(pk, Attempt(retries, max(spec.retry.max_retries - retries, 0)), **kwargs)
        if not isinstance(result, Outcome):
            _report(spec, pk, None)
            return result
        _report(spec, pk, result.failure)
        if result.then is not None:
            result.then()
        return result.outcome
    except Exception as exc:
        policy = _policy_for(spec, exc)
        if policy is not None and retries < policy.max_retries:
            raise task.retry(exc=exc, countdown=policy.countdown(retries), max_retries=policy.max_retries) from exc
        _report(spec, pk, failure_reason(exc))  # nothing when the end was reported already (memory_write_finish)
        raise


@shared_task(bind=True, name=TASK, acks_late=True)
def run_turn_job(self, job: str, **kwargs: Any) -> Any:
    """Run one registered job: retry what its policy retries, report its end, return its outcome."""
    return _run(self, job, kwargs)


def legacy_task(old_name: str, job: str, params: tuple[str, ...] = ()) -> Any:
    """A Celery task under a job's former task name, running the job exactly as `run_turn_job` does.

    Why: outbox rows and broker messages written before the jobs had one task still name the old tasks (the
    relay re-sends a pending row under the name it was written with); without these a deployment upgraded with
    such rows pending would fail them as unregistered tasks. Nothing schedules these names any more. `params`:
    the names of the old task's arguments after the subject's, for messages that passed them by position.
    """

    @shared_task(bind=True, name=old_name, acks_late=True)
    def run_legacy(self, *args: Any, **kwargs: Any) -> Any:
        names = (get(job).subject, *params)
        return _run(self, job, {**dict(zip(names, args, strict=False)), **kwargs})

    return run_legacy

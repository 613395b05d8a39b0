"""Fixtures and pytest hooks only; helpers live in tests/support/, model builders in tests/factories.py.

Tests that need PostgreSQL, Redis or a Celery worker are skipped on the embedded default, but FAIL
when MEMORYHUB_REQUIRE_SERVICES=1 (the CI run on real services may skip nothing).
"""

from __future__ import annotations

import os

import pytest
from django.conf import settings
from django.core.cache import cache

from memoryhub import faults, turn_jobs
from memoryhub.api import auth_failures
from memoryhub.runtimes import registry
from tests.support import openapi
from tests.support.api import ProductApi
from tests.support.services import MARKERS, REQUIRE_SERVICES, service_missing

# The tests' own SECRET_KEY (settings.py lets the test runner generate one): every server and worker the suite
# starts inherits it, so they verify the tool tokens and sessions this process signs.
os.environ.setdefault("SECRET_KEY", settings.SECRET_KEY)


@pytest.fixture(autouse=True)
def _responses_match_the_schema():
    """Every API response of the test validates against the OpenAPI schema (tests/support/openapi.py)."""
    openapi.install()
    openapi.document()  # generated once, before the test: never inside a timed request
    openapi.take_violations()
    yield
    violations = openapi.take_violations()
    assert not violations, "responses the OpenAPI schema does not describe:\n" + "\n".join(violations)


def pytest_sessionfinish(session, exitstatus):
    """A full run (no paths, -k or -m) also fails for an operation of the schema no test got a 2xx answer from."""
    option = session.config.option
    whole = not option.file_or_dir and not option.keyword and not option.markexpr and session.testscollected > 1000
    if exitstatus != 0 or not whole or session.testsfailed:
        return
    missing = openapi.unexercised()
    if missing:
        message = f"FAIL: operations of the OpenAPI schema no test got a success from: {', '.join(missing)}"
        reporter = session.config.pluginmanager.get_plugin("terminalreporter")
        (reporter.write_line if reporter else print)(message)
        session.exitstatus = 1


def pytest_runtest_setup(item):
    for marker in MARKERS:
        if item.get_closest_marker(marker) is None:
            continue
        reason = service_missing(marker)
        if reason and REQUIRE_SERVICES:
            pytest.fail(f"{marker}: {reason} (MEMORYHUB_REQUIRE_SERVICES=1 forbids skipping)")
        if reason:
            pytest.skip(reason)


@pytest.fixture(autouse=True, scope="session")
def _background_work_settles():
    """Every test client's request returns once the background work it started has finished.

    Without a broker, webhook deliveries run on background threads after the response (memoryhub.outbox
    `run_in_background`): the request does not wait for them, the test does, before it reads their outcome
    (and before its next request: the in-memory SQLite database allows one writer at a time). A request
    passing `mh_settle=False` returns at once, as the server's response did.
    """
    from django.test.client import Client

    from memoryhub import outbox

    original = Client.request

    def request(self, **environ):
        settle = environ.pop("mh_settle", True)
        response = original(self, **environ)
        if settle:
            outbox.background_wait()
        return response

    Client.request = request  # type: ignore[method-assign]
    yield
    Client.request = original  # type: ignore[method-assign]


@pytest.fixture(autouse=True)
def _background_threads_only_with_committed_data(request):
    """A test inside one uncommitted transaction (`db`) runs outbound work in its request, as a broker-less
    process did before: a background thread's own connection could neither see nor lock past that transaction.
    Transactional tests (and live servers) keep the threads, as production does, and wait for them."""
    from django.test import override_settings

    from memoryhub import outbox

    marker = request.node.get_closest_marker("django_db")
    transactional = bool(marker and marker.kwargs.get("transaction")) or bool(
        {"transactional_db", "live_server"} & set(request.fixturenames)
    )
    if transactional:  # (not the `settings` fixture: some tests name a parameter `settings`)
        request.getfixturevalue("transactional_db")  # set up first, so flushed only after the wait below
    with override_settings(OUTBOX_BACKGROUND_THREADS=transactional):
        yield
        if transactional:
            outbox.background_wait()  # work started outside a client request (or with mh_settle=False)


@pytest.fixture(autouse=True)
def _clear_cache():
    from memories.longterm import resident as held_memories

    cache.clear()
    auth_failures.reset()  # this process's blocked addresses and verified keys
    held_memories.clear()  # long-term memories this process holds (ids repeat once tables are flushed)
    yield


@pytest.fixture(autouse=True)
def _registry_reset():
    """Runtimes, sources, commit hooks, sections and turn jobs a test registered or removed are restored after it."""
    yield
    registry.reset()
    turn_jobs.reset()


@pytest.fixture(autouse=True)
def _session_worker_drained(request):
    """Once the suite's Celery worker runs, it executes the tasks every test's commits send through the broker.
    A transactional test waits (at most 10 s) for its outbox rows to be acknowledged before its tables are
    truncated: a task still writing would otherwise deadlock with the TRUNCATE of the teardown."""
    marker = request.node.get_closest_marker("django_db")
    if not (_SESSION_BEAT and marker and marker.kwargs.get("transaction")):
        yield
        return
    request.getfixturevalue("transactional_db")  # set up first, so torn down (flushed) after this wait
    yield
    import time

    from memoryhub.outbox.models import OutboxMessage

    deadline = time.monotonic() + 10
    while OutboxMessage.objects.filter(done_at__isnull=True).exists() and time.monotonic() < deadline:
        time.sleep(0.2)


@pytest.fixture
def alice(db) -> ProductApi:
    return ProductApi("alice-app")


@pytest.fixture
def bob(db) -> ProductApi:
    return ProductApi("bob-app")


@pytest.fixture
def fault_injection(settings):
    """memoryhub.faults switched on for one test; the handlers it registers are dropped afterwards."""
    settings.FAULT_INJECTION = True
    yield faults
    faults.reset()


@pytest.fixture(scope="session")
def celery_worker_process(django_db_setup, django_db_blocker):
    """A real Celery worker (tests/support/celery_worker.py) and `celery beat` (the outbox relay) on the
    configured broker and the test database.

    Tests using it must be `django_db(transaction=True)` so the worker sees committed rows.
    """
    import tempfile
    from pathlib import Path

    from memoryhub.celery import app
    from tests.support.processes import start_celery_beat, start_celery_worker, stop_process_group, wait_for

    if settings.CELERY_TASK_ALWAYS_EAGER or not settings.IS_POSTGRES:
        reason = "a real worker needs a broker and PostgreSQL"
        if REQUIRE_SERVICES:
            pytest.fail(reason)
        pytest.skip(reason)
    app.control.purge()  # tasks left over from an earlier run must not touch this one
    worker = start_celery_worker()
    with tempfile.TemporaryDirectory(prefix="memoryhub-beat-") as schedule_dir:
        beat = start_celery_beat(Path(schedule_dir))
        _SESSION_BEAT.append(beat)
        try:
            wait_for(lambda: _worker_answers(app), timeout=60, message="the Celery worker to start")
            yield worker
        finally:
            _SESSION_BEAT.clear()
            stop_process_group(beat)
            stop_process_group(worker)


_SESSION_BEAT: list = []


@pytest.fixture
def session_beat_paused():
    """Stop the suite's beat (if an earlier test started it) for one test that runs its own outbox relay:
    otherwise, once this test's rows pass OUTBOX_REDISPATCH_AFTER_SECONDS, the suite's relay sends them
    through the suite's broker, which the test did not take down."""
    import os
    import signal

    paused = [beat for beat in _SESSION_BEAT if beat.poll() is None]
    for beat in paused:
        os.killpg(beat.pid, signal.SIGSTOP)
    try:
        yield
    finally:
        for beat in paused:
            os.killpg(beat.pid, signal.SIGCONT)


def _worker_answers(app) -> bool:
    try:
        return bool(app.control.ping(timeout=0.5))
    except Exception:
        return False


@pytest.fixture(scope="session")
def _stub_server():
    from tests.support.http_server import StubHttpServer

    server = StubHttpServer().start()
    yield server
    server.stop()


@pytest.fixture
def stub_server(_stub_server):
    """A real HTTP server on 127.0.0.1 with no routes and no recorded requests (see tests/support)."""
    return _stub_server.reset()

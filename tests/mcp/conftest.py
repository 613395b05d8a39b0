"""A live memoryhub (gunicorn, tests/support/processes.py) on the test database, for clients no one here wrote."""

from __future__ import annotations

import pytest
from django.conf import settings

from tests.support.processes import start_web_server, subprocess_env
from tests.support.services import REQUIRE_SERVICES


@pytest.fixture(scope="module")
def memoryhub_server(django_db_setup, django_db_blocker):
    """gunicorn with two workers on the test database; tests using it are django_db(transaction=True)."""
    if not settings.IS_POSTGRES:  # the in-memory SQLite test database cannot be shared with another process
        reason = "a live server shares the test database only on PostgreSQL"
        if REQUIRE_SERVICES:
            pytest.fail(reason)
        pytest.skip(reason)
    # Tool tokens are signed with SECRET_KEY: the server must verify what this process mints.
    server = start_web_server(subprocess_env(SECRET_KEY=settings.SECRET_KEY), workers=2)
    yield server
    server.stop()

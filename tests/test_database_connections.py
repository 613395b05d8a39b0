"""DATABASE_CONNECTIONS (docs/production.md): persistent connections (the default) or psycopg's pool.

The settings are read in a fresh interpreter, as a server reads them at start-up; the pool is then exercised
for real by gunicorn on the test database (bench/load.py --side-by-side measures both modes under load and
through a PostgreSQL restart).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys

import httpx
import pytest

from tests.support.processes import ROOT, start_web_server, subprocess_env

URL = "postgres://postgres@127.0.0.1:5432/anything"  # settings only: nothing connects
PRINT = (
    "import json, django; django.setup(); from django.conf import settings; d = settings.DATABASES['default'];"
    "print(json.dumps({'age': d['CONN_MAX_AGE'], 'checks': d['CONN_HEALTH_CHECKS'], 'options': d['OPTIONS']}))"
)


def database_settings(**env: str) -> subprocess.CompletedProcess:
    base = {k: v for k, v in os.environ.items() if not k.startswith(("DATABASE_", "PYTEST", "MEMORYHUB_FAULT"))}
    return subprocess.run(
        [sys.executable, "-c", PRINT],
        cwd=ROOT,
        env={**base, "DJANGO_SETTINGS_MODULE": "memoryhub.settings", "DATABASE_URL": URL, **env},
        capture_output=True,
        text=True,
        timeout=60,
    )


def test_persistent_connections_with_health_checks_are_the_default():
    result = database_settings()
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout) == {"age": 60, "checks": True, "options": {"connect_timeout": 5}}


def test_the_pool_replaces_persistent_connections_and_waits_no_longer_than_a_connect():
    result = database_settings(DATABASE_CONNECTIONS="pool", DATABASE_POOL_MAX_SIZE="3", DATABASE_CONNECT_TIMEOUT="4")
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout) == {
        "age": 0,  # Django refuses a pool with persistent connections
        "checks": True,  # the pool checks a connection on checkout
        "options": {"connect_timeout": 4, "pool": {"min_size": 1, "max_size": 3, "timeout": 4}},
    }


def test_an_unknown_mode_stops_start_up():
    result = database_settings(DATABASE_CONNECTIONS="pooled")
    assert result.returncode != 0
    assert "DATABASE_CONNECTIONS must be persistent or pool" in result.stderr


@pytest.mark.requires_postgres
@pytest.mark.django_db(transaction=True)
def test_gunicorn_serves_from_the_pool(alice):
    server = start_web_server(subprocess_env(DATABASE_CONNECTIONS="pool"), workers=2)
    try:
        headers = {"Authorization": f"Bearer {alice.key}"}
        url = f"{server.url}/v1/users/u1/conversations/c1/memory"
        for revision in range(5):  # each request borrows a connection and gives it back
            written = httpx.put(url, json={"expectedRevision": revision, "memory": {"n": revision}}, headers=headers)
            assert written.status_code == 200, written.text
        assert httpx.get(url, headers=headers).json() == {"revision": 5, "memory": {"n": 4}}
    finally:
        server.stop()

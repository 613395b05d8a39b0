"""The production server: gunicorn (memoryhub/gunicorn.conf.py) with several workers serves the API, the admin
and its static files (whitenoise, DEBUG off) and one /metrics that adds up every worker, dead ones included.

gunicorn runs as a subprocess on the test database, so these tests need PostgreSQL.
"""

from __future__ import annotations

import importlib.util
import json
import os
import re
import signal
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import httpx
import pytest

from tests.support.processes import GUNICORN, ROOT, start_web_server, subprocess_env, wait_for


@pytest.fixture
def server(tmp_path):
    running = start_web_server(subprocess_env(PROMETHEUS_MULTIPROC_DIR=str(tmp_path)), workers=2)
    running.metrics_dir = tmp_path
    yield running
    running.stop()


def healthz_count(server) -> float:
    text = httpx.get(f"{server.url}/metrics", timeout=10).text
    pattern = r'^memoryhub_http_requests_total\{method="HEAD",route="healthz",status="200"\} (\S+)$'
    found = re.search(pattern, text, re.M)
    return float(found.group(1)) if found else 0.0


def worker_pids(server) -> set[int]:
    return {int(p.stem.rsplit("_", 1)[1]) for p in server.metrics_dir.glob("counter_*.db")}


@pytest.mark.requires_postgres
@pytest.mark.django_db(transaction=True)
def test_the_api_and_the_admin_with_its_static_files(server, alice):
    headers = {"Authorization": f"Bearer {alice.key}"}
    memory = httpx.get(f"{server.url}/v1/users/u1/conversations/c1/memory", headers=headers, timeout=10)
    assert memory.status_code == 200 and memory.json() == {"revision": 0, "memory": None}
    unauthenticated = httpx.get(f"{server.url}/v1/users/u1/conversations/c1/memory", timeout=10)
    assert unauthenticated.status_code == 401 and unauthenticated.json()["error"]["code"] == "unauthenticated"
    login = httpx.get(f"{server.url}/admin/login/", timeout=10)
    assert login.status_code == 200 and "/static/admin/css/base.css" in login.text
    css = httpx.get(f"{server.url}/static/admin/css/base.css", timeout=10)
    assert css.status_code == 200 and css.headers["content-type"].startswith("text/css")
    assert "max-age" in css.headers["cache-control"]
    docs = httpx.get(f"{server.url}/api/docs/", timeout=10)
    assert docs.status_code == 200
    bundle = re.search(r'src="(/static/drf_spectacular_sidecar/[^"]+\.js)"', docs.text)
    assert bundle and httpx.get(f"{server.url}{bundle.group(1)}", timeout=10).status_code == 200


@pytest.mark.requires_postgres
@pytest.mark.django_db(transaction=True)
def test_metrics_add_up_every_worker_and_keep_the_counts_of_a_dead_one(server):
    def hit(_: int) -> int:
        with httpx.Client(timeout=10) as client:  # a new connection each: the workers share the requests
            return client.head(f"{server.url}/healthz").status_code  # HEAD: start_web_server's polls are GETs

    before, requests = healthz_count(server), 0
    while len(worker_pids(server)) < 2 and requests < 400:
        with ThreadPoolExecutor(max_workers=8) as pool:
            assert set(pool.map(hit, range(40))) == {200}
        requests += 40
    assert len(worker_pids(server)) >= 2, "one worker served every request"
    # the sum is exactly what was sent, whichever worker answered
    assert healthz_count(server) - before == requests

    victim = sorted(worker_pids(server))[0]
    os.kill(victim, signal.SIGKILL)  # gunicorn replaces it; child_exit marks it dead
    wait_for(lambda: server.answers(), timeout=30, message="gunicorn to answer again")
    assert healthz_count(server) - before >= requests  # the dead worker's requests still count
    assert server.process.poll() is None


def test_dev_serve_with_workers_runs_the_same_gunicorn_command(monkeypatch):
    spec = importlib.util.spec_from_file_location("dev_for_serving", ROOT / "dev.py")
    assert spec and spec.loader
    dev = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(dev)
    monkeypatch.setattr(dev, "ensure_venv", lambda: Path(sys.executable))
    key = json.dumps({"productId": "p1", "apiKey": "mhk_x"})
    monkeypatch.setattr(dev, "manage", lambda py, *a, **k: subprocess.CompletedProcess(a, 0, stdout=key))
    commands: list[list[str]] = []
    monkeypatch.setattr(dev.os, "execv", lambda path, argv: commands.append(argv[1:]))
    monkeypatch.setattr(dev.os, "chdir", lambda path: None)
    monkeypatch.delenv("MEMORYHUB_EMBEDDED_BEAT", raising=False)
    dev.cmd_serve(8123, workers=3)
    dev.cmd_serve(8123)
    assert commands[0] == ["-m", *GUNICORN, "--bind", "127.0.0.1:8123", "--workers", "3"]
    assert commands[1] == ["manage.py", "runserver", "127.0.0.1:8123", "--noreload"]  # no --insecure
    assert os.environ["MEMORYHUB_EMBEDDED_BEAT"] == "1"  # its server runs the sweeps (memoryhub/embedded_beat.py)

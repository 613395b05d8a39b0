"""A whole memoryhub deployment on this machine, private to one test or benchmark run: its own PostgreSQL
cluster (tests/support/postgres.py), its own redis-server (working set and broker), gunicorn, and optionally
`celery worker` + `celery beat`. Nothing is shared with other runs, so it may be restarted at will.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys

from tests.support.postgres import PrivateCluster
from tests.support.processes import (
    ROOT,
    RedisServer,
    WebServer,
    start_celery_beat,
    start_celery_worker,
    start_web_server,
    stop_process_group,
)

DATABASE = "memoryhub"
# The command of deploy/compose.yaml's migrate service, as the stack runs it (tests/test_deploy.py checks it).
MIGRATE = ["manage.py", "migrate", "--noinput"]


class Stack:
    def __init__(self, *, web_workers: int = 2, celery: bool = False, env: dict[str, str] | None = None) -> None:
        self.web_workers = web_workers
        self.celery = celery
        self.extra_env = env or {}
        self.postgres = PrivateCluster()
        self.redis = RedisServer()
        self.web: WebServer | None = None
        self.processes: list[subprocess.Popen] = []
        self.env: dict[str, str] = {}

    def start(self) -> Stack:
        self.postgres.create()
        self.postgres.psql(f"CREATE DATABASE {DATABASE}")
        self.redis.start()
        blocked = {
            "DATABASE_URL",
            "REDIS_URL",
            "CELERY_BROKER_URL",
            "MEMORYHUB_FAULT_INJECTION",
            "DJANGO_SETTINGS_MODULE",
        }
        self.env = {
            **{k: v for k, v in os.environ.items() if k not in blocked and not k.startswith("PYTEST")},
            "DATABASE_URL": self.postgres.url(DATABASE),
            "REDIS_URL": self.redis.url,
            "SECRET_KEY": "memoryhub-private-stack",
            "MEMORYHUB_RATE_LIMIT": "1000000/min",
            **self.extra_env,
        }
        self.manage(*MIGRATE[1:])
        if self.celery:
            beat_dir = self.postgres.dir / "beat"
            beat_dir.mkdir()
            self.processes += [start_celery_worker(self.env, faults=False), start_celery_beat(beat_dir, self.env)]
        self.web = start_web_server(self.env, workers=self.web_workers)
        return self

    def manage(self, *args: str) -> str:
        result = subprocess.run(
            [sys.executable, "manage.py", *args], cwd=ROOT, env=self.env, capture_output=True, text=True, timeout=600
        )
        if result.returncode:
            raise RuntimeError(f"manage.py {' '.join(args)} failed:\n{result.stdout}\n{result.stderr}")
        return result.stdout

    def product_key(self, name: str) -> str:
        return json.loads(self.manage("create_product", "--name", name, "--json").strip().splitlines()[-1])["apiKey"]

    @property
    def url(self) -> str:
        assert self.web is not None
        return self.web.url

    def stop(self) -> None:
        if self.web is not None:
            self.web.stop()
        for process in reversed(self.processes):
            stop_process_group(process)
        self.redis.stop()
        self.postgres.destroy()

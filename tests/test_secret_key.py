"""SECRET_KEY: one key for every process, or the server refuses to start (memoryhub/secret_key.py).

A random key per process made the tool tokens, MCP and admin sessions of one gunicorn worker fail on the next.
Servers (gunicorn, runserver, Celery) now refuse to start without SECRET_KEY unless DEBUG is on; one-off
manage.py commands still run with nothing set; `dev.py serve` keeps a key in var/secret-key and passes it on.
"""

from __future__ import annotations

import importlib.util
import os
import stat
import subprocess
import sys
from pathlib import Path

import httpx
import pytest

from tests.support.processes import GUNICORN, ROOT, free_port, healthz_answers, stop_process_group, wait_for

# What the embedded default sees with nothing set: no service, no key, no marker.
UNSET = ("SECRET_KEY", "DEBUG", "DATABASE_URL", "REDIS_URL", "CELERY_BROKER_URL", "MEMORYHUB_ONE_OFF_COMMAND")


def bare_env(tmp_path: Path, **extra: str) -> dict[str, str]:
    env = {name: value for name, value in os.environ.items() if name not in UNSET}
    return {**env, "MEMORYHUB_VAR_DIR": str(tmp_path), **extra}


def run(args: list[str], env: dict[str, str], timeout: float = 120) -> subprocess.CompletedProcess:
    return subprocess.run(args, cwd=ROOT, env=env, capture_output=True, text=True, timeout=timeout)


def test_gunicorn_refuses_to_start_without_a_secret_key(tmp_path):
    args = [sys.executable, "-m", *GUNICORN, "--bind", f"127.0.0.1:{free_port()}", "--workers", "2"]
    result = run(args, bare_env(tmp_path, GUNICORN_ACCESS_LOG=""), timeout=60)
    assert result.returncode != 0
    assert "SECRET_KEY is not set" in result.stderr


def test_runserver_refuses_to_start_without_a_secret_key(tmp_path):
    args = [sys.executable, "manage.py", "runserver", "--noreload", f"127.0.0.1:{free_port()}"]
    result = run(args, bare_env(tmp_path), timeout=60)
    assert result.returncode != 0
    assert "SECRET_KEY is not set" in result.stderr


@pytest.mark.parametrize("command", [["shell", "-c", "print('ran')"], ["erase_user", "--help"]])
def test_a_keyed_command_refuses_to_start_without_a_secret_key(tmp_path, command):
    result = run([sys.executable, "manage.py", *command], bare_env(tmp_path), timeout=60)
    assert result.returncode == 1 and "ran" not in result.stdout
    assert result.stderr.startswith(f"manage.py {command[0]}: SECRET_KEY is not set")
    assert "Traceback" not in result.stderr


def test_celery_refuses_to_start_without_a_secret_key(tmp_path):
    result = run([sys.executable, "-m", "celery", "-A", "memoryhub", "report"], bare_env(tmp_path), timeout=60)
    assert result.returncode != 0
    assert "SECRET_KEY is not set" in result.stderr


def test_one_off_commands_and_debug_run_with_nothing_set(tmp_path):
    assert run([sys.executable, "manage.py", "migrate", "--noinput"], bare_env(tmp_path)).returncode == 0
    key = run([sys.executable, "manage.py", "dev_key", "--file", str(tmp_path / "k.json")], bare_env(tmp_path))
    assert key.returncode == 0 and '"apiKey"' in key.stdout
    check = [sys.executable, "-c", "import django; django.setup()"]
    assert run(check, bare_env(tmp_path, DJANGO_SETTINGS_MODULE="memoryhub.settings", DEBUG="1")).returncode == 0


def load_dev():
    spec = importlib.util.spec_from_file_location("dev_under_test", ROOT / "dev.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_dev_serve_keeps_one_secret_key_0600_in_the_var_dir(monkeypatch, tmp_path):
    monkeypatch.delenv("SECRET_KEY")
    monkeypatch.setenv("MEMORYHUB_VAR_DIR", str(tmp_path))
    dev = load_dev()
    assert tmp_path / "secret-key" == dev.SECRET_KEY_FILE
    first = dev.secret_key()
    assert len(first) >= 50 and stat.S_IMODE(dev.SECRET_KEY_FILE.stat().st_mode) == 0o600
    dev.SECRET_KEY_FILE.chmod(0o644)
    assert load_dev().secret_key() == first  # the next serve
    assert stat.S_IMODE(dev.SECRET_KEY_FILE.stat().st_mode) == 0o600
    monkeypatch.setenv("SECRET_KEY", "from-the-environment")
    assert dev.secret_key() == "from-the-environment"  # an explicit key wins over the file


def test_dev_serve_workers_accept_each_others_tool_tokens(monkeypatch, tmp_path):
    """The review's case: `dev.py serve --workers 2` with nothing set; every tool call with one token is 200."""
    for name in UNSET:
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("MEMORYHUB_VAR_DIR", str(tmp_path))
    monkeypatch.setenv("GUNICORN_ACCESS_LOG", "")
    monkeypatch.setenv("PROMETHEUS_MULTIPROC_DIR", str(tmp_path / "metrics"))
    dev = load_dev()
    monkeypatch.setattr(dev, "ensure_venv", lambda: Path(sys.executable))
    started: list[subprocess.Popen] = []
    monkeypatch.setattr(dev.os, "chdir", lambda path: None)
    monkeypatch.setattr(
        dev.os,
        "execv",
        lambda py, argv: started.append(subprocess.Popen(argv, cwd=ROOT, env=dict(os.environ), start_new_session=True)),
    )
    port = free_port()
    dev.cmd_serve(port, workers=2)
    assert started, "serve did not start gunicorn"
    base = f"http://127.0.0.1:{port}"
    try:
        wait_for(lambda: healthz_answers(base), timeout=60, message="dev.py serve --workers 2")
        key = dev.dev_key(Path(sys.executable), False)
        minted = httpx.post(
            f"{base}/v1/users/u1/conversations/c1/tool-tokens",
            json={},
            headers={"Authorization": f"Bearer {key}"},
            timeout=10,
        )
        assert minted.status_code == 201, minted.text
        token = minted.json()["token"]
        statuses = [
            httpx.post(
                f"{base}/v1/tools/call",
                json={"name": "get_memory", "arguments": {}},
                headers={"Authorization": f"Bearer {token}"},
                timeout=10,
            ).status_code
            for _ in range(20)
        ]
        assert statuses == [200] * 20
        assert stat.S_IMODE((tmp_path / "secret-key").stat().st_mode) == 0o600
    finally:
        for process in started:
            stop_process_group(process)

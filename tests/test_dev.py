"""dev.py: standard library only, quiet pip, and a dev key that survives restarts (kept 0600 in var/)."""

from __future__ import annotations

import ast
import importlib.util
import io
import json
import socket
import stat
import subprocess
import sys
from contextlib import redirect_stdout
from pathlib import Path

import pytest
from django.core.management import CommandError, call_command

from memories.models import ApiKey, Product
from memories.services.products import api_key_authenticate

ROOT = Path(__file__).resolve().parent.parent


def load_dev():
    spec = importlib.util.spec_from_file_location("dev_under_test", ROOT / "dev.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def dev_key(path: Path, *extra: str) -> dict:
    out = io.StringIO()
    call_command("dev_key", "--file", str(path), *extra, stdout=out)
    return json.loads(out.getvalue().strip().splitlines()[-1])


def test_dev_py_imports_the_standard_library_only():
    tree = ast.parse((ROOT / "dev.py").read_text())
    imported = {
        name.split(".")[0]
        for node in ast.walk(tree)
        if isinstance(node, ast.Import | ast.ImportFrom)
        for name in ([a.name for a in node.names] if isinstance(node, ast.Import) else [node.module or ""])
    }
    assert imported and imported <= set(sys.stdlib_module_names), imported - set(sys.stdlib_module_names)


@pytest.mark.django_db
def test_the_key_is_kept_0600_and_reused(tmp_path):
    path = tmp_path / "var" / "dev-key.json"
    first = dev_key(path)
    assert first["reused"] is False and first["apiKey"].startswith("mhk_")
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert json.loads(path.read_text()) == {"productId": first["productId"], "apiKey": first["apiKey"]}
    again = dev_key(path)  # the next serve
    assert again == {"productId": first["productId"], "apiKey": first["apiKey"], "reused": True}
    assert Product.objects.filter(name="dev").count() == 1 and ApiKey.objects.count() == 1
    path.chmod(0o644)
    dev_key(path)
    assert stat.S_IMODE(path.stat().st_mode) == 0o600  # re-asserted on every run


@pytest.mark.django_db
def test_new_key_rotates_for_the_same_product_and_revokes_the_old(tmp_path):
    path = tmp_path / "dev-key.json"
    first = dev_key(path)
    rotated = dev_key(path, "--new-key")
    assert rotated["productId"] == first["productId"] and rotated["apiKey"] != first["apiKey"]
    assert rotated["rotated"] is True
    assert api_key_authenticate(first["apiKey"]) is None  # revoked
    assert api_key_authenticate(rotated["apiKey"]).product_id == first["productId"]
    assert dev_key(path)["apiKey"] == rotated["apiKey"]
    assert stat.S_IMODE(path.stat().st_mode) == 0o600


@pytest.mark.django_db
def test_a_lost_key_file_keeps_the_dev_products_data(tmp_path):
    first = dev_key(tmp_path / "a.json")
    second = dev_key(tmp_path / "b.json")  # the file is gone (or another checkout): same product, new key
    assert second["productId"] == first["productId"] and second["apiKey"] != first["apiKey"]
    (tmp_path / "c.json").write_text("not json")
    assert dev_key(tmp_path / "c.json")["productId"] == first["productId"]


def test_pip_output_is_shown_only_when_pip_fails(monkeypatch, capsys):
    dev = load_dev()
    outcomes = iter([0, 3])

    def fake_run(*args, **kwargs):
        assert kwargs["stdout"] is subprocess.PIPE  # captured, never passed through
        return subprocess.CompletedProcess(args, next(outcomes), stdout="WARNING: 90 lines of pip noise\n")

    monkeypatch.setattr(dev, "run", fake_run)
    dev.quiet_pip("pip", "install", failure="pip install failed")
    assert capsys.readouterr().out == ""
    with pytest.raises(SystemExit) as exit_info:
        dev.quiet_pip("pip", "install", failure="pip install failed")
    assert exit_info.value.code == "[dev] pip install failed"
    assert "90 lines of pip noise" in capsys.readouterr().out


def test_serve_prints_the_kept_key_every_time(monkeypatch, tmp_path):
    dev = load_dev()
    calls = []
    monkeypatch.setattr(dev, "ensure_venv", lambda: Path(sys.executable))
    monkeypatch.setattr(dev, "KEY_FILE", dev.ROOT / "var" / "dev-key.json")

    def fake_manage(py, *args, **kwargs):
        calls.append([str(a) for a in args])
        out = json.dumps({"productId": "p1", "apiKey": "mhk_kept", "reused": True}) if args[0] == "dev_key" else ""
        return subprocess.CompletedProcess(args, 0, stdout=out)

    monkeypatch.setattr(dev, "manage", fake_manage)
    monkeypatch.setattr(dev.os, "execv", lambda *a: calls.append(["execv", *a[1][1:3]]))
    out = io.StringIO()
    with redirect_stdout(out):
        dev.cmd_serve(8123, new_key=True)
    assert ["dev_key", "--file", str(dev.KEY_FILE), "--new-key"] in calls
    assert calls[-1] == ["execv", "manage.py", "runserver"]
    assert "API key     mhk_kept" in out.getvalue() and "var/dev-key.json" in out.getvalue()


def test_superuser_noinput_reads_the_environment(monkeypatch):
    dev = load_dev()
    calls = []
    monkeypatch.setattr(dev, "ensure_venv", lambda: Path(sys.executable))
    monkeypatch.setattr(dev, "manage", lambda py, *a, **k: calls.append(a) or subprocess.CompletedProcess(a, 0))
    monkeypatch.setattr(sys, "argv", ["dev.py", "superuser", "--noinput"])
    with pytest.raises(SystemExit):
        dev.main()
    assert calls[-1] == ("createsuperuser", "--noinput")


@pytest.mark.django_db
def test_createsuperuser_noinput_takes_the_documented_variables(monkeypatch):
    from django.contrib.auth import get_user_model

    monkeypatch.setenv("DJANGO_SUPERUSER_USERNAME", "ops")
    monkeypatch.setenv("DJANGO_SUPERUSER_EMAIL", "ops@example.com")
    monkeypatch.setenv("DJANGO_SUPERUSER_PASSWORD", "a long enough password 42")
    call_command("createsuperuser", "--noinput", stdout=io.StringIO())
    user = get_user_model().objects.get(username="ops")
    assert user.is_superuser and user.check_password("a long enough password 42")


def test_superuser_noinput_stops_before_creating_when_the_password_check_fails(monkeypatch):
    dev = load_dev()
    calls = []
    answers = {"check_superuser_password": 1}
    monkeypatch.setattr(dev, "ensure_venv", lambda: Path(sys.executable))
    monkeypatch.setattr(
        dev, "manage", lambda py, *a, **k: calls.append(a) or subprocess.CompletedProcess(a, answers.get(a[0], 0))
    )
    monkeypatch.setattr(sys, "argv", ["dev.py", "superuser", "--noinput"])
    with pytest.raises(SystemExit) as stop:
        dev.main()
    assert stop.value.code == 1 and ("check_superuser_password",) in calls
    assert not [c for c in calls if c[0] == "createsuperuser"]


@pytest.mark.parametrize("weak", ["1", "12345678901234", "password1234", "ops-ops-ops-1"])
def test_the_password_check_refuses_what_the_validators_refuse(monkeypatch, weak):
    monkeypatch.setenv("DJANGO_SUPERUSER_USERNAME", "ops-ops-ops-1")
    monkeypatch.setenv("DJANGO_SUPERUSER_PASSWORD", weak)
    with pytest.raises(CommandError, match="DJANGO_SUPERUSER_PASSWORD: "):
        call_command("check_superuser_password")
    monkeypatch.setenv("DJANGO_SUPERUSER_PASSWORD", "a long enough password 42")
    call_command("check_superuser_password")  # the documented example passes


def test_the_key_file_lives_next_to_the_database(monkeypatch, tmp_path):
    monkeypatch.delenv("MEMORYHUB_VAR_DIR", raising=False)
    assert load_dev().KEY_FILE == ROOT / "var" / "dev-key.json"
    monkeypatch.setenv("MEMORYHUB_VAR_DIR", str(tmp_path))
    dev = load_dev()
    expected = tmp_path / "dev-key.json"
    key_file = dev.KEY_FILE
    assert key_file == expected
    assert dev.shown(dev.KEY_FILE) == str(expected)


def requirement_names(path: Path) -> set[str]:
    lines = (line.split("#")[0].strip() for line in path.read_text().splitlines())
    return {line.split("==")[0].split("[")[0].lower() for line in lines if line and not line.startswith("-r")}


def test_serve_installs_only_what_serving_needs_and_test_adds_the_tools(monkeypatch, tmp_path):
    dev = load_dev()
    serving = requirement_names(ROOT / "requirements.txt")
    assert {"django", "gunicorn", "whitenoise", "celery"} <= serving
    assert not {"pytest", "playwright", "ruff", "mypy", "hypothesis", "schemathesis"} & serving
    assert "-r requirements.txt" in (ROOT / "requirements-dev.txt").read_text().splitlines()
    assert {"pytest", "playwright", "ruff", "mypy"} <= requirement_names(ROOT / "requirements-dev.txt")
    installed: list[list[str]] = []
    monkeypatch.setattr(dev, "venv_python", lambda: Path(sys.executable))
    monkeypatch.setattr(dev, "STAMPS", {False: tmp_path / "serve.sha256", True: tmp_path / "dev.sha256"})
    monkeypatch.setattr(dev, "quiet_pip", lambda *args, failure: installed.append([str(a) for a in args]))
    dev.ensure_venv()
    assert [args[-1] for args in installed] == [str(dev.REQUIREMENTS), str(dev.MODEL_REQUIREMENTS)]
    installed.clear()
    dev.ensure_venv(dev=True)
    assert installed[0][-1] == str(dev.DEV_REQUIREMENTS)
    installed.clear()
    dev.ensure_venv()  # both stamps kept: nothing to install again
    dev.ensure_venv(dev=True)
    assert installed == []


def test_serve_on_a_busy_port_fails_before_the_key_is_printed(monkeypatch, capsys):
    dev = load_dev()
    calls = []
    monkeypatch.setattr(dev, "ensure_venv", lambda: calls.append("venv") or Path(sys.executable))
    monkeypatch.setattr(dev, "manage", lambda py, *a, **k: calls.append(a[0]) or subprocess.CompletedProcess(a, 0))
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        port = busy.getsockname()[1]
        with pytest.raises(SystemExit) as stop:
            dev.cmd_serve(port)
    assert f"127.0.0.1:{port} is already in use" in str(stop.value.code)
    assert calls == [] and "API key" not in capsys.readouterr().out


def test_a_port_left_in_time_wait_by_a_stopped_server_is_free():
    """An outside check restarted `serve` right after stopping it: 'already in use' for ~30 s, though nothing
    listened (the stopped server's connections in TIME_WAIT; runserver and gunicorn bind with SO_REUSEADDR)."""
    dev = load_dev()
    with socket.socket() as server:
        server.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # as runserver and gunicorn listen
        server.bind(("127.0.0.1", 0))
        server.listen()
        port = server.getsockname()[1]
        client = socket.create_connection(("127.0.0.1", port))
        accepted, _ = server.accept()
        assert not dev.port_free(port)  # a listener: busy
        accepted.close()  # the server side closes first: its end of the connection enters TIME_WAIT
    client.close()
    assert dev.port_free(port)


def test_a_malformed_setting_is_named_not_a_traceback_and_migrate_failed(monkeypatch, capsys, tmp_path):
    dev = load_dev()
    monkeypatch.setenv("MEMORYHUB_VAR_DIR", str(tmp_path))
    monkeypatch.setenv("SEARCH_KEYWORD_WEIGHT", "200")
    with pytest.raises(SystemExit) as stopped:
        dev.migrate_or_exit(Path(sys.executable))  # a real `manage.py migrate`, which reads the settings first
    assert str(stopped.value) == (
        "[dev] SEARCH_KEYWORD_WEIGHT must be between 0.0 and 100.0, got '200' (docs/contract.md, Configuration)"
    )
    assert "Traceback" not in capsys.readouterr().err

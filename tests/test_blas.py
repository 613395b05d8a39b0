"""A memoryhub process runs one BLAS thread (memoryhub/blas.py): its held-row scans are memory-bound, and
OpenBLAS's workers, woken for each of them, made a history scan ~10× slower beside other processes."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PROBE = """
import json, os, sys
import numpy  # loads OpenBLAS with OPENBLAS_NUM_THREADS threads
from threadpoolctl import ThreadpoolController

def threads():
    return [pool["num_threads"] for pool in ThreadpoolController().info() if pool["user_api"] == "blas"]

before = threads()
if sys.argv[1] == "django":
    import django
    django.setup()
read, write = os.pipe()
if os.fork() == 0:  # a child forked after set-up, as Celery's prefork pool makes its workers
    os.write(write, json.dumps(threads()).encode())
    os._exit(0)
os.wait()
forked = json.loads(os.read(read, 1000))
print(json.dumps({"before": before, "after": threads(), "forked": forked}))
"""


def probe(mode: str) -> dict:
    env = {**os.environ, "OPENBLAS_NUM_THREADS": "2", "DJANGO_SETTINGS_MODULE": "memoryhub.settings"}
    env.setdefault("SECRET_KEY", "x" * 50)
    done = subprocess.run(
        [sys.executable, "-c", PROBE, mode], cwd=ROOT, env=env, capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout.strip().splitlines()[-1])


def test_django_setup_leaves_one_blas_thread() -> None:
    without = probe("numpy")
    assert without["before"] == without["after"] and set(without["after"]) == {2}  # the probe can tell
    with_django = probe("django")
    assert set(with_django["before"]) == {2}
    assert with_django["after"] and set(with_django["after"]) == {1}
    assert with_django["forked"] == with_django["after"]

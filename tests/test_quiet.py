"""The embedded mode is quiet: a completion that runs background work in-process prints nothing to stderr."""

from __future__ import annotations

import os
import subprocess
import sys

from django.conf import settings

PROBE = """
import json
import django
django.setup()
from django.core.management import call_command
from django.test import Client
from memories.services.products import product_create
from memoryhub.celery import app

call_command("migrate", verbosity=0)
_, issued = product_create(name="probe")
client = Client(HTTP_AUTHORIZATION=f"Bearer {issued.plaintext}")
post = lambda path, body: client.post(path, json.dumps(body), content_type="application/json")
scenario = {
    "id": "g", "name": "g", "memoryRuntime": "axon_go", "tables": "plugin-defaults",
    "memorySources": [{"id": "t", "agentRef": "table-agent", "variable": "memoryTable"},
                      {"id": "d", "agentRef": "diary-orchestrator", "variable": "compassMemory"}],
    "template": "{{memoryTable}}{{compassMemory}}{{userMessage}}",
}
assert post("/v1/scenarios", scenario).status_code == 201
conv = "/v1/users/u/conversations/c"
turn = post(f"{conv}/turns", {"scenarioId": "g", "userMessage": "hi"}).json()["turnId"]
done = post(f"{conv}/turns/{turn}/complete", {"assistantMessage": "ok"}).json()
with app.producer_or_acquire() as producer:  # what an in-process .delay() builds
    producer.connection._info()  # where kombu logs "No hostname was supplied"
print(done["memoryWrite"]["status"], app.conf.task_always_eager)
"""


def test_a_completion_in_the_embedded_mode_prints_no_broker_message(tmp_path):
    keep = {k: v for k, v in os.environ.items() if k in {"PATH", "HOME", "LANG"}}
    environ = {
        **keep,
        "PYTHONPATH": str(settings.BASE_DIR),
        "DJANGO_SETTINGS_MODULE": "memoryhub.settings",
        "MEMORYHUB_VAR_DIR": str(tmp_path),  # a fresh embedded installation: SQLite, no broker
        "SECRET_KEY": "probe",  # as `dev.py serve` passes it (a server refuses to start without one)
    }
    result = subprocess.run(
        [sys.executable, "-c", PROBE], cwd=tmp_path, env=environ, capture_output=True, text=True, timeout=120
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.split() == ["done", "True"]
    assert "No hostname was supplied" not in result.stderr
    assert result.stderr == ""

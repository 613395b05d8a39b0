"""An id holding `/` cannot reach another resource (docs/contract.md, "Identifiers"): WSGI servers decode `%2F`
into the path Django routes, so a client that escaped the user id `victim/conversations/cx` correctly,
`DELETE /v1/users/victim%2Fconversations%2Fcx`, erased conversation `cx` of user `victim`. A raw path holding
`%2F` is now `400 invalid_id` before routing: under gunicorn (RAW_URI) and `manage.py runserver`
(memoryhub/devserver), each a real server on its own SQLite database here.
"""

from __future__ import annotations

import json
import os
import secrets
import subprocess
import sys

import httpx
import pytest

from tests.support.api import assert_envelope
from tests.support.processes import GUNICORN, ROOT, free_port, healthz_answers, stop_process_group, wait_for

UNSET = ("DATABASE_URL", "REDIS_URL", "CELERY_BROKER_URL", "DATABASE_REPLICA_URL", "MEMORYHUB_REQUIRE_SERVICES")
KEEP = {"expectedRevision": 0, "memory": {"keep": True}}


@pytest.fixture(scope="module")
def servers(tmp_path_factory):
    """gunicorn and `manage.py runserver`, both as `dev.py serve` starts them, on one SQLite database."""
    var = tmp_path_factory.mktemp("encoded-slash")
    env = {name: value for name, value in os.environ.items() if name not in UNSET}
    env |= {"MEMORYHUB_VAR_DIR": str(var), "SECRET_KEY": secrets.token_urlsafe(50), "GUNICORN_ACCESS_LOG": ""}
    env |= {"PROMETHEUS_MULTIPROC_DIR": str(var / "metrics")}
    manage = [sys.executable, "manage.py"]
    subprocess.run([*manage, "migrate", "--noinput"], cwd=ROOT, env=env, check=True, capture_output=True)
    made = subprocess.run([*manage, "create_product", "--name", "slash", "--json"], cwd=ROOT, env=env, check=True,
                          capture_output=True)  # fmt: skip
    key = json.loads(made.stdout.decode().strip().splitlines()[-1])["apiKey"]
    ports = {"gunicorn": free_port(), "runserver": free_port()}
    commands = {
        "gunicorn": [sys.executable, "-m", *GUNICORN, "--bind", f"127.0.0.1:{ports['gunicorn']}", "--workers", "1"],
        "runserver": [*manage, "runserver", f"127.0.0.1:{ports['runserver']}", "--noreload"],
    }
    processes = []
    try:
        for name, command in commands.items():
            log = (var / f"{name}.log").open("w")
            processes.append(
                subprocess.Popen(command, cwd=ROOT, env=env, stdout=log, stderr=log, start_new_session=True)
            )
        urls = {name: f"http://127.0.0.1:{port}" for name, port in ports.items()}
        for name, url in urls.items():
            wait_for(lambda url=url: healthz_answers(url), timeout=60, message=f"{name} to answer /healthz")
        yield {"urls": urls, "headers": {"Authorization": f"Bearer {key}"}}
    finally:
        for process in processes:
            stop_process_group(process)


@pytest.mark.parametrize("server", ["gunicorn", "runserver"])
@pytest.mark.parametrize(
    ("method", "path", "field"),
    [
        ("DELETE", "/v1/users/{victim}%2Fconversations%2Fcx", "userId"),
        ("DELETE", "/v1/users/{victim}%2fconversations%2fcx", "userId"),
        ("GET", "/v1/users/{victim}%2Fconversations%2Fcx/memory", "path"),  # /v1/users/{u}/memory is no route
        ("DELETE", "/v1/users/{victim}/conversations/cx%2F..%2F..", "conversationId"),
    ],
)
def test_an_encoded_slash_in_a_path_is_400_and_reaches_nothing(servers, server, method, path, field):
    url, headers = servers["urls"][server], servers["headers"]
    victim = f"victim-{secrets.token_hex(4)}"
    memory = f"{url}/v1/users/{victim}/conversations/cx/memory"
    assert httpx.put(memory, json=KEEP, headers=headers, timeout=10).status_code == 200
    answer = httpx.request(method, url + path.format(victim=victim), headers=headers, timeout=10)
    assert answer.status_code == 400, answer.text
    error = answer.json()["error"]
    assert (error["code"], error["details"]) == ("invalid_id", {"field": field})
    assert "encoded slash" in error["message"]
    assert httpx.get(memory, headers=headers, timeout=10).json() == {"revision": 1, "memory": {"keep": True}}


@pytest.mark.parametrize("server", ["gunicorn", "runserver"])
def test_a_plain_path_and_an_encoded_slash_in_the_query_still_answer(servers, server):
    url, headers = servers["urls"][server], servers["headers"]
    listed = httpx.get(f"{url}/v1/scenarios?cursor=a%2Fb", headers=headers, timeout=10)
    assert listed.status_code != 400 or listed.json()["error"]["code"] != "invalid_id", listed.text
    assert httpx.get(f"{url}/v1/users/u1/conversations/c1/memory", headers=headers, timeout=10).status_code == 200


@pytest.mark.django_db
@pytest.mark.parametrize(
    ("path", "field"),
    [
        ("/v1/users/u1%2Fconversations%2Fc1", "userId"),
        ("/v1/users/u1/conversations/c1%2F", "conversationId"),
        ("/v1/users/u1/tasks/t%2F1", "taskId"),
        ("/v1/scenarios/s%2Fversions", "scenarioId"),
        ("/v1/no-such%2Fthing", "path"),
    ],
)
def test_the_field_names_the_path_parameter_holding_the_slash(alice, path, field):
    """The API's own test client has no raw path: it is passed here as gunicorn passes it."""
    alice.put("/v1/users/u1/conversations/c1/memory", KEEP)
    decoded = path.replace("%2F", "/")
    response = alice.client.delete(decoded, RAW_URI=path)
    assert assert_envelope(response, 400, "invalid_id")["details"] == {"field": field}
    assert alice.get("/v1/users/u1/conversations/c1/memory").json() == {"revision": 1, "memory": {"keep": True}}

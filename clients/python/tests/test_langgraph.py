"""LangGraph's own store tests, from the published langgraph-checkpoint sdist (ci.sh downloads it at test time
into $LANGGRAPH_STORE_TESTS; never committed), run unchanged against MemoryHubStore on the live server."""

from __future__ import annotations

import os
import subprocess
import sys
import uuid
from pathlib import Path

from conftest import LiveServer
from memoryhub_client.langgraph import MemoryHubStore

HERE = Path(__file__).resolve().parent


def test_langgraph_store_tests(live_server: LiveServer, tmp_path: Path) -> None:
    suite = Path(os.environ["LANGGRAPH_STORE_TESTS"])
    assert (suite / "tests" / "test_store.py").is_file(), suite
    env = {
        **os.environ,
        "MEMORYHUB_TEST_URL": live_server.url,
        "MEMORYHUB_TEST_KEY": live_server.api_key,
        "PYTHONPATH": os.pathsep.join([str(HERE), str(suite)]),
    }
    command = [sys.executable, "-m", "pytest", "-p", "langgraph_plugin", "-p", "no:cacheprovider", "-q", "-rxX"]
    command += ["-o", "asyncio_mode=auto", "--rootdir", str(suite), "tests/test_store.py"]
    result = subprocess.run(command, cwd=suite, env=env, capture_output=True, text=True, timeout=1200)
    print(result.stdout[-6000:])
    assert result.returncode == 0, result.stdout[-6000:] + result.stderr[-3000:]


def test_namespaces_map_onto_one_user_and_kind(live_server: LiveServer) -> None:
    from memoryhub_client import MemoryHub

    user_id = f"lg-{uuid.uuid4().hex[:12]}"
    store = MemoryHubStore(base_url=live_server.url, api_key=live_server.api_key, user_id=user_id)
    store.put(("users", "alice", "prefs"), "diet", {"text": "vegetarian", "since": 2020})
    with MemoryHub(live_server.url, live_server.api_key) as hub:
        [memory] = list(hub.memories(user_id).iter(kind="langgraph_item"))
    content = memory["content"]
    assert (content["ns"], content["key"]) == (["users", "alice", "prefs"], "diet")
    assert content["value"] == {"text": "vegetarian", "since": 2020}
    assert "vegetarian" in content["text"] and content["indexed"] is True
    assert store.search(("users",), query="vegetarian")[0].key == "diet"
    assert store.list_namespaces(prefix=("users", "*")) == [("users", "alice", "prefs")]
    store.delete(("users", "alice", "prefs"), "diet")
    assert store.get(("users", "alice", "prefs"), "diet") is None

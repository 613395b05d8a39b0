"""LangGraph's own store tests, from the published langgraph-checkpoint sdist (ci.sh downloads it at test time
into $LANGGRAPH_STORE_TESTS; never committed), run unchanged against MemoryHubStore on the live server."""

from __future__ import annotations

import contextlib
import json
import os
import subprocess
import sys
import threading
import time
import uuid
from concurrent.futures import ThreadPoolExecutor
from datetime import date, datetime
from pathlib import Path

import pytest
from conftest import LiveServer
from langgraph.store.base import PutOp
from memoryhub_client import MemoryHub
from memoryhub_client.errors import RejectedByPolicy, RevisionConflict
from memoryhub_client.langgraph import ATTESTATION, MemoryHubStore, current_copy
from memoryhub_client.models import Memory

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


def _time(value: str) -> datetime:
    return datetime.fromisoformat(value.replace("Z", "+00:00"))


def _copy(hub: MemoryHub, user_id: str, key: str, value: dict[str, object]) -> Memory:
    """One more memory for ("r",)/key, as a concurrent writer's create would leave it."""
    content = {"ns": ["r"], "key": key, "value": value, "text": json.dumps(value), "indexed": True}
    return hub.memories(user_id).create(
        kind="langgraph_item", content=content, evidence=ATTESTATION, source=ATTESTATION, consent=True
    )


def test_duplicates_of_one_key_converge_on_the_most_recent_write(live_server: LiveServer) -> None:
    user_id = f"lg-{uuid.uuid4().hex[:12]}"
    store = MemoryHubStore(base_url=live_server.url, api_key=live_server.api_key, user_id=user_id)
    with MemoryHub(live_server.url, live_server.api_key) as hub:
        older = _copy(hub, user_id, "k", {"text": "older"})
        time.sleep(0.01)
        newer = _copy(hub, user_id, "k", {"text": "newer"})
        assert _time(newer["updatedAt"]) > _time(older["updatedAt"])
        assert current_copy([newer, older])["id"] == newer["id"] == current_copy([older, newer])["id"]
        found = store.get(("r",), "k")
        assert found is not None and found.value == {"text": "newer"}
        assert [i.value for i in store.search(("r",))] == [{"text": "newer"}]
        assert [i.value for i in store.search(("r",), query="newer older")] == [{"text": "newer"}]
        assert store.list_namespaces() == [("r",)]
        # An older copy written again is the most recent write: it is the current one then.
        time.sleep(0.01)
        again = {**older["content"], "value": {"text": "older, written again"}}
        hub.memories(user_id).update(
            older["id"],
            expected_version=older["version"],
            content=again,
            evidence=ATTESTATION,
            source=ATTESTATION,
            consent=True,
        )
        found = store.get(("r",), "k")
        assert found is not None and found.value == {"text": "older, written again"}
        # A put updates the current copy and deletes the others.
        store.put(("r",), "k", {"text": "third"})
        [memory] = list(hub.memories(user_id).iter(kind="langgraph_item"))
        assert memory["id"] == older["id"] and memory["content"]["value"] == {"text": "third"}
        # A delete removes every copy: no older value comes back.
        _copy(hub, user_id, "k", {"text": "fourth"})
        store.delete(("r",), "k")
        assert store.get(("r",), "k") is None
        assert list(hub.memories(user_id).iter(kind="langgraph_item")) == []


def test_concurrent_puts_of_one_key_then_get_and_delete(live_server: LiveServer) -> None:
    user_id = f"lg-{uuid.uuid4().hex[:12]}"
    stores = [MemoryHubStore(base_url=live_server.url, api_key=live_server.api_key, user_id=user_id) for _ in range(3)]
    barrier = threading.Barrier(len(stores))

    def put(index: int) -> None:
        barrier.wait()
        # A writer whose listing already saw another's create updates it: losing that race is a RevisionConflict.
        with contextlib.suppress(RevisionConflict):
            stores[index].put(("r",), "k", {"text": f"writer {index}"})

    with ThreadPoolExecutor(len(stores)) as pool:
        list(pool.map(put, range(len(stores))))
    with MemoryHub(live_server.url, live_server.api_key) as hub:
        stored = list(hub.memories(user_id).iter(kind="langgraph_item"))
    expected = current_copy(stored)["content"]["value"]  # one copy per writer that created, the newest answers
    for store in stores:
        found = store.get(("r",), "k")
        assert found is not None and found.value == expected
    stores[0].delete(("r",), "k")
    assert [store.get(("r",), "k") for store in stores] == [None, None, None]
    stores[1].put(("r",), "k", {"text": "after"})
    found = stores[2].get(("r",), "k")
    assert found is not None and found.value == {"text": "after"}


def test_a_batch_stops_at_its_first_error_and_names_what_it_applied(live_server: LiveServer) -> None:
    user_id = f"lg-{uuid.uuid4().hex[:12]}"
    store = MemoryHubStore(base_url=live_server.url, api_key=live_server.api_key, user_id=user_id)
    store.put(("s",), "gone", {"v": "to delete"})
    ops = [
        PutOp(("s",), "ok1", {"v": "fine"}),
        PutOp(("s",), "gone", None),
        PutOp(("s",), "bad", {"pw": "my password is hunter2Xy!9"}),
        PutOp(("s",), "ok2", {"v": "fine2"}),
    ]
    with pytest.raises(RejectedByPolicy) as refused:
        store.batch(ops)
    assert refused.value.written_keys == [(("s",), "ok1"), (("s",), "gone")]
    assert [store.get(("s",), k) is not None for k in ("ok1", "gone", "bad", "ok2")] == [True, False, False, False]


def test_a_put_value_that_is_not_json_is_refused_before_anything_is_applied(live_server: LiveServer) -> None:
    user_id = f"lg-{uuid.uuid4().hex[:12]}"
    store = MemoryHubStore(base_url=live_server.url, api_key=live_server.api_key, user_id=user_id)
    ops = [PutOp(("s",), "ok1", {"v": "fine"}), PutOp(("s",), "dt", {"w": date(2024, 1, 1)})]
    with pytest.raises(ValueError, match=r"operation 1 \(put of \('s',\), 'dt'\) cannot be stored"):
        store.batch(ops)
    assert store.get(("s",), "ok1") is None


def test_a_put_that_loses_to_a_delete_is_a_revision_conflict_and_a_delete_wins_over_a_put(
    live_server: LiveServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    user_id = f"lg-{uuid.uuid4().hex[:12]}"
    a, b = (MemoryHubStore(base_url=live_server.url, api_key=live_server.api_key, user_id=user_id) for _ in "ab")
    a.put(("r",), "k", {"v": "base"})
    listing = b._listing

    def listed_then_deleted() -> list[Memory]:  # another writer deletes the item right after b's listing
        found = listing()
        a.delete(("r",), "k")
        return found

    monkeypatch.setattr(b, "_listing", listed_then_deleted)
    with pytest.raises(RevisionConflict) as lost:
        b.put(("r",), "k", {"v": "new"})
    assert lost.value.written_keys == [] and a.get(("r",), "k") is None
    monkeypatch.undo()
    b.put(("r",), "k", {"v": "again"})  # the documented recovery: re-read (a new batch lists) and put
    assert a.get(("r",), "k") is not None
    listing = a._listing

    def listed_then_updated() -> list[Memory]:  # another writer's put lands right after a's listing
        found = listing()
        b.put(("r",), "k", {"v": "newer"})
        return found

    monkeypatch.setattr(a, "_listing", listed_then_updated)
    a.delete(("r",), "k")  # a delete is unconditional: it removes the item, the racing put's value too
    monkeypatch.undo()
    assert b.get(("r",), "k") is None

"""The installed client against a live server: documents, long-term memories, scenarios and turns, tools,
webhooks, lifecycle, errors and pagination, sync and async."""

from __future__ import annotations

import time
import typing
import uuid
from pathlib import Path

import httpx
import memoryhub_client
import pytest
from conftest import REPO, LiveServer
from memoryhub_client import AsyncMemoryHub, MemoryHub, errors, models

SCENARIO_TEMPLATE = "Memory: {{jsonMemory}}\nUser: {{userMessage}}"


def test_the_installed_wheel_is_under_test() -> None:
    assert REPO not in Path(memoryhub_client.__file__).resolve().parents, memoryhub_client.__file__
    assert (Path(memoryhub_client.__file__).parent / "py.typed").exists()


def test_document_read_write_conflict_reread(hub: MemoryHub, user_id: str) -> None:
    doc = hub.memory(user_id, "c1")
    empty = doc.get()
    assert (empty.revision, empty.memory) == (0, None)
    assert doc.put(expected_revision=0, memory={"pet": "cat"}) == 1
    with pytest.raises(errors.RevisionConflict) as conflict:
        doc.put(expected_revision=0, memory={"pet": "dog"})
    assert (conflict.value.status, conflict.value.code, conflict.value.current_revision) == (
        409,
        "revision_conflict",
        1,
    )
    assert conflict.value.details == {"currentRevision": 1}
    again = doc.get()
    assert again == models.MemoryDocument(revision=1, memory={"pet": "cat"})
    assert doc.put(expected_revision=again.revision, memory={"pet": "dog"}) == 2


def test_an_idempotency_key_replays_the_first_answer(hub: MemoryHub, user_id: str) -> None:
    doc = hub.memory(user_id, "c1")
    assert doc.put(expected_revision=0, memory={"n": 1}, idempotency_key="k-1") == 1
    assert doc.put(expected_revision=0, memory={"n": 1}, idempotency_key="k-1") == 1  # replayed, not a conflict
    with pytest.raises(errors.IdempotencyKeyReused) as reused:
        doc.put(expected_revision=0, memory={"n": 2}, idempotency_key="k-1")
    assert reused.value.status == 422
    assert [r["revision"] for r in doc.iter_revisions()] == [1]


def test_revisions_are_paged_newest_first(hub: MemoryHub, user_id: str) -> None:
    doc = hub.memory(user_id, "c1")
    for revision in range(5):
        doc.put(expected_revision=revision, memory={"n": revision})
    first = doc.revisions(limit=2)
    assert [r["revision"] for r in first["results"]] == [5, 4] and first["next"]
    assert [r["revision"] for r in doc.iter_revisions(limit=2)] == [5, 4, 3, 2, 1]


def test_errors_are_typed(hub: MemoryHub, live_server: LiveServer, user_id: str) -> None:
    with pytest.raises(errors.ValidationError) as invalid:
        hub.memory("not an id!", "c1").get()
    assert (invalid.value.status, invalid.value.code) == (400, "invalid_id")
    with pytest.raises(errors.ValidationError) as not_object:
        hub.memory(user_id, "c1").put(expected_revision=0, memory=typing.cast(typing.Any, [1]))
    assert not_object.value.status == 400
    with pytest.raises(errors.NotFound):
        hub.memories(user_id).get("mem_0000000000000000")
    with MemoryHub(live_server.url, "mhk_nope_nope") as stranger, pytest.raises(errors.Unauthenticated) as unauth:
        stranger.memory(user_id, "c1").get()
    assert unauth.value.status == 401
    with pytest.raises(errors.RejectedByPolicy) as refused:
        hub.memories(user_id).create(
            kind="preference",
            content={"language": "zh"},
            evidence="以后请用中文回答",
            source="以后请用中文回答",
            consent=False,
        )
    assert (refused.value.status, refused.value.reason) == (422, "no_consent")


def test_another_products_data_is_not_found(hub: MemoryHub, live_server: LiveServer, user_id: str) -> None:
    created = hub.memories(user_id).create(
        kind="preference",
        content={"detail": "brief"},
        evidence="Answer briefly.",
        source="Answer briefly.",
        consent=True,
    )
    with MemoryHub(live_server.url, live_server.other_key) as other, pytest.raises(errors.NotFound):
        other.memories(user_id).get(created["id"])


def test_long_term_memories_create_search_update_delete(hub: MemoryHub, user_id: str) -> None:
    memories = hub.memories(user_id)
    first = memories.create(
        kind="preference",
        content={"detail": "brief", "text": "short answers"},
        evidence="Answer briefly.",
        source="Hi. Answer briefly.",
        consent=True,
        operation_id="op-1",
    )
    assert first["version"] == 1 and first["kind"] == "preference"
    replayed = memories.create(
        kind="preference",
        content={"detail": "brief", "text": "short answers"},
        evidence="Answer briefly.",
        source="Hi. Answer briefly.",
        consent=True,
        operation_id="op-1",
    )
    assert replayed["id"] == first["id"]
    found = memories.search("short answers", mode="keyword")
    assert [r["id"] for r in found["results"]] == [first["id"]]
    semantic = memories.search("concise replies", mode="semantic")
    assert semantic["results"][0]["id"] == first["id"] and "embeddingIdentity" in semantic
    hybrid = memories.search("concise replies", mode="hybrid")
    assert hybrid["mode"] == "hybrid" and hybrid["results"][0]["id"] == first["id"]
    assert "semantic" in hybrid["results"][0]["why"]
    assert memories.search("the weather in Paris", mode="hybrid", min_score=0.99)["results"] == []
    assert [r["id"] for r in memories.iter_search("concise replies", mode="hybrid", min_score=-1)] == [first["id"]]
    proposal = {"evidence": "Answer briefly.", "source": "Answer briefly.", "consent": True}
    updated = memories.update(first["id"], expected_version=1, content={"detail": "brief", "text": "brief"}, **proposal)
    assert updated["version"] == 2
    with pytest.raises(errors.RevisionConflict) as conflict:
        memories.update(first["id"], expected_version=1, content={"detail": "brief"}, **proposal)
    assert conflict.value.current_version == 2
    assert [m["id"] for m in memories.iter(kind="preference")] == [first["id"]]
    memories.delete(first["id"], expected_version=2)
    assert list(memories.iter()) == []


def test_kinds_tasks_and_pagination_of_memories(hub: MemoryHub, user_id: str) -> None:
    name = f"note_{uuid.uuid4().hex[:8]}"
    kind = hub.kinds.create(
        name=name,
        content_schema={"type": "object", "properties": {"text": {"type": "string"}}, "required": ["text"]},
        searchable=True,
        text_field="text",
    )
    assert kind["name"] == name and kind["searchable"] is True
    assert name in [k["name"] for k in hub.kinds.list()["results"]]
    for i in range(5):
        hub.memories(user_id).create(
            kind=name,
            content={"text": f"note {i}"},
            evidence="I keep notes here.",
            source="I keep notes here.",
            consent=True,
        )
    assert len(list(hub.memories(user_id).iter(kind=name, limit=2))) == 5
    with pytest.raises(errors.KindInUse):
        hub.kinds.delete(name)
    hub.kinds.delete(name, cascade=True)
    with pytest.raises(errors.NotFound):
        hub.kinds.get(name)
    tasks = hub.tasks(user_id)
    tasks.checkpoint("t1", "collect", data={"done": 1}, input={"p": 1})
    tasks.publish_report("t1", data={"summary": "ok"})
    task = tasks.get("t1")
    assert [s["stage"] for s in task["stages"]] == ["collect"] and task["report"] is not None


def _scenario(hub: MemoryHub) -> str:
    scenario_id = f"s-{uuid.uuid4().hex[:8]}"
    created = hub.scenarios.create(
        {
            "id": scenario_id,
            "name": "Client test",
            "memorySources": [{"id": "doc", "agentRef": "json-memory", "variable": "jsonMemory"}],
            "template": SCENARIO_TEMPLATE,
        }
    )
    assert created["version"] == 1
    return scenario_id


def test_scenarios_turns_history(hub: MemoryHub, user_id: str, live_server: LiveServer) -> None:
    scenario_id = _scenario(hub)
    current = {
        k: v for k, v in hub.scenarios.get(scenario_id).items() if k not in ("version", "createdAt", "updatedAt")
    }
    renamed = hub.scenarios.replace({**current, "name": "Renamed"})  # type: ignore[typeddict-item]
    assert renamed["version"] == 2 and renamed["name"] == "Renamed"
    versions = list(hub.scenarios.iter_versions(scenario_id, limit=1))
    assert [v["version"] for v in versions] == [2, 1]
    assert [v["scenario"]["name"] for v in versions] == ["Renamed", "Client test"]
    assert all(_fits(v, models.ScenarioVersion) for v in versions)
    assert scenario_id in [s["id"] for s in hub.scenarios.iter(limit=1)]
    conversation = hub.conversation(user_id, "c1")
    conversation.memory.put(expected_revision=0, memory={"pet": "cat"})
    turn = conversation.prepare_turn(scenario_id=scenario_id, user_message="hello")
    assert turn["status"] == "prepared" and "hello" in turn["prompt"]
    done = conversation.complete_turn(turn["turnId"], assistant_message="hi there")
    assert done["committed"] is True and done["turnId"] == turn["turnId"]
    again = conversation.complete_turn(turn["turnId"], assistant_message="hi there")  # a retry: nothing twice
    assert again["round"] == done["round"]
    with pytest.raises(errors.TurnStateConflict) as other_reply:
        conversation.complete_turn(turn["turnId"], assistant_message="another reply")
    assert other_reply.value.code == "turn_already_completed"
    assert _fits(turn, models.PreparedTurn) and _fits(done, models.Completion)
    detail = conversation.get_turn(turn["turnId"])
    assert detail["committed"] is True and _fits(detail, models.Turn)
    assert (detail["replacesTurnId"], detail["rollback"]) == (None, None)
    messages = list(conversation.iter_messages(limit=1))
    assert [m["role"] for m in messages] == ["user", "assistant"]
    assert all(_fits(m, models.Message) and m["deleted"] is False for m in messages)
    events = list(conversation.iter_events())
    assert "turn.completed" in [e["type"] for e in events] and all(_fits(e, models.Event) for e in events)
    assert conversation.tables()["tables"] == []
    assert conversation.story()["version"] == 0
    assert conversation.state()["revision"] == 0
    assert conversation.diaries()["results"] == []


def test_a_turns_witness_scope_and_a_memory_written_for_a_turn(hub: MemoryHub, user_id: str) -> None:
    """prepare_turn's name/user_name/present reach the round's messages; create's turn_id ties a memory to
    the turn, so regenerating its reply rolls the memory back (docs/roleplay.md)."""
    scenario_id = _scenario(hub)
    conversation = hub.conversation(user_id, "scene")
    turn = conversation.prepare_turn(
        scenario_id=scenario_id, user_message="Hello both.", name="Mara", user_name="Rowan", present=["Mara", "Oderic"]
    )
    conversation.complete_turn(turn["turnId"], assistant_message="Well met.")
    said = {m["role"]: m for m in conversation.iter_messages()}
    assert (said["assistant"]["name"], said["user"]["name"]) == ("Mara", "Rowan")
    memory = hub.memories(user_id).create(
        kind="preference",
        content={"language": "en"},
        evidence="Use English with me.",
        source="Use English with me.",
        consent=True,
        turn_id=turn["turnId"],
    )
    assert memory["turnId"] == turn["turnId"]
    again = conversation.prepare_turn(
        scenario_id=scenario_id, user_message="Hello both.", replaces_turn_id=turn["turnId"]
    )
    conversation.complete_turn(again["turnId"], assistant_message="Greetings.")
    assert hub.memories(user_id).get(memory["id"])["rolledBackAt"] is not None


def _fits(answer: typing.Any, typed: type) -> bool:
    """The answer has every key its TypedDict requires and none it does not declare."""
    hints = typing.get_type_hints(typed, include_extras=True)  # models.py's annotations are strings: read them here
    assert set(answer) <= set(hints), f"{typed.__name__}: undeclared {sorted(set(answer) - set(hints))}"
    required = {key for key, hint in hints.items() if typing.get_origin(hint) is not typing.NotRequired}
    assert required <= set(answer), f"{typed.__name__}: missing {sorted(required - set(answer))}"
    return True


def test_the_docs_error_example_prints_what_it_says(hub: MemoryHub, user_id: str) -> None:
    """docs/clients.md, "Errors": `refused.reason` is the named reason, `details.code` the family."""
    with pytest.raises(errors.RejectedByPolicy) as refused:
        hub.memories(user_id).create(
            kind="preference",
            content={"language": "zh"},
            evidence="我可能更喜欢中文吧",
            source="我可能更喜欢中文吧",
            consent=True,
        )
    assert refused.value.reason == "hedge"
    assert refused.value.details == {"reason": "hedge", "code": "not_durable_preference", "path": "/evidence"}
    docs = (REPO / "docs" / "clients.md").read_text(encoding="utf-8")
    assert f"# {refused.value.reason} {refused.value.details}" in docs


def test_tool_tokens_issue_use_revoke(hub: MemoryHub, user_id: str) -> None:
    minted = hub.tool_tokens.issue(user_id, "c1", ttl_seconds=600)
    assert minted["token"].startswith("mht_") and minted["id"].startswith("ttk_")
    tools = hub.tools(minted["token"])
    assert [tool["function"]["name"] for tool in tools.list()["tools"]] == ["get_memory", "update_memory"]
    assert tools.call("get_memory")["details"] == {"revision": 0, "memory": None}
    assert tools.call("update_memory", {"expectedRevision": 0, "memory": {"n": 1}})["details"] == {"revision": 1}
    assert hub.memory(user_id, "c1").get().memory == {"n": 1}
    state = hub.tool_tokens.revoke(minted["id"])
    assert state["revokedAt"] is not None and state["userId"] == user_id
    with pytest.raises(errors.Unauthenticated):
        tools.list()
    hub.tool_tokens.issue(user_id, "c2")
    assert hub.tool_tokens.revoke_all()["revoked"] >= 1


def test_webhooks(hub: MemoryHub) -> None:
    created = hub.webhooks.create(url="http://127.0.0.1:9/hook", events=["memory.updated"], description="client")
    assert created["secret"] and created["events"] == ["memory.updated"]
    assert created["id"] in [w["id"] for w in hub.webhooks.iter(limit=1)]
    assert hub.webhooks.update(created["id"], enabled=False)["enabled"] is False
    assert hub.webhooks.rotate_secret(created["id"])["secret"] != created["secret"]
    assert list(hub.webhooks.iter_deliveries(created["id"])) == []
    hub.webhooks.delete(created["id"])
    with pytest.raises(errors.NotFound):
        hub.webhooks.get(created["id"])


def _wait(read: typing.Callable[[], typing.Any], timeout: float = 60) -> typing.Any:
    deadline = time.monotonic() + timeout
    while True:
        value = read()
        if value["status"] in ("done", "failed"):
            return value
        assert time.monotonic() < deadline, value
        time.sleep(0.2)


def test_lifecycle_export_import_erase(hub: MemoryHub, user_id: str) -> None:
    hub.memory(user_id, "c1").put(expected_revision=0, memory={"pet": "cat"})
    started = hub.lifecycle.export_user(user_id)
    export = _wait(lambda: hub.lifecycle.get_export(started["exportId"]))
    assert export["status"] == "done", export
    data = hub.lifecycle.download_export(started["exportId"])
    assert data[:2] == b"\x1f\x8b"  # gzip
    erasure_id = hub.lifecycle.erase_user(user_id)["erasureId"]
    erased = _wait(lambda: hub.lifecycle.get_erasure(erasure_id))
    assert erased["status"] == "done"
    assert hub.memory(user_id, "c1").get().revision == 0
    import_id = hub.lifecycle.import_user(user_id, data)["importId"]
    imported = _wait(lambda: hub.lifecycle.get_import(import_id))
    assert imported["status"] == "done", imported
    assert hub.memory(user_id, "c1").get().memory == {"pet": "cat"}


def test_product_settings(hub: MemoryHub) -> None:
    product = hub.product.get()
    assert product["productId"].startswith("prd_")


def test_kinds_are_listed_a_page_at_a_time_in_name_order(hub: MemoryHub) -> None:
    prefix = f"k{uuid.uuid4().hex[:8]}"
    schema = {"type": "object", "properties": {"text": {"type": "string"}}}
    names = [f"{prefix}_{suffix}" for suffix in ("c", "a", "b")]
    for name in names:
        hub.kinds.create(name=name, content_schema=schema)
    try:
        page = hub.kinds.list(limit=1)
        assert len(page["results"]) == 1 and page["next"] and _fits(page, models.KindList)
        following = hub.kinds.list(limit=1, cursor=page["next"])["results"]
        assert following[0]["name"] > page["results"][0]["name"]  # next continues in name order
        mine = [k["name"] for k in hub.kinds.iter(limit=1) if k["name"].startswith(prefix)]
        assert mine == sorted(names)
        with pytest.raises(errors.ValidationError):
            hub.kinds.list(limit=201)
    finally:
        for name in names:
            hub.kinds.delete(name)


def test_a_kinds_evidence_policy_is_set_read_and_changed(hub: MemoryHub, user_id: str) -> None:
    name = f"fact_{uuid.uuid4().hex[:8]}"
    schema = {"type": "object", "properties": {"text": {"type": "string"}}, "required": ["text"]}
    assert hub.kinds.create(name=f"{name}_s", content_schema=schema)["evidencePolicy"] == "statement"  # the default
    kind = hub.kinds.create(name=name, content_schema=schema, text_field="text", evidence_policy="quote")
    assert kind["evidencePolicy"] == "quote" and hub.kinds.get(name)["evidencePolicy"] == "quote"
    past = "I went to a LGBTQ support group yesterday and it was so powerful."
    fact = {"content": {"text": "Caroline attended an LGBTQ support group"}, "evidence": past, "source": past}
    assert hub.memories(user_id).create(kind=name, consent=True, **fact)["kind"] == name  # a past event: admitted
    with pytest.raises(errors.RejectedByPolicy):
        hub.memories(user_id).create(kind=f"{name}_s", consent=True, **fact)
    assert hub.kinds.update(name, evidencePolicy="statement")["evidencePolicy"] == "statement"
    with pytest.raises(errors.ValidationError) as invalid:
        hub.kinds.update(name, evidencePolicy="verbatim")
    assert invalid.value.details == {"field": "evidencePolicy"}
    for kind_name in (name, f"{name}_s"):
        hub.kinds.delete(kind_name, cascade=True)


def test_typed_models_match_the_served_schema(live_server: LiveServer) -> None:
    schema = httpx.get(live_server.url + "/api/schema/?format=json", timeout=30).json()
    components = schema["components"]["schemas"]
    mismatches = []
    for name, typed in models.SCHEMA_COMPONENTS.items():
        component = components[name]
        hints = typing.get_type_hints(typed)
        if set(hints) - models.NOT_IN_SCHEMA.get(name, set()) != set(component["properties"]):
            mismatches.append(f"{name}: client {sorted(hints)} schema {sorted(component['properties'])}")
        if not set(component.get("required", [])) <= typed.__required_keys__:  # type: ignore[attr-defined]
            mismatches.append(f"{name}: required {component.get('required')} vs {sorted(typed.__required_keys__)}")  # type: ignore[attr-defined]
    assert not mismatches, "\n".join(mismatches)
    operations = {op["operationId"] for path in schema["paths"].values() for op in path.values() if "operationId" in op}
    assert set(models.UNTYPED_IN_SCHEMA) <= operations


async def test_async_client(ahub: AsyncMemoryHub, user_id: str) -> None:
    doc = ahub.memory(user_id, "c1")
    assert (await doc.get()).revision == 0
    assert await doc.put(expected_revision=0, memory={"a": 1}) == 1
    with pytest.raises(errors.RevisionConflict) as conflict:
        await doc.put(expected_revision=0, memory={"a": 2})
    assert conflict.value.current_revision == 1
    await doc.put(expected_revision=1, memory={"a": 2})
    await doc.put(expected_revision=2, memory={"a": 3})
    assert [r["revision"] async for r in doc.iter_revisions(limit=1)] == [3, 2, 1]
    created = await ahub.memories(user_id).create(
        kind="preference",
        content={"detail": "brief"},
        evidence="Answer briefly.",
        source="Answer briefly.",
        consent=True,
    )
    assert [r["id"] async for r in ahub.memories(user_id).iter_search("briefly", mode="keyword")] == [created["id"]]
    with pytest.raises(errors.NotFound):
        await ahub.memories(user_id).get("mem_0000000000000000")


DOT_IDS = ["", ".", "..", "..."]


def _calls_with_an_id(hub: MemoryHub, user_id: str, bad: str) -> list[typing.Callable[[], object]]:
    """One call per place a client method puts an id into a path."""
    return [
        lambda: hub.lifecycle.erase_conversation(user_id, bad),
        lambda: hub.conversation(user_id, bad).erase(),
        lambda: hub.conversation(bad, "c1").messages(),
        lambda: hub.lifecycle.erase_user(bad),
        lambda: hub.lifecycle.export_user(bad),
        lambda: hub.lifecycle.get_erasure(bad),
        lambda: hub.memory(bad, "c1").get(),
        lambda: hub.memory(user_id, bad).put(expected_revision=0, memory={}),
        lambda: hub.memories(bad).list(),
        lambda: hub.memories(user_id).delete(bad),
        lambda: hub.tasks(user_id).get(bad),
        lambda: hub.tasks(user_id).checkpoint("t1", bad, data={}),
        lambda: hub.scenarios.delete(bad),
        lambda: hub.kinds.delete(bad),
        lambda: hub.tool_tokens.revoke(bad),
    ]


# Ids that cannot travel in a URL path, and the refusal each gets before anything is sent: httpx folds `..`, so
# erase_conversation(u, "..") sent DELETE /v1/users/u and erased the user; servers and proxies decode `%2F` before
# routing, so erase_user("u/conversations/c") erased conversation c of user u. The server refuses both now, but an
# older server or a decoding proxy in front of it would not: the request must never leave.
UNSENDABLE_IDS = [(bad, "never empty or only dots") for bad in DOT_IDS] + [
    (bad, "never holds '/'") for bad in ["/", "a/b", "keep-user/conversations/keep"]
]


@pytest.mark.parametrize(("bad", "refusal"), UNSENDABLE_IDS)
def test_an_id_that_cannot_travel_in_a_path_is_refused_before_anything_is_sent(
    live_server: LiveServer, user_id: str, bad: str, refusal: str
) -> None:
    sent: list[httpx.Request] = []
    with (
        httpx.Client(event_hooks={"request": [sent.append]}) as http,
        MemoryHub(live_server.url, live_server.api_key, http_client=http) as hub,
    ):
        hub.memory(user_id, "keep").put(expected_revision=0, memory={"keep": True})
        sent.clear()
        for call in _calls_with_an_id(hub, user_id, bad):
            with pytest.raises(ValueError, match=refusal):
                call()
        assert sent == []
        assert hub.memory(user_id, "keep").get().memory == {"keep": True}
        assert hub.memory(user_id, ".keep.").get().revision == 0  # dots among other characters: an id


def test_the_async_client_refuses_a_dot_id_before_sending(live_server: LiveServer, user_id: str) -> None:
    import asyncio

    async def run() -> None:
        sent: list[httpx.Request] = []

        async def record(request: httpx.Request) -> None:
            sent.append(request)

        async with (
            httpx.AsyncClient(event_hooks={"request": [record]}) as http,
            AsyncMemoryHub(live_server.url, live_server.api_key, http_client=http) as hub,
        ):
            await hub.memory(user_id, "keep").put(expected_revision=0, memory={"keep": True})
            sent.clear()
            with pytest.raises(ValueError, match="only dots"):
                await hub.lifecycle.erase_conversation(user_id, "..")
            with pytest.raises(ValueError, match="only dots"):
                await hub.conversation(user_id, ".").erase()
            assert sent == []
            assert (await hub.memory(user_id, "keep").get()).memory == {"keep": True}

    asyncio.run(run())


def test_every_path_id_goes_through_seg() -> None:
    """Each `{…}` of a request path in the client's source is `seg(…)` (or the area's own path, built by it)."""
    import re

    source = (REPO / "clients" / "python" / "src" / "memoryhub_client" / "_async_client.py").read_text()
    paths = re.findall(r'f"((?:/v1/|\{self\._path\})[^"]*)"', source)
    assert len(paths) > 30
    holes = {hole for path in paths for hole in re.findall(r"\{([^}]*)\}", path)}
    assert {hole for hole in holes if not hole.startswith("seg(") and hole != "self._path"} == set()


def test_sync_client_is_generated_from_the_async_one() -> None:
    import subprocess
    import sys

    script = REPO / "clients" / "python" / "scripts" / "unasync.py"
    assert subprocess.run([sys.executable, str(script), "--check"]).returncode == 0

"""The `preferences` variable: recalled into turns through the working set (S3, C1–C3)."""

from __future__ import annotations

from io import StringIO

import numpy as np
import pytest
from django.core.cache import cache
from django.core.management import call_command

from memories.longterm.models import LongTermMemory
from memories.longterm.producers import produce_preferences
from memories.longterm.services.memories import Proposal, memory_create, preferences_scope
from memories.models import Scenario
from memoryhub.addresses import ConversationAddress, UserAddress
from memoryhub.runtimes.base import RecallRequest, SourceConfig
from tests.longterm.support import (
    EN_DETAIL,
    PREFERENCE_ZH,
    ZH_LANGUAGE,
    create,
    memories_url,
    proposal,
    update_body,
)
from tests.support.api import assert_envelope
from tests.support.embedding_server import ServerOptions, make_server, serve_in_thread
from tests.support.processes import closed_port
from tests.support.turns import prepare

pytestmark = pytest.mark.django_db

CONV = "/v1/users/u1/conversations/c1"
SOURCE = {"id": "prefs", "agentRef": "longterm", "variable": "preferences"}
COFFEE = proposal(
    content={"detail": "brief", "text": "回答要简短"}, evidence="以后回答都简短一点", source="以后回答都简短一点。"
)


def tombstone_expired(api, user: str = "u1") -> None:
    """As if the write's short invalidation tombstone had expired: the next read may store again."""
    cache.delete(preferences_scope(UserAddress(api.product, user)).key)


def scenario(api, **sections) -> None:
    body = {
        "id": "assistant",
        "name": "Assistant",
        "memorySources": [SOURCE],
        "template": "Preferences:\n{{preferences}}\nUser: {{userMessage}}",
        **sections,
    }
    response = api.post("/v1/scenarios", body)
    assert response.status_code == 201, response.json()


def recall(api, message: str = "你好", scenario_row=None):
    source = SourceConfig(SOURCE["id"], SOURCE["agentRef"], SOURCE["variable"])
    return produce_preferences(
        RecallRequest(
            address=ConversationAddress(api.product, "u1", "c1"),
            source=source,
            scenario=scenario_row,
            user_message=message,
        )
    )


def test_a_saved_preference_is_recalled_into_a_new_turn_with_its_id_and_version(alice):
    scenario(alice)
    record = create(alice)
    turn = prepare(alice, "assistant", "你好")
    assert "language: zh; detail: brief — 用户喜欢简短的中文回答" in turn["prompt"]
    assert turn["referencedVariables"] == ["preferences"]
    status = turn["sources"][0]
    assert status["status"] == "ok" and status["version"] == 1
    assert status["details"]["memories"] == [{"id": record["id"], "version": 1}]
    assert status["details"]["mode"] == "all"


def test_every_write_invalidates_the_working_set(alice):
    scenario(alice)
    record = create(alice)
    assert prepare(alice, "assistant", "你好")["sources"][0]["cached"] is False
    tombstone_expired(alice)
    assert prepare(alice, "assistant", "你好")["sources"][0]["cached"] is False  # rebuilt from the database and stored
    assert prepare(alice, "assistant", "你好")["sources"][0]["cached"] is True
    alice.patch(f"{memories_url()}/{record['id']}", update_body(expected=1))
    after_update = prepare(alice, "assistant", "你好")
    assert after_update["sources"][0]["cached"] is False
    assert "Please always answer me in detailed English" in after_update["prompt"]
    assert "用户喜欢简短" not in after_update["prompt"]
    assert after_update["sources"][0]["details"]["memories"] == [{"id": record["id"], "version": 2}]
    alice.delete(f"{memories_url()}/{record['id']}")
    gone = prepare(alice, "assistant", "你好")
    assert gone["sources"][0]["status"] == "empty" and "Please always" not in gone["prompt"]


def test_with_many_preferences_the_relevant_ones_are_chosen_by_meaning(alice):
    scenario(alice, preferences={"topK": 1, "allWhenAtMost": 1})
    zh, en = create(alice, ZH_LANGUAGE)["id"], create(alice, EN_DETAIL)["id"]
    chinese = prepare(alice, "assistant", "请用简洁的中文回复我")["sources"][0]["details"]
    assert chinese["mode"] == "hybrid" and chinese["available"] == 2
    assert [m["id"] for m in chinese["memories"]] == [zh] and chinese["memories"][0]["score"] > 0
    why = chinese["memories"][0]["why"]  # the inspector shows why it was recalled
    assert (
        why["semantic"]["rank"] == 1 and why["keyword"]["rank"] == 1 and why["fused"] == chinese["memories"][0]["score"]
    )
    english = prepare(alice, "assistant", "Explain it to me thoroughly, in English")["sources"][0]["details"]
    assert [m["id"] for m in english["memories"]] == [en]


def test_recall_floors_an_unrelated_message_and_semantic_mode_keeps_the_old_ranking(alice):
    create(alice, ZH_LANGUAGE)
    create(alice, EN_DETAIL)
    scenario(alice, preferences={"topK": 1, "allWhenAtMost": 1})
    floored = prepare(alice, "assistant", "What is the weather in Paris?")
    assert floored["sources"][0]["details"]["memories"] == [] and "detailed English" not in floored["prompt"]
    semantic = Scenario(sections={"preferences": {"topK": 1, "allWhenAtMost": 1, "mode": "semantic"}})
    details = recall(alice, "What is the weather in Paris?", scenario_row=semantic).details
    assert details["mode"] == "semantic" and len(details["memories"]) == 1  # the nearest, however far
    nearest = details["memories"][0]
    assert nearest["why"] == {"semantic": {"rank": 1, "score": nearest["score"]}} and nearest["score"] < 0.18
    unfloored = Scenario(sections={"preferences": {"topK": 1, "allWhenAtMost": 1, "minScore": -1}})
    assert len(recall(alice, "What is the weather in Paris?", scenario_row=unfloored).details["memories"]) == 1


@pytest.mark.parametrize("section", [{"mode": "fuzzy"}, {"minScore": 2}, {"minScore": "0.1"}, {"minScore": True}])
def test_bad_ranking_options_are_refused(alice, section):
    body = {
        "id": "bad",
        "name": "Bad",
        "memorySources": [SOURCE],
        "template": "{{preferences}}",
        "preferences": section,
    }
    assert alice.post("/v1/scenarios", body).status_code == 400


def test_few_preferences_are_all_used(alice):
    scenario(alice, preferences={"topK": 1, "allWhenAtMost": 3})
    create(alice, ZH_LANGUAGE)
    create(alice, EN_DETAIL)
    turn = prepare(alice, "assistant", "请用简洁的中文回复我")
    assert turn["sources"][0]["details"]["mode"] == "all" and len(turn["sources"][0]["details"]["memories"]) == 2
    assert "用户喜欢简短的中文回答" in turn["prompt"] and "detailed English" in turn["prompt"]


def test_no_preferences_is_an_empty_source(alice):
    scenario(alice)
    turn = prepare(alice, "assistant", "你好")
    assert turn["sources"][0]["status"] == "empty" and turn["prompt"].startswith("Preferences:\n\nUser:")


def test_preferences_are_per_user_and_per_product(alice, bob):
    create(alice, user="u2")
    create(bob)
    scenario(alice)
    assert prepare(alice, "assistant", "你好")["sources"][0]["status"] == "empty"


@pytest.mark.parametrize(
    "section,field",
    [
        ({"topK": 0}, "preferences.topK"),
        ({"allWhenAtMost": "3"}, "preferences.allWhenAtMost"),
        ({"other": 1}, "preferences.other"),
        ([], "preferences"),
    ],
)
def test_the_preferences_section_is_validated(alice, section, field):
    body = {"id": "s", "name": "S", "memorySources": [SOURCE], "template": "{{preferences}}", "preferences": section}
    error = assert_envelope(alice.post("/v1/scenarios", body), 400)
    assert field in error["details"]["fields"]


def test_the_working_set_is_rebuilt_from_the_database_on_a_miss(alice):
    record = create(alice)
    tombstone_expired(alice)
    assert recall(alice).cached is False
    assert recall(alice).cached is True
    cache.delete(preferences_scope(UserAddress(alice.product, "u1")).key)  # expiry
    rebuilt = recall(alice)
    assert rebuilt.cached is False and rebuilt.details["memories"] == [{"id": record["id"], "version": 1}]


@pytest.mark.requires_redis
def test_the_working_set_lives_in_redis(alice):
    create(alice)
    tombstone_expired(alice)
    recall(alice)
    from django_redis import get_redis_connection

    connection = get_redis_connection("default")
    assert any(b"ws:" in key and b":u1::preferences" in key for key in connection.keys("*"))


def _redis_down(settings) -> None:
    settings.CACHES = {
        "default": {
            "BACKEND": "django_redis.cache.RedisCache",
            "LOCATION": f"redis://127.0.0.1:{closed_port()}/0",
            "OPTIONS": {
                "CLIENT_CLASS": "django_redis.client.DefaultClient",
                "SOCKET_CONNECT_TIMEOUT": 0.5,
                "SOCKET_TIMEOUT": 0.5,
            },
        }
    }
    settings.DJANGO_REDIS_IGNORE_EXCEPTIONS = False


def test_redis_down_fails_the_recall_and_the_write_and_writes_nothing(alice, settings):
    create(alice)
    _redis_down(settings)
    with pytest.raises(Exception) as recalled:
        recall(alice)
    assert "Connection" in type(recalled.value).__name__
    with pytest.raises(Exception) as written:
        memory_create(
            scope=UserAddress(alice.product, "u1"),
            kind="preference",
            actor=alice_actor(),
            proposal=Proposal(PREFERENCE_ZH["content"], PREFERENCE_ZH["evidence"], PREFERENCE_ZH["source"], True),
        )
    assert "Connection" in type(written.value).__name__
    assert LongTermMemory.objects.count() == 1
    assert_envelope(alice.post(f"{CONV}/turns", {"scenarioId": "x", "userMessage": "hi"}), 503, "storage_unavailable")


def alice_actor():
    from memoryhub.actors import Actor

    return Actor("api_key", "test")


@pytest.fixture
def http_embedder_url():
    server = make_server(options=ServerOptions(model="model-a"))
    serve_in_thread(server)
    host, port = server.server_address[:2]
    yield f"http://{host}:{port}"
    server.shutdown()
    server.server_close()


@pytest.mark.usefixtures("fresh_embedder")
def test_after_a_reindex_the_snapshot_is_rebuilt_from_the_new_index(alice, settings, http_embedder_url):
    zh = create(alice, ZH_LANGUAGE)["id"]
    create(alice, EN_DETAIL)  # superseded by COFFEE (detail: brief) below
    create(alice, COFFEE)
    assert recall(alice, "请用简洁的中文回复我").details["mode"] == "all"
    settings.EMBEDDING_BASE_URL, settings.EMBEDDING_MODEL = http_embedder_url, "model-a"
    call_command("reindex_embeddings", "--no-progress", stdout=StringIO())
    row = Scenario(sections={"preferences": {"topK": 1, "allWhenAtMost": 1}})
    result = recall(alice, "请用简洁的中文回复我", scenario_row=row)
    assert result.cached is False and result.details["mode"] == "hybrid"
    assert result.details["memories"][0]["id"] in {zh, LongTermMemory.objects.get(content__text="回答要简短").memory_id}


def test_a_snapshot_cached_before_a_reindex_is_never_compared_with_the_new_identity(alice):
    """Another process's local-memory cache may still hold the old index's vectors and pk: rebuild, never mix."""
    from memories.longterm.services.embedding_index import ACTIVE_INDEX_SCOPE

    zh = create(alice, ZH_LANGUAGE)["id"]
    create(alice, EN_DETAIL)
    stale_pk = 10_000
    old_vector = np.ones(384, dtype=np.float32).tobytes()  # another identity's vector: another size, even
    stale = {
        "index": stale_pk,
        "items": [
            {"id": "mem_old", "version": 1, "content": {"language": "zh", "text": "stale"}, "vector": old_vector},
            {"id": "mem_old2", "version": 1, "content": {"language": "en", "text": "stale"}, "vector": old_vector},
        ],
    }
    cache.set(preferences_scope(UserAddress(alice.product, "u1")).key, stale)
    cache.set(ACTIVE_INDEX_SCOPE.key, stale_pk)
    row = Scenario(sections={"preferences": {"topK": 1, "allWhenAtMost": 1}})
    result = recall(alice, "请用简洁的中文回复我", scenario_row=row)
    assert result.status == "ok" and result.details["mode"] == "hybrid"
    assert [m["id"] for m in result.details["memories"]] == [zh]

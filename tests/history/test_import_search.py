"""Importing past messages and searching a user's history through the HTTP API (keyword, semantic, hybrid)."""

from __future__ import annotations

import pytest

from memories.history.models import HistoryEntry
from tests.history.support import contents, import_url, imported, message, search, search_url
from tests.support.api import assert_envelope

pytestmark = pytest.mark.django_db(transaction=True)

TRIP = [
    message("t1", "user", "We are planning a trip to Lisbon in June with my sister.", "2024-05-01T10:00:00Z", "Ana"),
    message("t2", "assistant", "Lisbon in June is lovely; the tram 28 is worth a ride.", "2024-05-01T10:00:05Z"),
    message("t3", "user", "My cat Mochi hates the vet, any tips?", "2024-05-03T09:00:00Z", "Ana"),
    message("t4", "assistant", "Try a carrier with a towel that smells like home.", "2024-05-03T09:00:04Z"),
]
ZH = [
    message("z1", "user", "我下周要去杭州看西湖，顺便吃龙井虾仁。", "2024-06-01T08:00:00Z"),
    message("z2", "assistant", "杭州的西湖很美，记得去断桥。", "2024-06-01T08:00:03Z"),
]


def test_import_keeps_times_names_rounds_and_is_idempotent(alice):
    first = imported(alice, "u1", "c1", TRIP)
    assert first == {"imported": 4, "existing": 0, "rounds": 2}
    again = alice.post(import_url("u1", "c1"), {"messages": TRIP})
    assert again.status_code == 200 and again.json() == {"imported": 0, "existing": 4, "rounds": 2}
    rows = list(
        HistoryEntry.objects.filter(user_id="u1").order_by("pk").values_list("client_id", "round", "role", "name")
    )
    assert rows == [
        ("t1", 1, "user", "Ana"),
        ("t2", 1, "assistant", ""),
        ("t3", 2, "user", "Ana"),
        ("t4", 2, "assistant", ""),
    ]
    hit = search(alice, "u1", "Lisbon tram", "keyword").json()["results"][0]
    assert hit["clientId"] == "t2" and hit["createdAt"] == "2024-05-01T10:00:05Z" and hit["round"] == 1


def test_repeated_assistant_messages_share_a_round_and_a_leading_one_opens_one(alice):
    body = [
        message("a0", "assistant", "Welcome back!", "2024-01-01T00:00:00Z"),
        message("u1", "user", "hi", "2024-01-01T00:00:01Z"),
        message("a1", "assistant", "hello", "2024-01-01T00:00:02Z"),
        message("a2", "assistant", "how are you", "2024-01-01T00:00:03Z"),
    ]
    assert imported(alice, "u1", "c1", body)["rounds"] == 2
    rounds = list(HistoryEntry.objects.order_by("pk").values_list("round", flat=True))
    assert rounds == [1, 2, 2, 2]
    # A later batch continues the counter; a batch that repeats an old message then adds one joins its round.
    imported(alice, "u1", "c1", [body[3], message("a3", "assistant", "still there?", "2024-01-01T00:01:00Z")])
    assert HistoryEntry.objects.get(client_id="a3").round == 2


def test_same_client_id_with_other_content_is_422_and_changes_nothing(alice):
    imported(alice, "u1", "c1", TRIP)
    changed = [
        *TRIP[:1],
        message("t2", "assistant", "something else", "2024-05-01T10:00:05Z"),
        message("t9", "user", "new", "2024-05-09T00:00:00Z"),
    ]
    response = alice.post(import_url("u1", "c1"), {"messages": changed})
    assert response.status_code == 422
    assert_envelope(response, 422, "client_id_conflict")
    assert not HistoryEntry.objects.filter(client_id="t9").exists()
    twice = alice.post(import_url("u1", "c2"), {"messages": [TRIP[0], TRIP[0]]})
    assert twice.status_code == 422 and not HistoryEntry.objects.filter(conversation_id="c2").exists()


@pytest.mark.parametrize(
    "body, field",
    [
        ({"messages": []}, "messages"),
        ({"messages": [message("x", "system", "hi", "2024-01-01T00:00:00Z")]}, "messages"),
        ({"messages": [{"clientId": "x", "role": "user", "content": "hi"}]}, "messages"),
        ({"messages": [message("x", "user", "hi", "yesterday")]}, "messages"),
        ({"messages": [message("x", "user", "hi", "2024-01-01T00:00:00Z") for _ in range(1001)]}, "messages"),
        ({"messages": [], "extra": 1}, "extra"),
    ],
)
def test_import_validation_errors_are_400_with_the_envelope(alice, body, field):
    response = alice.post(import_url("u1", "c1"), body)
    assert response.status_code == 400, response.json()
    assert_envelope(response, 400)
    assert HistoryEntry.objects.count() == 0


def test_keyword_finds_english_stems_and_chinese_words_without_spaces(alice):
    imported(alice, "u1", "c1", TRIP)
    imported(alice, "u1", "c2", ZH)
    assert contents(search(alice, "u1", "planned trips", "keyword"))[0] == TRIP[0]["content"]
    assert contents(search(alice, "u1", "西湖", "keyword")) and all(
        "西湖" in text for text in contents(search(alice, "u1", "西湖", "keyword"))
    )
    assert contents(search(alice, "u1", "龙井虾仁好吃吗", "keyword"))[0] == ZH[0]["content"]
    assert contents(search(alice, "u1", "zebra", "keyword")) == []


def test_semantic_and_hybrid_rank_the_paraphrase_first_with_why(alice):
    imported(alice, "u1", "c1", TRIP)
    assert contents(search(alice, "u1", "advice for taking my pet to the animal doctor", "semantic"))[0] in {
        TRIP[2]["content"],
        TRIP[3]["content"],
    }
    hits = search(alice, "u1", "Mochi the cat and the vet", "hybrid", limit=2).json()["results"]
    assert hits[0]["content"] == TRIP[2]["content"]
    why = hits[0]["why"]
    assert why["keyword"]["rank"] == 1 and why["semantic"]["rank"] >= 1 and why["fused"] == hits[0]["score"]
    assert hits[0]["score"] >= hits[1]["score"]


def test_filters_conversations_times_and_roles(alice):
    imported(alice, "u1", "c1", TRIP)
    imported(alice, "u1", "c2", ZH)
    everything = {"mode": "keyword"}
    assert set(contents(search(alice, "u1", "Lisbon 西湖", **everything, conversations=["c2"]))) <= {
        h["content"] for h in ZH
    }
    assert contents(search(alice, "u1", "Lisbon", **everything, roles=["assistant"])) == [TRIP[1]["content"]]
    late = contents(search(alice, "u1", "Lisbon Mochi vet", **everything, after="2024-05-02T00:00:00Z"))
    assert TRIP[0]["content"] not in late and TRIP[2]["content"] in late
    early = contents(search(alice, "u1", "Lisbon Mochi vet", **everything, before="2024-05-02T00:00:00Z"))
    assert TRIP[2]["content"] not in early and TRIP[0]["content"] in early


@pytest.mark.parametrize("mode", ["keyword", "semantic", "hybrid"])
def test_after_is_inclusive_and_before_exclusive_at_a_messages_own_time(alice, mode):
    """docs/history.md: `after` (inclusive), `before` (exclusive) — also at the stored time itself."""
    lena = [
        message("m1", "user", "My daughter Lena starts violin lessons on Tuesday.", "2024-03-01T18:00:00Z"),
        message("m2", "assistant", "How exciting for Lena! Violin takes patience.", "2024-03-01T18:00:02Z"),
        message("m3", "user", "Lena practised violin for an hour.", "2024-03-01T18:00:02.500001Z"),
    ]
    imported(alice, "u1", "c1", lena)
    query = "Lena violin"
    assert set(contents(search(alice, "u1", query, mode, before="2024-03-01T18:00:02Z"))) == {lena[0]["content"]}
    assert set(contents(search(alice, "u1", query, mode, after="2024-03-01T18:00:02Z"))) == {
        lena[1]["content"],
        lena[2]["content"],
    }
    assert set(contents(search(alice, "u1", query, mode, after="2024-03-01T18:00:02.500001Z"))) == {lena[2]["content"]}


@pytest.mark.parametrize(
    "body",
    [
        {"query": "x", "mode": "fuzzy"},
        {"query": "x", "limit": 0},
        {"query": "x", "limit": 101},
        {"query": "x", "limit": "5"},
        {"query": "x", "roles": ["system"]},
        {"query": "x", "after": "not a time"},
        {"query": "x", "after": "2024-02-01T00:00:00Z", "before": "2024-01-01T00:00:00Z"},
        {"query": "x", "conversations": "c1"},
        {"mode": "keyword"},
        {"query": "x", "unknown": True},
    ],
)
def test_search_validation_errors_are_400_with_the_envelope(alice, body):
    response = alice.post(search_url("u1"), body)
    assert response.status_code == 400, response.json()
    assert_envelope(response, 400)


def test_an_empty_conversations_list_is_400_naming_it_as_an_empty_roles_list_is(alice):
    """An empty "only these conversations" would have searched every conversation."""
    imported(alice, "u1", "c1", TRIP)
    for field in ("conversations", "roles"):
        response = alice.post(search_url("u1"), {"query": "Lisbon", "mode": "keyword", field: []})
        assert set(assert_envelope(response, 400, "invalid_request")["details"]["fields"]) == {field}


def test_default_mode_is_hybrid_and_limit_10(alice):
    imported(
        alice,
        "u1",
        "c1",
        [message(f"m{i}", "user", f"note number {i} about gardening", f"2024-01-01T00:00:{i:02d}Z") for i in range(15)],
    )
    hits = alice.post(search_url("u1"), {"query": "gardening"}).json()["results"]
    assert len(hits) == 10 and set(hits[0]["why"]) == {"fused", "keyword", "semantic", "neighbours"}


def test_another_product_sees_nothing_and_another_user_nothing(alice, bob):
    imported(alice, "u1", "c1", TRIP)
    assert contents(search(bob, "u1", "Lisbon", "keyword")) == []
    assert contents(search(bob, "u1", "Lisbon", "hybrid")) == []
    assert contents(search(alice, "u2", "Lisbon", "keyword")) == []
    # Bob importing the same clientIds into "his" u1/c1 is his own conversation: nothing of Alice's changes.
    assert imported(bob, "u1", "c1", TRIP[:1])["imported"] == 1
    assert HistoryEntry.objects.filter(product=alice.product).count() == 4


def test_status_counts_pending_vectors(alice):
    imported(alice, "u1", "c1", TRIP)
    assert alice.get("/v1/users/u1/history").json() == {"messages": 4, "embedded": 4, "pending": 0}


def test_status_follows_an_index_switched_by_another_process(alice):
    """`reindex_embeddings` runs in its own process: it cannot reach the server's local-memory working set, and
    the status went on counting the old index's vectors until the entry expired (an outside check)."""
    from django.core.cache import cache

    from memories.longterm.models import EmbeddingIndex
    from memories.longterm.services.embedding_index import ACTIVE_INDEX_SCOPE

    imported(alice, "u1", "c1", TRIP)
    cache.delete(ACTIVE_INDEX_SCOPE.key)  # a server process that has not seen the index change itself
    assert alice.get("/v1/users/u1/history").json()["embedded"] == 4  # the active index is in the working set now
    old = EmbeddingIndex.objects.get(status="active")
    EmbeddingIndex.objects.filter(pk=old.pk).update(status="retired")  # as the command's process commits it
    new = EmbeddingIndex.objects.create(
        provider=old.provider, model=f"{old.model}-next", dimension=old.dimension, preprocessing=old.preprocessing,
        identity_key=f"{old.identity_key}-next", backend=old.backend, status="active",
    )  # fmt: skip
    assert alice.get("/v1/users/u1/history").json() == {"messages": 4, "embedded": 0, "pending": 4}
    HistoryEntry.objects.filter(product=alice.product).update(embedding_index=new)  # the backfill's work
    assert alice.get("/v1/users/u1/history").json() == {"messages": 4, "embedded": 4, "pending": 0}


def test_a_cross_lingual_hit_keeps_its_semantic_place_against_keyword_matches(alice):
    # The Chinese query shares the word 名字 with two Chinese messages; the English answer shares no word with
    # it. Fused with equal weights, those two keyword hits would push the answer down to third.
    imported(
        alice,
        "u1",
        "pets",
        [
            message("p1", "user", "My dog is called Biscuit.", "2024-05-01T10:00:00Z"),
            message("p2", "user", "我喜欢这个名字的发音。", "2024-05-02T10:00:00Z"),
            message("p3", "user", "我的名字很长，大家都记不住。", "2024-05-03T10:00:00Z"),
            message("p4", "user", "我们去公园散步了。", "2024-05-04T10:00:00Z"),
        ],
    )
    semantic = search(alice, "u1", "我的狗叫什么名字？", "semantic").json()["results"]
    assert semantic[0]["content"] == "My dog is called Biscuit."
    hits = search(alice, "u1", "我的狗叫什么名字？", "hybrid").json()["results"]
    assert hits[0]["content"] == "My dog is called Biscuit."
    assert hits[0]["why"]["keyword"] == {"rank": None, "score": None} and hits[0]["why"]["semantic"]["rank"] == 1
    assert [hit["why"]["keyword"]["rank"] for hit in hits[1:3]] == [1, 2]


def test_a_hits_adjacent_turn_earns_a_share_of_its_score(alice):
    # The answer ("The cello?") shares no word with the question asked now; it is found through its neighbour.
    imported(
        alice,
        "u1",
        "music",
        [
            message("m1", "user", "Guess which instrument I picked up last year!", "2024-05-01T10:00:00Z", "Sam"),
            message("m2", "assistant", "The cello? You always loved it.", "2024-05-01T10:00:05Z", "Alex"),
            message("m3", "user", "I went hiking in the Alps with my brother.", "2024-05-02T10:00:00Z", "Kim"),
            message("m4", "assistant", "The Alps are beautiful in summer.", "2024-05-02T10:00:05Z", "Alex"),
            message("m5", "user", "Our band needs a new drummer for the summer tour.", "2024-05-03T10:00:00Z", "Kim"),
            message("m6", "assistant", "Ask at the music school downtown.", "2024-05-03T10:00:05Z", "Alex"),
            message("m7", "user", "Learning the violin or the piano is hard at first.", "2024-05-04T10:00:00Z", "Kim"),
        ],
    )
    question = "Which instrument did Sam pick up?"
    hits = search(alice, "u1", question, "hybrid", limit=7, minScore=-1).json()["results"]
    assert [hit["clientId"] for hit in hits[:2]] == ["m1", "m2"]
    assert hits[1]["why"]["semantic"]["rank"] > 2  # lifted over a message the semantic signal preferred
    assert hits[1]["why"]["keyword"]["rank"] is None and hits[1]["why"]["neighbours"]["score"] > 0
    far = next(hit for hit in hits if hit["clientId"] == "m4")
    assert far["why"]["neighbours"]["score"] < hits[1]["why"]["neighbours"]["score"]
    # Under the default floor "The cello?" (cosine ~0.13) is no semantic hit, and only two messages are (m1, m7):
    # it is still returned, as the neighbour of the kept question, with no signal of its own.
    floored = {hit["clientId"]: hit["why"] for hit in search(alice, "u1", question, limit=7).json()["results"]}
    assert {"m1", "m2", "m7"} <= set(floored) and len(floored) < 7
    assert floored["m2"]["semantic"]["rank"] is None and floored["m2"]["neighbours"]["score"] > 0


@pytest.mark.parametrize("client_id", ["  m1  ", "m1 ", " m1", "m1\u3000"])
def test_a_client_id_with_a_space_at_an_end_is_400_naming_it_and_stores_nothing(alice, client_id):
    """docs/contract.md, "Request bodies": ids are kept as sent, never trimmed; " m1 " stored as sent was a second m1
    beside the real one (idempotency by clientId broken), trimmed it would be m1 where the product sent another id."""
    first = message("m0", "user", "hi", "2024-01-01T00:00:00Z")
    body = {"messages": [first, message(client_id, "user", "hello", "2024-01-01T00:00:01Z")]}
    error = assert_envelope(alice.post(import_url("u1", "c1"), body), 400, "invalid_request")
    assert "no space at either end" in str(error["details"]["fields"]["messages.1.clientId"])
    assert HistoryEntry.objects.count() == 0
    assert imported(alice, "u1", "c1", [message("m1", "user", "hello", "2024-01-01T00:00:01Z")])["imported"] == 1


def test_a_client_id_with_inner_spaces_is_kept_as_sent(alice):
    imported(alice, "u1", "c1", [message("D1 : 3", "user", "hello", "2024-01-01T00:00:01Z")])
    assert list(HistoryEntry.objects.values_list("client_id", flat=True)) == ["D1 : 3"]

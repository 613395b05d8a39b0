"""PostgreSQL: a user's history held in the process (memories/history/resident.py) answers as the SQL path does,
in one statement, and sees every change — committed by this request, by another connection, or by a
transaction that was still running when the rows were read."""

from __future__ import annotations

import threading
from datetime import UTC, datetime, timedelta
from zoneinfo import ZoneInfo

import pytest
from django.db import connection, transaction
from django.test.utils import CaptureQueriesContext

from memories.history import resident
from memories.history.models import HistoryEntry
from memories.history.selectors import HistoryFilters, history_search
from memories.history.text import TS_CONFIG, keyword_text
from memoryhub.addresses import UserAddress
from tests.history.support import contents, imported, search
from tests.history.test_import_search import TRIP, ZH
from tests.history.test_recall_source import OLD, play_quay_scene, regenerate_lighthouse_reply, scenario, turn

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.requires_postgres]

QUERIES = [
    "advice for taking my pet to the animal doctor",
    "violin lessons for my daughter",
    "西湖 龙井虾仁",
    "Lisbon tram in June",
    "lighthouse beam ships",
    "Who is the heir the Salt Guild wants?",
    "the",  # only a stop word: no keyword term
]
FILTERS = [
    HistoryFilters(),
    HistoryFilters(conversations=("c1", "quay")),
    HistoryFilters(after=datetime(2024, 5, 2, tzinfo=UTC)),
    HistoryFilters(before=datetime(2024, 5, 2, tzinfo=UTC)),
    HistoryFilters(roles=("assistant",)),
    HistoryFilters(exclude_conversation="quay", exclude_from_round=2),
    HistoryFilters(witness="Oderic"),
    HistoryFilters(witness="Mara", roles=("user",)),
]


def fill(api) -> None:
    """Imported messages in three conversations, turns with a regenerated reply, and a group scene."""
    imported(api, "u1", "c1", TRIP)
    imported(api, "u1", "c2", ZH)
    imported(api, "u1", "c3", OLD)
    scenario(api)
    first = turn(api, "c", "Tell me about lighthouses", reply="Lighthouses guide ships with a flashing beam.")
    regenerate_lighthouse_reply(api, first)
    play_quay_scene(api)


def answer(hits) -> list[tuple]:
    return [
        (h.entry.pk, h.entry.conversation_id, h.entry.round, h.entry.role, h.entry.name, h.entry.content,
         h.entry.created_at, h.entry.client_id, _ranks(h.why))
        for h in hits
    ]  # fmt: skip


def _ranks(why: dict) -> dict:
    return {name: part.get("rank") for name, part in why.items() if isinstance(part, dict)}


# Each mode with its floors (docs/recall.md, "The floor"): None is the mode's default (hybrid's SEARCH_MIN_SCORE or
# the embedder's, none for semantic), -1 none, 0.3 above most of these queries' cosines.
FLOORS = {"keyword": (None,), "semantic": (None, 0.3), "hybrid": (None, -1.0, 0.3)}


def test_held_rows_rank_as_the_sql_statements_for_every_mode_floor_and_filter(alice, monkeypatch):
    fill(alice)
    scope = UserAddress(alice.product, "u1")
    cases = [(mode, floor, filters) for mode, floors in FLOORS.items() for floor in floors for filters in FILTERS]
    compared, floored = 0, 0
    for query in QUERIES:
        for mode, floor, filters in cases:
            asked = {"query": query, "mode": mode, "limit": 20, "filters": filters, "min_score": floor}
            held = history_search(scope, **asked)
            assert (alice.product.pk, "u1") in resident._held
            with monkeypatch.context() as sql_only:
                sql_only.setattr(resident, "MAX_ROWS", 0)
                sql = history_search(scope, **asked)
            label = (query, mode, floor, filters)
            assert answer(held) == answer(sql), label
            assert [h.score for h in held] == pytest.approx([h.score for h in sql], rel=1e-5, abs=1e-6), label
            compared += bool(sql)
            floored += floor == 0.3 and bool(sql)
    assert compared > 100 and floored > 10  # most combinations find something: not a comparison of empty lists


def test_a_held_user_is_searched_with_one_statement(alice):
    imported(alice, "u1", "c1", TRIP)
    search(alice, "u1", "my cat hates the vet")  # reads the rows; warms the query's vector
    with CaptureQueriesContext(connection) as queries:
        found = contents(search(alice, "u1", "my cat hates the vet"))
    assert found[0] == "My cat Mochi hates the vet, any tips?"
    statements = [q["sql"] for q in queries.captured_queries if "history" in q["sql"]]
    assert len(statements) == 1 and "memoryhub_history_refresh(" in statements[0], statements


def test_the_refresh_function_reads_query_terms_with_the_keyword_texts_configuration():
    """The function (migration history 0007) spells the text-search configuration itself: it must be TS_CONFIG."""
    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_get_functiondef('memoryhub_history_refresh'::regproc)")
        definition = cursor.fetchone()[0]
    assert f"plainto_tsquery('{TS_CONFIG}'" in definition
    assert definition.count("plainto_tsquery(") == 1


def test_changes_through_the_api_are_seen_by_the_next_search(alice):
    imported(alice, "u1", "c1", TRIP)
    assert contents(search(alice, "u1", "lighthouse", "keyword")) == []
    scenario(alice)
    first = turn(alice, "c", "Tell me about lighthouses", reply="Lighthouses guide ships with a flashing beam.")
    assert "Lighthouses guide ships with a flashing beam." in contents(search(alice, "u1", "lighthouse", "keyword"))
    regenerate_lighthouse_reply(alice, first)  # the first reply is superseded: its message row changes
    for mode in ("keyword", "semantic", "hybrid"):
        found = contents(search(alice, "u1", "lighthouse flashing beam ships light coasts", mode, limit=100))
        assert "Lighthouses guide ships with a flashing beam." not in found, mode
        assert "Towers of light on rocky coasts." in found, mode
    HistoryEntry.objects.filter(product=alice.product, user_id="u1", client_id="t3").delete()
    assert "My cat Mochi hates the vet, any tips?" not in contents(search(alice, "u1", "cat vet", limit=100))


def test_a_transaction_running_when_the_rows_were_read_is_seen_once_it_commits(alice):
    imported(alice, "u1", "c1", TRIP)
    written, read = threading.Event(), threading.Event()

    def writer() -> None:
        try:
            with transaction.atomic():
                when = datetime(2024, 7, 1, tzinfo=UTC)
                text = "The lighthouse keeper plays the oboe at dawn."
                HistoryEntry.objects.create(
                    product=alice.product, user_id="u1", conversation_id="c9", client_id="late", round=1,
                    role="user", content=text, created_at=when,
                    search_text=keyword_text(role="user", name="", content=text, created_at=when),
                )  # fmt: skip
                written.set()
                assert read.wait(30)
        finally:
            connection.close()

    thread = threading.Thread(target=writer)
    thread.start()
    try:
        assert written.wait(30)
        # Read while the writer runs: its row is invisible, and its transaction is in the held snapshot's list.
        assert contents(search(alice, "u1", "oboe lighthouse", "keyword")) == []
    finally:
        read.set()
        thread.join(30)
    late = contents(search(alice, "u1", "oboe lighthouse", "keyword"))
    assert late == ["The lighthouse keeper plays the oboe at dawn."]


def test_a_user_over_the_bound_is_searched_by_the_sql_statements(alice, monkeypatch):
    monkeypatch.setattr(resident, "MAX_ROWS", 3)
    imported(alice, "u1", "c1", TRIP)  # four messages
    with CaptureQueriesContext(connection) as queries:
        found = contents(search(alice, "u1", "my cat hates the vet"))
    assert found[0] == "My cat Mochi hates the vet, any tips?"
    assert (alice.product.pk, "u1") not in resident._held
    assert any("memoryhub_history_semantic" in q["sql"] for q in queries.captured_queries)


def test_the_held_rows_stay_within_the_byte_bound_least_recently_searched_out_first(alice, monkeypatch):
    for user in ("u1", "u2", "u3"):
        imported(alice, user, "c1", TRIP)
    search(alice, "u1", "Lisbon")
    one_user = resident._held[(alice.product.pk, "u1")].nbytes
    monkeypatch.setattr(resident, "max_bytes", lambda: 2 * one_user + one_user // 2)
    search(alice, "u2", "Lisbon")
    search(alice, "u1", "Lisbon")  # searched again, nothing changed: now the most recent
    search(alice, "u3", "Lisbon")  # makes room: u2 goes
    assert list(resident._held) == [(alice.product.pk, "u1"), (alice.product.pk, "u3")]
    assert contents(search(alice, "u2", "Lisbon tram", "keyword"))[0].startswith("Lisbon in June")


def test_no_memory_budget_holds_nobody_and_every_search_is_answered_in_sql(alice, settings):
    settings.HISTORY_HELD_MEMORY_MB = 0
    imported(alice, "u1", "c1", TRIP)
    for _ in range(2):
        with CaptureQueriesContext(connection) as queries:
            found = contents(search(alice, "u1", "my cat hates the vet"))
        assert found[0] == "My cat Mochi hates the vet, any tips?"
        assert any("memoryhub_history_semantic" in q["sql"] for q in queries.captured_queries)
        assert not any("memoryhub_history_refresh" in q["sql"] for q in queries.captured_queries)
    assert (alice.product.pk, "u1") not in resident._held


def test_created_before_a_time_filter_compares_the_instant(alice):
    """The held filter compares instants, whatever the time zone the filter was given in."""
    imported(alice, "u1", "c1", TRIP)
    scope = UserAddress(alice.product, "u1")
    plus_two = datetime(2024, 5, 3, 10, 0, tzinfo=UTC).astimezone(ZoneInfo("Europe/Paris"))
    found = history_search(scope, query="vet", mode="keyword", limit=10, filters=HistoryFilters(before=plus_two))
    assert [h.entry.client_id for h in found] == ["t3"]
    found = history_search(
        scope, query="vet", mode="keyword", limit=10, filters=HistoryFilters(after=plus_two - timedelta(hours=1))
    )
    assert [h.entry.client_id for h in found] == ["t3"]


def test_the_bound_keeps_the_sql_path_exact():
    """At most MAX_ROWS rows, the SQL path's BM25 reads them all (statistics and candidates) and its vector
    ranking is the exact scan: what the held rows compute. A lower SQL bound would make the two differ."""
    from memories.history import selectors

    assert 0 < resident.MAX_ROWS <= min(selectors.SAMPLE, selectors.CANDIDATES, selectors.EXACT_SCAN_MAX_ROWS)


def refresh(product_pk: str, user: str, held: resident.Resident) -> tuple:
    """The function's header for a search of `held`'s user: (count or None, marker)."""
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT total, marker FROM memoryhub_history_refresh(%s, %s, %s::text[], %s::pg_snapshot, %s, %s)",
            [product_pk, user, [], held.snapshot, resident.MAX_ROWS, held.marker],
        )
        return cursor.fetchone()


def test_the_rows_are_counted_only_after_a_deletion_in_the_product(alice):
    """The count that finds deleted rows runs only when the product's deletion marker moved (migration 0009)."""
    imported(alice, "u1", "c1", TRIP)
    imported(alice, "u2", "c1", OLD)
    search(alice, "u1", "cat vet")
    held = resident._held[(alice.product.pk, "u1")]
    assert refresh(alice.product.pk, "u1", held) == (None, held.marker)  # nothing deleted: not counted
    HistoryEntry.objects.filter(product=alice.product, user_id="u2", client_id="o3").delete()  # another user's
    counted, marker = refresh(alice.product.pk, "u1", held)
    assert counted == len(TRIP) and marker != held.marker
    assert contents(search(alice, "u1", "cat vet", limit=100))  # recounted: the held rows are still all of u1's
    assert resident._held[(alice.product.pk, "u1")].marker == marker
    assert refresh(alice.product.pk, "u1", resident._held[(alice.product.pk, "u1")])[0] is None


def test_a_deletion_by_sql_and_a_truncate_are_seen_by_the_next_search(alice):
    imported(alice, "u1", "c1", TRIP)
    assert "My cat Mochi hates the vet, any tips?" in contents(search(alice, "u1", "cat vet", limit=100))
    with connection.cursor() as cursor:
        cursor.execute("DELETE FROM history_entry WHERE product_id = %s AND client_id = 't3'", [alice.product.pk])
    assert "My cat Mochi hates the vet, any tips?" not in contents(search(alice, "u1", "cat vet", limit=100))
    assert contents(search(alice, "u1", "Lisbon tram", limit=100))
    with connection.cursor() as cursor:
        cursor.execute("TRUNCATE history_entry CASCADE")
    assert contents(search(alice, "u1", "Lisbon tram", limit=100)) == []


def test_a_held_user_growing_over_the_bound_is_searched_by_the_sql_statements(alice, monkeypatch):
    monkeypatch.setattr(resident, "MAX_ROWS", 4)
    imported(alice, "u1", "c1", TRIP)  # four messages: held
    search(alice, "u1", "cat vet")
    assert (alice.product.pk, "u1") in resident._held
    imported(alice, "u1", "c2", ZH)  # six, with no deletion: not counted, the held and changed rows say so
    assert "杭州的西湖很美，记得去断桥。" in contents(search(alice, "u1", "西湖", limit=100))
    assert (alice.product.pk, "u1") not in resident._held


def test_a_products_deletion_marker_goes_with_the_product(alice):
    imported(alice, "u1", "c1", TRIP)
    HistoryEntry.objects.filter(product=alice.product, client_id="t1").delete()
    with connection.cursor() as cursor:
        cursor.execute("SELECT count(*) FROM history_deletion WHERE product_id = %s", [alice.product.pk])
        assert cursor.fetchone()[0] == 1
        alice.product.delete()
        cursor.execute("SELECT count(*) FROM history_deletion WHERE product_id = %s", [alice.product.pk])
        assert cursor.fetchone()[0] == 0

"""Benchmark: the latency of preparing a turn, compared with one `GET …/memory`, and as the store grows.

    DATABASE_URL=postgres://postgres@127.0.0.1:5432/<db> [REDIS_URL=redis://127.0.0.1:6379/<n>] \\
        .venv/bin/python bench/turn.py [--iterations 400] [--sizes 10000,1000000] [--profile]

Both requests go through the HTTP API in-process with Django's test client (routing, authentication,
rate limiting, serialization included), interleaved so that machine noise hits both alike. Targets:
  - warm-cache prepare with four sources ≤ 1.5 × one GET …/memory;
  - the same prepare with 10 thousand and with 1 million other memory documents stored ≤ 1.2 × the
    prepare on the bare store (a turn's cost must not grow with the size of the store);
  - a prepare with the `history` source over a 2,000-message conversation, with a compaction in place,
    ≤ 1.2 × the same prepare over a 20-message conversation (warm working set, and with the history
    rebuilt from the database every time); `--history-only` measures just this;
  - a prepare whose only source is `history-search` (issue 25: the user's past turns relevant to the message)
    over `--recall-messages` (default 1,000) of the user's past messages ≤ 2 × one GET …/memory, the query's
    vector in the working set (it is the same message every time); `--recall-only` measures just this.
    Seeded as bench/history.py seeds (random unit vectors: embedding is not what is measured);
    bench/history.py measures the same at 100,000 messages.
The script migrates the database it is given, creates its own products and removes them at the end
(pass --keep to leave the filler documents for a second run).
"""

from __future__ import annotations

import argparse
import cProfile
import io
import os
import pstats
import secrets
import statistics
import sys
import time
import uuid
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "memoryhub.settings")
os.environ.setdefault("SECRET_KEY", secrets.token_urlsafe(50))  # settings refuse to start without one
os.environ.setdefault("MEMORYHUB_RATE_LIMIT", "100000000/min")  # the benchmark is not a rate-limit test

import django  # noqa: E402

django.setup()

from django.conf import settings  # noqa: E402
from django.core.management import call_command  # noqa: E402
from django.db import connection  # noqa: E402
from django.test.utils import CaptureQueriesContext  # noqa: E402
from rest_framework.test import APIClient  # noqa: E402

from memories.history.models import HistoryEntry  # noqa: E402
from memories.models import Conversation, MemoryDocument, Message, Product, Scenario, Turn  # noqa: E402
from memories.services.products import product_create  # noqa: E402
from memoryhub import working_set  # noqa: E402
from memoryhub.runtimes import registry  # noqa: E402

USER, CONV = "bench-user", "bench-conv"
BASE = f"/v1/users/{USER}/conversations/{CONV}"
VARIABLES = ["jsonMemory", "preferences", "compassMemory", "memoryTable"]
MEMORY = {
    "scene": "城门",
    "keyHolder": "守卫",
    "mood": "wary",
    "inventory": ["lantern", "rope", "bread"],
    "relationships": {"guard": {"trust": 3, "notes": "owes the user a favour"}, "merchant": {"trust": -1}},
    "facts": [f"fact number {i}: the north gate closes at dusk" for i in range(12)],
}


def client_for(key: str) -> APIClient:
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Bearer {key}")
    return client


def expect(response, status: int):
    if response.status_code != status:
        raise SystemExit(f"setup failed: {response.status_code} {response.content[:300]!r}")
    return response.json()


def agent_ref(variable: str) -> str:
    """The registry's agentRef for the variable; a diary source names its diary (the bench's own name)."""
    registered = registry.get_source(variable)
    return sorted(registered.agent_refs)[0] if registered and registered.agent_refs else f"ref-{variable}"


def scenario_body(slug: str = "bench", variables: list[str] = VARIABLES) -> dict:
    body = {
        "id": slug,
        "name": slug,
        "memorySources": [{"id": f"s-{v}", "agentRef": agent_ref(v), "variable": v} for v in variables],
        "template": "\n".join(f"<{v}>{{{{{v}}}}}</{v}>" for v in variables) + "\nUser: {{userMessage}}",
    }
    if "memoryTable" in variables and "tables" in registry.scenario_section_names():
        body["tables"] = "plugin-defaults"
    return body


def seed(client: APIClient, product: Product) -> None:
    """Give every source something to recall, through the API where the API can write it."""
    expect(client.put(f"{BASE}/memory", {"expectedRevision": 0, "memory": MEMORY}, format="json"), 200)
    preference = {
        "kind": "preference",
        "consent": True,
        "evidence": "以后请用简短的中文回答我",
        "source": "以后请用简短的中文回答我，谢谢。",
        "content": {"language": "zh", "detail": "brief", "text": "用户喜欢简短的中文回答"},
    }
    response = client.post(f"/v1/users/{USER}/memories", preference, format="json")
    if response.status_code != 201:
        print(f"  (preferences not seeded: {response.status_code} {response.content[:200]!r})")
    _seed_diary(product)


def _seed_diary(product: Product) -> None:
    try:
        from diaries.models import DiaryEntry
    except ImportError:
        return
    DiaryEntry.objects.create(
        product=product,
        user_id=USER,
        conversation_id=CONV,
        agent_ref="ref-compassMemory",
        round_from=1,
        round_to=20,
        kind="summary_diary",
        summary="The user and the guard argued at the north gate; the guard kept the key.",
        body="…",
        summarizer="bench",
        subscription_category="default",
    )


def timed(call) -> tuple[float, object]:
    start = time.perf_counter()
    response = call()
    elapsed = time.perf_counter() - start
    if response.status_code not in (200, 201):
        raise SystemExit(f"request failed during the benchmark: {response.status_code} {response.content[:300]!r}")
    return elapsed, response


def warm_up(client: APIClient, prepare, get, count: int = 30) -> None:
    """Outlast the invalidation markers left by the setup's writes, then fill the working set."""
    prepare()  # the first prepare may instantiate tables (a write, hence a marker)
    time.sleep(working_set.TOMBSTONE_SECONDS + 0.5)
    for _ in range(count):
        get(), prepare()


def measure(client: APIClient, iterations: int, slug: str = "bench") -> dict:
    get = lambda: client.get(f"{BASE}/memory")  # noqa: E731
    prepare = lambda: client.post(f"{BASE}/turns", {"scenarioId": slug, "userMessage": "谁拿着钥匙?"}, format="json")  # noqa: E731
    warm_up(client, prepare, get)
    gets, prepares, commits, misses = [], [], [], 0
    for index in range(iterations):
        # alternate which goes first, so neither always runs right after the other
        if index % 2:
            gets.append(timed(get)[0])
        elapsed, response = timed(prepare)
        prepares.append(elapsed)
        misses += not all(source["cached"] for source in response.json()["sources"])
        if not index % 2:
            gets.append(timed(get)[0])
        commits.append(commit_probe())
    return {
        "get_ms": statistics.median(gets) * 1000,
        "prepare_ms": statistics.median(prepares) * 1000,
        "commit_ms": statistics.median(commits) * 1000,
        "sources": [(s["variable"], s["status"]) for s in response.json()["sources"]],
        "misses": misses,
    }


PROBE_TABLE = "bench_turn_commit_probe"


def commit_probe() -> float:
    """One durable one-row INSERT (autocommit): what the WAL flush the turn record waits for costs right now.

    The prepare's turn INSERT must wait for it and the GET's read never does, so on a busy disk this alone
    is a large part of prepare − GET; the bench prints it so that the ratio can be read against it.
    """
    began = time.perf_counter()
    with connection.cursor() as cursor:
        cursor.execute(f"INSERT INTO {PROBE_TABLE} DEFAULT VALUES")
    return time.perf_counter() - began


def fill(product: Product, start: int, stop: int) -> float:
    """Insert documents start..stop-1 for other users of another product, in one INSERT … SELECT."""
    table = MemoryDocument._meta.db_table
    began = time.perf_counter()
    with connection.cursor() as cursor:
        cursor.execute(
            f"INSERT INTO {table} (product_id, user_id, conversation_id, revision, memory, created_at, updated_at)"
            " SELECT %s, 'filler-' || g, 'c' || (g %% 7), 1 + (g %% 5),"
            " jsonb_build_object('scene', 'scene ' || g, 'keyHolder', 'npc ' || (g %% 97), 'n', g), now(), now()"
            " FROM generate_series(%s, %s) AS g",
            [product.pk, start, stop - 1],
        )
        cursor.execute(f"ANALYZE {table}")
    return time.perf_counter() - began


def queries_of(client: APIClient, slug: str = "bench") -> dict:
    out = {}
    for name, call in (
        ("GET memory", lambda: client.get(f"{BASE}/memory")),
        ("prepare", lambda: client.post(f"{BASE}/turns", {"scenarioId": slug, "userMessage": "x"}, format="json")),
    ):
        with CaptureQueriesContext(connection) as captured:
            call()
        out[name] = [q["sql"][:140] for q in captured.captured_queries]
    return out


def profile(client: APIClient, count: int = 200, slug: str = "bench") -> str:
    profiler = cProfile.Profile()
    profiler.enable()
    for _ in range(count):
        client.post(f"{BASE}/turns", {"scenarioId": slug, "userMessage": "谁拿着钥匙?"}, format="json")
    profiler.disable()
    stream = io.StringIO()
    only = os.environ.get("BENCH_PROFILE_FILTER", "")  # e.g. "memories|memoryhub": our own functions only
    order = os.environ.get("BENCH_PROFILE_SORT", "cumulative")  # or "tottime"
    pstats.Stats(profiler, stream=stream).sort_stats(order).print_stats(only, 35)
    return stream.getvalue()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--iterations", type=int, default=400)
    parser.add_argument("--sizes", default="10000,1000000", help="store sizes (other memory documents) to measure")
    parser.add_argument("--profile", action="store_true", help="print the queries of each request and a cProfile")
    parser.add_argument(
        "--breakdown", action="store_true", help="also measure a prepare with no source and with each one"
    )
    parser.add_argument("--keep", action="store_true", help="keep the benchmark's products and filler documents")
    parser.add_argument("--history-only", action="store_true", help="measure only the compact-history prepare")
    parser.add_argument("--recall-only", action="store_true", help="measure only the history-search prepare")
    parser.add_argument("--recall-messages", type=int, default=1000, help="past messages for history-search")
    args = parser.parse_args()
    if not settings.IS_POSTGRES:
        raise SystemExit("bench/turn.py needs DATABASE_URL pointing at PostgreSQL")
    call_command("migrate", verbosity=0)
    run = uuid.uuid4().hex[:8]
    product, issued = product_create(name=f"bench-turn-{run}")
    filler, _ = product_create(name=f"bench-turn-filler-{run}")
    with connection.cursor() as cursor:
        cursor.execute(f"CREATE TABLE IF NOT EXISTS {PROBE_TABLE} (id bigserial PRIMARY KEY)")
    try:
        report(args, product, issued.plaintext, filler)
    finally:
        with connection.cursor() as cursor:
            cursor.execute(f"DROP TABLE IF EXISTS {PROBE_TABLE}")
        if not args.keep:
            MemoryDocument.objects.filter(product=filler).delete()
            HistoryEntry.objects.filter(product=product).delete()
            Product.objects.filter(pk__in=[product.pk, filler.pk]).delete()


def report(args, product: Product, key: str, filler: Product) -> None:
    client = client_for(key)
    if args.history_only:
        history_report(client, product, args.iterations)
        return
    if args.recall_only:
        recall_report(client, product, args.iterations, args.recall_messages, args.profile)
        return
    expect(client.post("/v1/scenarios", scenario_body(), format="json"), 201)
    seed(client, product)
    cache = settings.CACHES["default"]["BACKEND"].rsplit(".", 1)[-1]
    print(f"database: PostgreSQL {connection.pg_version}; cache: {cache}; iterations: {args.iterations}")
    print("producers registered: " + ", ".join(f"{v}={'yes' if registry.get_producer(v) else 'no'}" for v in VARIABLES))
    stored = MemoryDocument.objects.count()
    base = measure(client, args.iterations)
    print(f"sources of the measured prepare (variable, status): {base['sources']}")
    rows = [("bare store", stored, base)]
    print(_row(*rows[0], base))
    if args.profile:
        for name, sqls in queries_of(client).items():
            print(f"\n{name}: {len(sqls)} queries")
            print("\n".join(f"  {sql}" for sql in sqls))
        print(profile(client))
    if args.breakdown:
        breakdown(client, args.iterations // 2)
    history_report(client, product, args.iterations)
    recall_report(client, product, args.iterations, args.recall_messages)
    done = 0
    for size in [int(s) for s in args.sizes.split(",") if s]:
        seconds = fill(filler, done, size)
        done = size
        print(f"  (inserted up to {size:,} filler documents in {seconds:.1f}s)")
        rows.append((f"+{size:,} documents", MemoryDocument.objects.count(), measure(client, args.iterations)))
        print(_row(*rows[-1], base))
    if done:
        explain(filler)
        # The machine's load drifts over a run: measure the bare store again to bracket the large ones.
        MemoryDocument.objects.filter(product=filler).delete()
        with connection.cursor() as cursor:
            cursor.execute(f"VACUUM ANALYZE {MemoryDocument._meta.db_table}")
        again = measure(client, args.iterations)
        print(_row("bare store again", MemoryDocument.objects.count(), again, base))
        bare = (base["prepare_ms"] + again["prepare_ms"]) / 2
        bare_ratio = (base["prepare_ms"] / base["get_ms"] + again["prepare_ms"] / again["get_ms"]) / 2
        for label, _, figures in rows[1:]:
            print(
                f"{label:>22}: prepare / mean bare-store prepare = {figures['prepare_ms'] / bare:.2f};"
                f" load-normalized (prepare/GET ÷ bare-store prepare/GET) = "
                f"{figures['prepare_ms'] / figures['get_ms'] / bare_ratio:.2f}"
            )


def breakdown(client: APIClient, iterations: int) -> None:
    """What each source adds: a prepare with no source (the pipeline's floor), then one source at a time."""
    for label, variables in [("no source", []), *[(v, [v]) for v in VARIABLES]]:
        slug = f"bench-{label.replace(' ', '-')}"
        expect(client.post("/v1/scenarios", scenario_body(slug, variables), format="json"), 201)
        figures = measure(client, iterations, slug)
        print(
            f"  breakdown {label:>14}: prepare {figures['prepare_ms']:.2f} ms, GET memory {figures['get_ms']:.2f} ms,"
            f" prepare/GET {figures['prepare_ms'] / figures['get_ms']:.2f}"
        )


# --- compact history: the cost of a prepare must not grow with the length of the conversation --------------

HISTORY_LONG, HISTORY_SHORT = "bench-history-2000", "bench-history-20"
HISTORY_LINE = "The guard at the north gate keeps the brass key; the merchant pays one coin in ten. Round {n}."


def history_report(client: APIClient, product: Product, iterations: int) -> None:
    """A prepare whose only source is `history`: 2,000 stored messages (compacted) against 20 (raw)."""
    from memories.compact.policy import scenario_policy
    from memories.compact.selectors import history_scope
    from memories.compact.services import compaction_run
    from memoryhub.addresses import ConversationAddress

    expect(client.post("/v1/scenarios", history_scenario_body(), format="json"), 201)
    scenario = Scenario.objects.get(product=product, slug="bench-history")
    began = time.perf_counter()
    for conversation_id, rounds in ((HISTORY_LONG, 1000), (HISTORY_SHORT, 10)):
        seed_history(product, scenario, conversation_id, rounds)
    long_address = ConversationAddress(product, USER, HISTORY_LONG)
    outcome = compaction_run(address=long_address, policy=scenario_policy(scenario), trigger="threshold")
    if outcome.compaction is None:
        raise SystemExit(f"setup failed: the 2,000-message conversation was not compacted ({outcome})")
    print(
        f"history: 2,000 and 20 messages stored, compaction {outcome.compaction.pk} covers "
        f"{outcome.compaction.message_count} messages ({time.perf_counter() - began:.1f}s to set up)"
    )
    prepares = {
        conversation_id: lambda c=conversation_id: client.post(
            f"/v1/users/{USER}/conversations/{c}/turns",
            {"scenarioId": "bench-history", "userMessage": "谁拿着钥匙?"},
            format="json",
        )
        for conversation_id in (HISTORY_LONG, HISTORY_SHORT)
    }
    details = {c: prepare().json()["sources"][0]["details"] for c, prepare in prepares.items()}
    if details[HISTORY_LONG]["compaction"] is None or details[HISTORY_SHORT]["compaction"] is not None:
        raise SystemExit(f"setup failed: unexpected history sources {details}")
    for c, d in details.items():
        print(f"  {c}: rawMessages {d['rawMessages']}, historyChars {d['historyChars']}")
    time.sleep(working_set.TOMBSTONE_SECONDS + 0.5)  # outlast the setup's invalidation markers
    scopes = {c: history_scope(ConversationAddress(product, USER, c)) for c in prepares}
    for label, cold in (("warm working set", False), ("history rebuilt from the database", True)):
        for _ in range(20):
            for prepare in prepares.values():
                prepare()
        times: dict[str, list[float]] = {c: [] for c in prepares}
        for index in range(iterations):
            order = list(prepares) if index % 2 else list(reversed(prepares))
            for c in order:
                if cold:
                    working_set.invalidate(scopes[c])  # untimed: the next read misses and rebuilds
                times[c].append(timed(prepares[c])[0])
        long_ms, short_ms = (statistics.median(times[c]) * 1000 for c in (HISTORY_LONG, HISTORY_SHORT))
        print(
            f"  {label:>34}: prepare over 2,000 messages {long_ms:.2f} ms, over 20 messages {short_ms:.2f} ms,"
            f" ratio {long_ms / short_ms:.2f} (target ≤ 1.2)"
        )


def history_scenario_body() -> dict:
    return {
        "id": "bench-history",
        "name": "bench-history",
        "memorySources": [{"id": "h", "agentRef": "history", "variable": "history"}],
        "template": "<history>{{history}}</history>\nUser: {{userMessage}}",
        "compact": {"budgetChars": 12000, "keepRecentMessages": 8},
    }


def seed_history(product: Product, scenario: Scenario, conversation_id: str, rounds: int) -> None:
    """`rounds` committed rounds (two messages each), written in bulk: the bench measures reads, not writes."""
    conversation = Conversation.objects.create(
        product=product, user_id=USER, conversation_id=conversation_id, rounds=rounds
    )
    common = dict(product=product, user_id=USER, conversation_id=conversation_id)
    turns = Turn.objects.bulk_create(
        Turn(
            **common,
            conversation_row=conversation,
            scenario=scenario,
            scenario_slug=scenario.slug,
            scenario_version=scenario.version,
            runtime=scenario.memory_runtime,
            round=n,
            status="committed",
            user_message=HISTORY_LINE.format(n=n),
            assistant_message=HISTORY_LINE.format(n=n),
            prompt="",
        )
        for n in range(1, rounds + 1)
    )
    Message.objects.bulk_create(
        Message(**common, turn=turn, round=turn.round, role=role, content=HISTORY_LINE.format(n=turn.round))
        for turn in turns
        for role in ("user", "assistant")
    )


def explain(filler: Product) -> None:
    """The plan of the one query a prepare runs against the documents on a working-set miss."""
    from memories.selectors.documents import memory_document_get
    from memoryhub.addresses import ConversationAddress

    with CaptureQueriesContext(connection) as captured:
        memory_document_get(ConversationAddress(filler, "filler-1", "c1"))
    sql = captured.captured_queries[0]["sql"]
    with connection.cursor() as cursor:
        cursor.execute("EXPLAIN " + sql)
        plan = " / ".join(row[0].strip() for row in cursor.fetchall())
    print(f"plan of the jsonMemory rebuild query: {plan}")


# --- history-search: the user's past turns recalled into the prompt (issue 25) ---------------------------------


def recall_report(client: APIClient, product: Product, iterations: int, messages: int, profiled: bool = False) -> None:
    """A prepare whose only source is `history-search`, over `messages` past messages of the user."""
    from bench.history import seed as seed_past_messages
    from memories.history.services.vectors import prepare_hnsw
    from memories.longterm.services.embedding_index import index_in_use

    in_use = index_in_use()
    seed_past_messages(product, messages, in_use.index.dimension, in_use.index.pk, user=USER)
    prepare_hnsw(in_use.index)
    with connection.cursor() as cursor:
        cursor.execute("VACUUM ANALYZE history_entry")  # the steady state autovacuum keeps (visibility map set)
    body = {
        "id": "bench-recall",
        "name": "bench-recall",
        "memorySources": [{"id": "past", "agentRef": "history-search", "variable": "recalledHistory"}],
        "template": "<past>{{recalledHistory}}</past>\nUser: {{userMessage}}",
    }
    expect(client.post("/v1/scenarios", body, format="json"), 201)
    figures = measure(client, iterations, "bench-recall")
    recalled = figures["sources"]
    print(
        f"history-search over {messages:,} past messages (sources {recalled}): GET memory {figures['get_ms']:.2f} ms"
        f" | prepare {figures['prepare_ms']:.2f} ms"
    )
    print(f"TURN history-search prepare/GET p50 ratio={figures['prepare_ms'] / figures['get_ms']:.2f} (target ≤ 2)")
    if profiled:
        for name, sqls in queries_of(client, "bench-recall").items():
            print(f"\n{name}: {len(sqls)} queries")
            print("\n".join(f"  {sql}" for sql in sqls))
        print(profile(client, slug="bench-recall"))


def _row(label: str, stored: int, figures: dict, base: dict) -> str:
    return (
        f"{label:>22} | {stored:>9,} docs | GET memory {figures['get_ms']:.2f} ms"
        f" | prepare {figures['prepare_ms']:.2f} ms"
        f" | prepare/GET {figures['prepare_ms'] / figures['get_ms']:.2f} (target ≤ 1.5)"
        f" | prepare/bare prepare {figures['prepare_ms'] / base['prepare_ms']:.2f}"
        f" | prepares with a cache miss {figures['misses']}"
        f" | durable one-row commit {figures['commit_ms']:.2f} ms"
    )


if __name__ == "__main__":
    main()

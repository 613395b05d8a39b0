"""Semantic search, memoryhub's service vs mem0, on one PostgreSQL + pgvector: at equal recall, and across tenants.

    .venv/bin/python bench/search.py [--records 100000] [--queries 200]        # one user, equal-recall sweep
    .venv/bin/python bench/search.py --tenants [--records 200000]             # 100 preferences per user

Needs PostgreSQL with pgvector (BENCH_DATABASE_URL, default postgres://postgres@127.0.0.1:5432/memoryhub_bench_search;
the database — with the suffix `_tenants` for --tenants — is dropped and recreated unless --reuse) and mem0 in a
SEPARATE virtualenv (never memoryhub's .venv):

    python3 -m venv /tmp/mem0-venv && /tmp/mem0-venv/bin/pip install mem0ai "psycopg[binary]" psycopg-pool

BENCH_REDIS_URL (e.g. redis://127.0.0.1:6379/7; the bench product's entries are deleted there) puts memoryhub's
working set, and so its query-vector cache, in Redis; without it the local-memory cache holds it.

Both systems embed with memoryhub's default bundled model, e5-use-minilm (multilingual-e5-small, centred, with
USE multilingual v3 and, for English, all-MiniLM-L6-v2 beside it, 1281-d; --model e5-minilm for e5 with MiniLM,
769-d, --model e5 for e5 alone, 384-d, --model use for USE, 512-d):
memoryhub in process, as deployed by default (no EMBEDDING_BASE_URL); mem0 through an OpenAI-compatible server
on 127.0.0.1 (tests.support.embedding_server, started here, backed by the same embedder). e5 and the blend
encode a search text unlike a record ("query: …" / "passage: …"): the server serves the
query side under a second model name, which mem0's `embed` asks for when it embeds for a search. The records'
vectors (record side) and the queries' (search side) are computed once in process, exactly as memoryhub computes
them, cached in --workdir by chunks of 2,500 texts (`--embed-only K/N` fills the K-th of N shares, so N processes
can share the work; the tenants run's texts are a prefix of the one-user run's), and inserted directly into both
stores (memoryhub: COPY into its table, exactly the rows its writes produce;
mem0: its pgvector store's `insert`, with the payload `Memory.add` writes — the first --add-via-api records go
through `Memory.add(..., infer=False)` itself). --tenants spreads `records` rows over records / 100 users, each
holding 100 of records / 2 distinct texts, so the embedding work is that of the one-user run.

Printed: the embedder's own cost in process (load, one search text per call, records in batches); latency
(median/p95) of each system with the embedder call (memoryhub: a cold query-vector cache, then
the hit path) and without it (the same vectors from a table; in the tenants run twice, from each user's memories
held in the process and ranked in SQL, each pass alternating with mem0), recall@10 of each against an exact scan (numpy
over the same vectors; a result counts when it is no farther than the exact 10th), with the one-user run swept
over hnsw.ef_search (each system at its default and at the lowest setting that reaches recall 0.95), the
tenants run per user; memoryhub's hybrid search (keyword + semantic, fused) without the embedder call — each user's
memories held in the process, read whole, and ranked in SQL, the first and last alternating with mem0's search
(its ratio to mem0 is the tenants run's last line) — with the overlap of its top 10 with the exact semantic 10
(not a recall: fusion reorders by design); and the EXPLAIN ANALYZE of the plans.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import random
import re
import secrets
import statistics
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import httpx
import numpy as np

ROOT = Path(__file__).resolve().parent.parent
USER_ID = "bench-user"
PER_USER = 100
RECALL_TARGET = 0.95
TIE = 1e-5  # cosine distance within which a result counts as tied with the exact 10th

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


def tenant_query(text: str, rng: random.Random) -> str:
    """A query written like this preference: same language, topic and style, in the phrasing of make_queries."""
    if text.startswith("Prefers "):
        found = re.match(r"Prefers (.+?) (\S+(?: \S+)?) about (.+?) in (\w+), variant", text)
        if found:
            style, thing, topic, lang = found.groups()
            return f"Give me {style} {thing} on {topic}, in {lang} please"
        return f"Give me {rng.choice(_STYLES_EN)} answers, please: {text}"

    def longest(options: list[str]) -> str:
        return max((o for o in options if o in text), key=len, default=rng.choice(options))

    return f"请用{longest(_LANGS)}{longest(_STYLES)}地讲讲{longest(_TOPICS)}"


@dataclass
class Workload:
    """Who holds which text, and which user each query is asked for."""

    texts: list[str]  # distinct texts (their vectors are computed once)
    row_texts: list[int]  # for each stored row: the index of its text
    row_users: list[str]  # for each stored row: its user
    queries: list[str]  # timed queries, then warm-up queries, then recall-only queries
    query_users: list[str]
    timed: range
    warm: range
    recall: range
    users: dict[str, list[int]] = field(default_factory=dict)  # user -> row indexes


def one_user_workload(records: int, queries: int, warmup: int) -> Workload:
    texts, asked = make_texts(records), make_queries(queries + warmup)
    n = len(asked)
    return Workload(
        texts, list(range(records)), [USER_ID] * records, asked, [USER_ID] * n,
        range(queries), range(queries, n), range(queries), {USER_ID: list(range(records))},
    )  # fmt: skip


def tenants_workload(records: int, queries: int, warmup: int, recall_users: int) -> Workload:
    users_n = max(1, records // PER_USER)
    texts = make_texts(max(PER_USER, records // 2))
    rng = random.Random(18)
    row_texts, row_users, users = [], [], {}
    for u in range(users_n):
        user = f"user-{u:05d}"
        users[user] = list(range(len(row_texts), len(row_texts) + PER_USER))
        row_texts += rng.sample(range(len(texts)), PER_USER)  # distinct within a user, repeated across users
        row_users += [user] * PER_USER
    names = list(users)
    asked, asked_users = [], []
    for _ in range(queries + warmup):
        user = rng.choice(names)
        asked.append(tenant_query(texts[row_texts[rng.choice(users[user])]], rng))
        asked_users.append(user)
    recall_start = len(asked)
    for user in rng.sample(names, min(recall_users, len(names))):
        asked.append(tenant_query(texts[row_texts[rng.choice(users[user])]], rng))
        asked_users.append(user)
    return Workload(
        texts, row_texts, row_users, asked, asked_users,
        range(queries), range(queries, queries + warmup), range(recall_start, len(asked)), users,
    )  # fmt: skip


# --- the embedding server ---------------------------------------------------------------------------


@dataclass
class Names:
    """The bundled model both systems embed with (--model): memoryhub's setting, the server's model names."""

    local: str  # EMBEDDING_LOCAL_MODEL: "e5-use-minilm" (memoryhub's default), "e5-minilm", "e5-small" or "use"
    model: str  # the server's name for record-side vectors (what mem0's `add` asks for)
    query_model: str  # the server's name for search-text vectors (what mem0's `search` asks for)
    dimension: int


def names_for(model: str) -> Names:
    from memoryhub.clients import blend, e5
    from memoryhub.clients.embeddings import LOCAL_DIMENSION, LOCAL_E5, LOCAL_MODEL, LOCAL_USE

    if model == "use":
        return Names(LOCAL_USE, LOCAL_MODEL, LOCAL_MODEL, LOCAL_DIMENSION)  # symmetric: one name
    if model == "e5":
        return Names(LOCAL_E5, e5.MODEL, f"{e5.MODEL}-query", e5.DIMENSION)
    chosen = blend.BLENDS[model]
    return Names(chosen.name, chosen.model, f"{chosen.model}-query", chosen.dimension)


def start_embedding_server(port: int, names: Names) -> subprocess.Popen:
    command = [sys.executable, "-m", "tests.support.embedding_server", "--port", str(port)]
    command += ["--local", names.local, "--model", names.model, "--query-model", names.query_model]
    process = subprocess.Popen(command, cwd=ROOT, stdout=subprocess.DEVNULL)
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        if process.poll() is not None:  # e.g. the port is taken: never measure against another server
            raise SystemExit(f"the embedding server exited (code {process.returncode}); try another --port")
        try:
            if httpx.get(f"http://127.0.0.1:{port}/models", timeout=1).status_code == 200:
                return process
        except httpx.HTTPError:
            time.sleep(0.5)
    process.kill()
    raise SystemExit("the embedding server did not start")


CHUNK = 2500  # texts per cached file: a run over a prefix of another run's texts reuses its files


def embedder_for(model: str):
    """The bundled embedder whose identity the bench measures (--model: e5-use-minilm, memoryhub's default;
    e5-minilm; e5; use)."""
    from memoryhub.clients.embeddings import LOCAL_E5, local_embedder

    return local_embedder(LOCAL_E5 if model == "e5" else model)


def embed_cached(embedder, texts: list[str], work: Path, *, query: bool, part: tuple[int, int] = (0, 1)) -> np.ndarray:
    """The texts' vectors as memoryhub computes them (records: `embed`; search texts: `embed_queries`), in process.

    Cached in the work directory by chunks of CHUNK texts under the identity and a digest of the chunk; `part`
    (k, n) computes only every n-th chunk from the k-th, so n processes can fill the cache side by side.
    """
    from tqdm import tqdm

    from memoryhub.clients.embeddings import embed_queries

    side = "query" if query else "passage"
    out = []
    starts = range(0, len(texts), CHUNK)
    for number, start in enumerate(tqdm(starts, desc=f"embedding {len(texts):,} {side} texts", unit="chunk")):
        chunk = texts[start : start + CHUNK]
        digest = hashlib.sha1("\n".join(chunk).encode()).hexdigest()[:12]
        path = work / f"{embedder.identity.slug}-{side}-{len(chunk)}-{digest}.npy"
        if not path.exists():
            if number % part[1] != part[0]:
                continue
            vectors = []
            for i in range(0, len(chunk), 8):  # small batches: padding makes e5's large batches slower per text
                batch = chunk[i : i + 8]
                vectors += embed_queries(embedder, batch) if query else embedder.embed(batch)
            tmp = path.with_suffix(".tmp.npy")
            np.save(tmp, np.asarray(vectors, dtype=np.float32))
            tmp.rename(path)
        out.append(np.load(path))
    return np.concatenate(out) if out else np.zeros((0, embedder.identity.dimension), dtype=np.float32)


# --- exact reference --------------------------------------------------------------------------------


class Exact:
    """Cosine distances in numpy over the vectors both stores hold: the reference for recall@10."""

    def __init__(self, load: Workload, vectors: np.ndarray, query_vectors: np.ndarray):
        self.load, self.vectors, self.query_vectors = load, vectors, query_vectors
        self._tenth: dict[int, float] = {}

    def distances(self, q: int, text_indexes: list[int]) -> np.ndarray:
        return 1.0 - self.vectors[text_indexes] @ self.query_vectors[q]

    def tenth(self, q: int) -> float:
        if q not in self._tenth:
            rows = self.load.users[self.load.query_users[q]]
            mine = [self.load.row_texts[r] for r in rows]
            self._tenth[q] = float(np.sort(self.distances(q, mine))[min(9, len(mine) - 1)])
        return self._tenth[q]

    def recall(self, q: int, found_texts: list[int]) -> float:
        """Share of the 10 nearest found: results no farther than the exact 10th (ties allowed)."""
        if not found_texts:
            return 0.0
        near = self.distances(q, found_texts[:10]) <= self.tenth(q) + TIE
        return min(10, int(near.sum())) / 10


# --- memoryhub --------------------------------------------------------------------------------------


def setup_django(database_url: str, names: Names, redis_url: str | None) -> None:
    """memoryhub as deployed by default: the bundled model in process (no EMBEDDING_BASE_URL)."""
    os.environ.update(
        {
            "DATABASE_URL": database_url,
            "EMBEDDING_LOCAL_MODEL": names.local,
            "DJANGO_SETTINGS_MODULE": "memoryhub.settings",
        }
    )
    os.environ.setdefault("SECRET_KEY", secrets.token_urlsafe(50))  # settings refuse to start without one
    for name in ("QDRANT_URL", "EMBEDDING_BASE_URL", "EMBEDDING_MODEL", "EMBEDDING_DIMENSIONS"):
        os.environ.pop(name, None)
    if redis_url:
        os.environ["REDIS_URL"] = redis_url
    else:
        os.environ.pop("REDIS_URL", None)
    sys.path.insert(0, str(ROOT))
    import django

    django.setup()


def recreate_database(database_url: str) -> None:
    import psycopg

    base, name = database_url.rsplit("/", 1)
    with psycopg.connect(f"{base}/postgres", autocommit=True) as conn:
        conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
        conn.execute(f'CREATE DATABASE "{name}"')


class Memoryhub:
    def __init__(self, load: Workload, vectors: np.ndarray):
        from django.core.management import call_command
        from django.db import connection

        from memories.longterm.models import LongTermMemory
        from memories.longterm.services.embedding_index import index_in_use
        from memories.models import Product
        from memories.services.products import product_create

        call_command("migrate", verbosity=0)
        self.product = Product.objects.filter(name="bench").first() or product_create(name="bench")[0]
        self.in_use = index_in_use()  # bootstraps the index for the bundled embedder's identity
        self.load_seconds = None
        if LongTermMemory.objects.filter(product=self.product).count() != len(load.row_texts):
            self.in_use.backend.drop(self.in_use.index)  # built after the load: one bulk build, not row by row
            self.load_seconds = self._copy_rows(load, vectors)
        started = time.perf_counter()
        with connection.cursor() as cursor:
            cursor.execute("SET maintenance_work_mem = '1GB'")
            self.in_use.backend.prepare(self.in_use.index)
            cursor.execute(f"VACUUM ANALYZE {LongTermMemory._meta.db_table}")
        self.index_seconds = time.perf_counter() - started
        rows = LongTermMemory.objects.filter(product=self.product).values_list("memory_id", flat=True)
        self.text_of = {memory_id: load.row_texts[int(memory_id[4:], 16)] for memory_id in rows.iterator()}

    def _copy_rows(self, load: Workload, vectors: np.ndarray) -> float:
        from django.db import connection

        from memories.longterm import keyword
        from memories.longterm.models import LongTermMemory
        from memories.longterm.services.vectors import vector_literal

        LongTermMemory.objects.filter(product=self.product).delete()
        columns = (
            "product_id, user_id, memory_id, kind, content, evidence, source, version, search_text, embedding, "
            "embedding_index_id, superseded_by, created_at, updated_at"
        )
        literals = [vector_literal(v) for v in vectors]  # texts repeat across tenants: format each vector once
        search_texts = [keyword.index_text({"text": t}, t) for t in load.texts]
        started = time.perf_counter()
        with (
            connection.cursor() as cursor,
            cursor.cursor.copy(f"COPY {LongTermMemory._meta.db_table} ({columns}) FROM STDIN") as copy,
        ):
            now = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
            for i, (t, user) in enumerate(zip(load.row_texts, load.row_users)):
                text = load.texts[t]
                content = json.dumps({"detail": "brief", "text": text}, ensure_ascii=False)
                copy.write_row(
                    (
                        self.product.pk, user, f"mem_{i:016x}", "preference", content, text, text, 1,
                        search_texts[t], literals[t], self.in_use.index.pk, "", now, now,
                    )
                )  # fmt: skip
        return time.perf_counter() - started

    def scope(self, user: str):
        from memoryhub.addresses import UserAddress

        return UserAddress(self.product, user)

    def search(self, user: str, query: str, mode: str = "semantic") -> tuple[float, list[int]]:
        from memories.longterm.selectors import memory_search

        started = time.perf_counter()
        page = memory_search(self.scope(user), mode=mode, query=query, limit=10, cursor=None)
        elapsed = (time.perf_counter() - started) * 1000
        return elapsed, [self.text_of[row.memory_id] for row, _ in page.results]

    def set_ef_search(self, ef: int) -> None:
        """The `hnsw.ef_search` memoryhub's backend sets for each HNSW search (vectors._hnsw_settings), changed."""
        from memories.longterm.services import vectors

        vectors.EF_SEARCH = int(ef)

    def clear_query_cache(self) -> None:
        """Forget this product's working-set entries (the query vectors among them), nobody else's."""
        from django.core.cache import cache

        if hasattr(cache, "delete_pattern"):  # Redis
            cache.delete_pattern(f"ws:{self.product.pk}:*")
        else:
            cache.clear()

    def precomputed(self, load: Workload, query_vectors: np.ndarray, on: bool) -> None:
        """Without the embedder call and the cache: the same vectors the server returns, from a table."""
        from memories.longterm.services.embedding_index import IndexInUse

        if not hasattr(self, "_embed_query"):
            self._embed_query, self._embed_query_array = IndexInUse.embed_query, IndexInUse.embed_query_array
        table = {q: v.astype(np.float64) for q, v in zip(load.queries, query_vectors)}
        IndexInUse.embed_query = (lambda _self, product_id, text: table[text].tolist()) if on else self._embed_query
        IndexInUse.embed_query_array = (lambda _self, product_id, text: table[text]) if on else self._embed_query_array

    def explain(self, user: str, vector: np.ndarray) -> str:
        """The plan of every statement one search of this user ran (auto_explain: the function's inner ones too)."""
        from tests.support.pg_plans import plans_of

        asked = dict(product_id=self.product.pk, user_id=user, kinds=["preference"], vector=vector.tolist())
        found, plans = plans_of(lambda: self.in_use.backend.search_rows(self.in_use.index, **asked, limit=11, offset=0))
        return f"-- memoryhub ({found.branch} branch):\n" + "\n".join(plans)


# --- mem0 -------------------------------------------------------------------------------------------


class Mem0:
    """mem0 in its own virtualenv, answering one request per line (bench/search_mem0.py)."""

    def __init__(
        self, args, database_url: str, embedding_url: str, names: Names, work: Path, files: dict, collection: str
    ):
        config = {
            "dsn": database_url.replace("postgres://", "postgresql://"),
            "collection": collection,
            "model": names.model,
            "query_model": names.query_model,
            "dimension": names.dimension,
            "embedding_url": embedding_url,
            "add_via_api": args.add_via_api,
            "history_db": str(work / f"{collection}-history.db"),
            **files,
        }
        (work / f"{collection}.json").write_text(json.dumps(config))
        self.process = subprocess.Popen(
            [args.mem0_python, str(ROOT / "bench" / "search_mem0.py"), str(work / f"{collection}.json")],
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
                return message if key in ("found", "ms") else message[key]
        raise SystemExit(f"mem0 exited (code {self.process.wait()}) before answering {key!r}")

    def ask(self, key: str, **request):
        self.process.stdin.write(json.dumps(request) + "\n")
        self.process.stdin.flush()
        return self._read(key)

    def search(self, q: int, precomputed: bool) -> tuple[float, list[str]]:
        answer = self.ask("ms", op="search", i=q, pre=precomputed)
        return answer["ms"], answer["found"]

    def close(self) -> None:
        self.process.stdin.close()
        self.process.wait(timeout=30)


# --- measuring --------------------------------------------------------------------------------------


@dataclass
class Pass:
    ours: list[float] = field(default_factory=list)
    theirs: list[float] = field(default_factory=list)


def interleaved(
    hub: Memoryhub, mem0: Mem0 | None, load: Workload, indexes, precomputed: bool, mode: str = "semantic"
) -> Pass:
    """Alternate the two systems query by query (and who goes first), so both see the same machine load."""
    who = "memoryhub and mem0" if mem0 else "memoryhub"
    embedder = "query vectors precomputed" if precomputed else "with the embedder call (or cache)"
    print(f"  {time.strftime('%H:%M:%S', time.gmtime())} UTC: {len(indexes)} {mode} searches, {who}, {embedder}; "
          f"load average {loadavg()}", flush=True)  # fmt: skip
    out = Pass()
    for q in indexes:
        first_ours = q % 2 == 0
        if first_ours:
            out.ours.append(hub.search(load.query_users[q], load.queries[q], mode)[0])
        if mem0:
            out.theirs.append(mem0.search(q, precomputed)[0])
        if not first_ours:
            out.ours.append(hub.search(load.query_users[q], load.queries[q], mode)[0])
    return out


def hub_recall(hub: Memoryhub, exact: Exact, load: Workload, indexes, mode: str = "semantic") -> dict[int, float]:
    return {q: exact.recall(q, hub.search(load.query_users[q], load.queries[q], mode)[1]) for q in indexes}


def in_sql(timed: Callable[[], Pass]) -> Pass:
    """A pass with nothing held (memories/longterm/resident.py): every search ranked in SQL, as a first one is."""
    from memories.longterm import resident

    bound, resident.MAX_ROWS = resident.MAX_ROWS, 0
    try:
        return timed()
    finally:
        resident.MAX_ROWS = bound


def hybrid(
    hub: Memoryhub, mem0: Mem0 | None, exact: Exact, load: Workload, count: int | None
) -> tuple[list[str], list[str], list[str]]:
    """memoryhub's hybrid search (keyword + semantic, fused), query vector precomputed, against mem0's search.

    Three passes over the same queries: each user's rows read whole (what a user's second search costs when the
    process holds nothing of them: their first is ranked in SQL), the rows held (memories/longterm/resident.py:
    the warm path), and the SQL ranking (nothing ever held: a user's first search), the last two alternating
    with mem0. Its "recall" against the exact semantic scan is only an overlap: fusing in the
    keyword ranking moves results by design. Returns the timing rows, the overlap row and the ratio lines.
    """
    from memories.longterm import resident

    for q in load.warm[:3]:  # the keyword half's first use loads the tokenizer's dictionary (~1 s)
        hub.search(load.query_users[q], load.queries[q], "hybrid")
    indexes = load.timed[:count]
    whole = Pass()
    admit, resident.ADMIT_AT_SEARCH = resident.ADMIT_AT_SEARCH, 1  # held from a user's first search
    try:
        for q in indexes:
            resident.clear()
            whole.ours.append(hub.search(load.query_users[q], load.queries[q], "hybrid")[0])
        for q in indexes:  # every user of the timed queries held
            hub.search(load.query_users[q], load.queries[q], "hybrid")
    finally:
        resident.ADMIT_AT_SEARCH = admit
    held = interleaved(hub, mem0, load, indexes, precomputed=True, mode="hybrid")
    sql = in_sql(lambda: interleaved(hub, mem0, load, indexes, precomputed=True, mode="hybrid"))
    overlap = hub_recall(hub, exact, load, load.recall[:count], mode="hybrid")
    rows = [
        _row("memoryhub `memory_search(mode=hybrid)`, the user's memories held (warm), query vector precomputed",
             held.ours),
        _row("memoryhub hybrid, the user's memories read whole (their second search, nothing held before)",
             whole.ours),
        _row("memoryhub hybrid, ranked in SQL (a user's first search; nothing held)", sql.ours),
    ]  # fmt: skip
    ratios = []
    if mem0:
        rows.append(_row("mem0, query vector precomputed, alternating with the held hybrid pass", held.theirs))
        ratios = [
            f"memoryhub hybrid (held)/mem0 without the embedder call (target median ≤ 0.5×): "
            f"{_ratio(held.ours, held.theirs)}; ranked in SQL: {_ratio(sql.ours, sql.theirs)}; "
            f"read whole: {_ratio(whole.ours, held.theirs)}"
        ]
    return rows, [_recall_row("memoryhub hybrid (overlap, not a target)", overlap)], ratios


def embedder_cost(embedder, queries: int = 60, batch_texts: int = 256) -> list[str]:
    """The bundled embedder's own cost in this process: loading, one search text per call, records in batches."""
    from memoryhub.clients import blend, e5, minilm, use
    from memoryhub.clients.embeddings import embed_queries

    lines = [f"embedder `{embedder.identity.model}` ({embedder.identity.dimension}-d), in process; load average "]
    if embedder.identity.model == e5.MODEL:
        e5.load_raw_model()
        lines.append(f"- model load (once per process, with one warm-up text): {e5.loaded.seconds * 1000:.0f} ms")
    elif chosen := next((b for b in blend.BLENDS.values() if b.model == embedder.identity.model), None):
        chosen.load()
        parts = (e5, minilm, use) if chosen.use_weights else (e5, minilm)
        seconds = sum(part.loaded.seconds or 0 for part in parts)
        lines.append(f"- models' load (once per process, {chosen.name}, a warm-up text each): {seconds * 1000:.0f} ms")
    asked = list(dict.fromkeys(make_queries(queries * 2, seed=99)))[:queries]  # texts this run never searches
    singles = []
    for text in asked:
        started = time.perf_counter()
        embed_queries(embedder, [text])
        singles.append((time.perf_counter() - started) * 1000)
    lines.append(
        f"- one search text per call ({len(singles)} distinct texts, none embedded before): median "
        f"{med(singles):.1f} ms, p95 {p95(singles):.1f} ms"
    )
    texts = make_texts(batch_texts, seed=99)
    for size in (8, 32):
        started = time.perf_counter()
        for i in range(0, len(texts), size):
            embedder.embed(texts[i : i + size])
        per_text = (time.perf_counter() - started) * 1000 / len(texts)
        lines.append(f"- records in batches of {size} ({len(texts)} texts): {per_text:.1f} ms per text")
    lines[0] += loadavg()
    return lines


def mem0_recall(mem0: Mem0, exact: Exact, load: Workload, indexes, index_of: dict[str, int]) -> dict:
    """Recall of mem0's own vector search (its top 10 of 60 candidates) and of what `Memory.search` returns."""
    vector, final = {}, {}
    for q in indexes:
        vector[q] = exact.recall(q, [index_of[t] for t in mem0.ask("found", op="vector", i=q)["found"]])
        final[q] = exact.recall(q, [index_of[t] for t in mem0.search(q, precomputed=True)[1]])
    return {"vector": vector, "final": final}


def mean(values) -> float:
    values = list(values)
    return sum(values) / len(values) if values else float("nan")


def p95(values: list[float]) -> float:
    return float(np.percentile(values, 95))


def med(values: list[float]) -> float:
    return statistics.median(values)


def cold_label(load: Workload) -> str:
    """The pass after the query-vector cache was emptied: a text asked again within it is a hit already."""
    distinct = len({load.queries[q] for q in load.timed})
    return (
        "memoryhub `memory_search(mode=semantic)`, query-vector cache emptied first (embedder call for each of "
        f"the {distinct} distinct texts among {len(load.timed)} queries; a repeated text hits)"
    )


def _row(name: str, values: list[float]) -> str:
    return f"| {name} | {med(values):.2f} | {p95(values):.2f} |"


def _ratio(ours: list[float], theirs: list[float]) -> str:
    return f"median {med(ours) / med(theirs):.2f}×, p95 {p95(ours) / p95(theirs):.2f}×"


def shorten(plan: str) -> str:
    """A plan without the 512 numbers of its query vector."""
    return re.sub(r"'\[[-0-9.e,]+\]'", "'[…]'", plan)


def _recall_row(name: str, recall: dict[int, float]) -> str:
    values = list(recall.values())
    below = sum(r < 0.99 for r in values)
    return f"| {name} | {len(values):,} | {mean(values):.3f} | {min(values):.3f} | {below} |"


def loadavg() -> str:
    return " ".join(Path("/proc/loadavg").read_text().split()[:3])


# --- the one-user run: latency at each system's default and at equal recall -------------------------


def one_user(args, hub: Memoryhub, mem0: Mem0 | None, load: Workload, exact: Exact, qv: np.ndarray, index_of) -> list:
    from memories.longterm.services.vectors import EF_SEARCH

    lines = []
    interleaved(hub, mem0, load, load.warm, precomputed=False)
    hub.clear_query_cache()
    cold = interleaved(hub, mem0, load, load.timed, precomputed=False)
    hits = interleaved(hub, None, load, load.timed, precomputed=False)  # the same queries: cache hits
    hub.precomputed(load, qv, on=True)
    pre = interleaved(hub, mem0, load, load.timed, precomputed=True)
    hybrid_row, hybrid_recall, _ = hybrid(hub, None, exact, load, args.hybrid_queries)  # over the held bound
    lines += [
        f"one user, {len(load.row_texts):,} preferences; {len(load.timed)} queries per pass, the systems alternating "
        f"(after {len(load.warm)} warm-up queries); load average {loadavg()}",
        "",
        "| search (each at its default: memoryhub ef_search 300, mem0 pgvector's 40) | median ms | p95 ms |",
        "| --- | --- | --- |",
        _row(cold_label(load), cold.ours),
        _row("memoryhub, query vector cached in the working set (hit path)", hits.ours),
    ]
    if mem0:
        lines.append(_row("mem0 `Memory.search` (embedder call)", cold.theirs))
    lines.append(_row("memoryhub, query vector precomputed (no embedder call, no cache)", pre.ours))
    if mem0:
        lines.append(_row("mem0, query vector precomputed (no embedder call)", pre.theirs))
    lines += hybrid_row
    lines += [
        "",
        "hybrid's top 10 against the exact semantic scan (ef_search default):",
        "",
        "| system | queries | mean | minimum | queries below 0.99 |",
        "| --- | --- | --- | --- | --- |",
        *hybrid_recall,
    ]
    if mem0:
        lines += [
            "",
            f"memoryhub/mem0 with the embedder call: {_ratio(cold.ours, cold.theirs)}; memoryhub's hit path/mem0: "
            f"{_ratio(hits.ours, cold.theirs)}; without the embedder call: {_ratio(pre.ours, pre.theirs)}",
        ]
    # Sweep hnsw.ef_search: recall and latency (no embedder call) of each system at each setting.
    sweep = {}
    for ef in args.ef_sweep:
        hub.set_ef_search(ef)
        if mem0:
            mem0.ask("ok", op="ef", ef=ef)
        # Recall first, then the timing, as at mem0's default below: on a new pool's connections mem0's query is
        # planned for its user (one user holding every row: an exact scan) until it has run about ten times there
        # (psycopg prepares it after 5 executions, PostgreSQL may then switch to its generic plan, the HNSW
        # index); timed first, the two plans mix.
        ours = mean(hub_recall(hub, exact, load, load.recall).values())
        theirs = mem0_recall(mem0, exact, load, load.recall, index_of) if mem0 else None
        timed = interleaved(hub, mem0, load, load.timed[: args.sweep_queries], precomputed=True)
        sweep[ef] = (ours, timed.ours, theirs, timed.theirs)
        print(
            f"  ef_search {ef}: memoryhub recall {ours:.3f}"
            + (f", mem0 {mean(theirs['vector'].values()):.3f}" if theirs else ""),
            flush=True,
        )
    hub.set_ef_search(EF_SEARCH)
    if mem0:
        mem0.ask("ok", op="ef", ef=None)
        default = mem0_recall(mem0, exact, load, load.recall, index_of)
        default_timed = interleaved(hub, mem0, load, load.timed[: args.sweep_queries], precomputed=True)
    lines += [
        "",
        f"recall@10 against the exact scan ({len(load.recall)} queries) and latency without the embedder call "
        f"({args.sweep_queries} queries per setting, systems alternating), by hnsw.ef_search:",
        "",
        "| hnsw.ef_search | memoryhub recall@10 | memoryhub median / p95 ms "
        "| mem0 recall@10 (vector search; `Memory.search`) | mem0 median / p95 ms |",
        "| --- | --- | --- | --- | --- |",
    ]
    for ef, (ours, ours_ms, theirs, theirs_ms) in sweep.items():
        mark = " (default)" if ef == EF_SEARCH else ""
        row = f"| {ef}{mark} | {ours:.3f} | {med(ours_ms):.2f} / {p95(ours_ms):.2f} |"
        if theirs:
            row += f" {mean(theirs['vector'].values()):.3f}; {mean(theirs['final'].values()):.3f} |"
            row += f" {med(theirs_ms):.2f} / {p95(theirs_ms):.2f} |"
        lines.append(row)
    if mem0:
        at_default = f"{med(default_timed.theirs):.2f} / {p95(default_timed.theirs):.2f}"
        lines.append(
            f"| mem0's default (pgvector's 40, nothing set) | | | {mean(default['vector'].values()):.3f}; "
            f"{mean(default['final'].values()):.3f} | {at_default} |"
        )
    lines += ["", *equal_recall(sweep, EF_SEARCH, mem0 is not None)]
    return lines


def _at(name: str, found: tuple[int, float, list[float]]) -> str:
    ef, recall, ms = found
    latency = f"{med(ms):.2f} ms median, {p95(ms):.2f} p95"
    return f"{name} reaches recall {recall:.3f} ≥ {RECALL_TARGET} at ef_search {ef}: {latency}"


def equal_recall(sweep: dict, default_ef: int, with_mem0: bool) -> list[str]:
    def lowest(pick) -> tuple[int, float, list[float]] | None:
        for ef, entry in sorted(sweep.items()):
            recall, ms = pick(entry)
            if recall >= RECALL_TARGET:
                return ef, recall, ms
        return None

    ours = lowest(lambda e: (e[0], e[1]))
    theirs = lowest(lambda e: (mean(e[2]["vector"].values()), e[3])) if with_mem0 else None
    lines = [
        _at("memoryhub", ours) if ours else f"memoryhub does not reach recall {RECALL_TARGET} at any swept setting"
    ]
    if not with_mem0:
        return lines
    if theirs:
        lines.append(_at("mem0", theirs))
        if ours:
            lines.append(f"at equal recall (≥ {RECALL_TARGET}) memoryhub/mem0: {_ratio(ours[2], theirs[2])}")
        return lines
    best_ef, best = max(((ef, mean(e[2]["vector"].values())) for ef, e in sweep.items()), key=lambda x: x[1])
    lines.append(
        f"mem0 does not reach recall {RECALL_TARGET} at any swept ef_search (best {best:.3f} at {best_ef}; "
        "its index is pgvector's default m=16, ef_construction=64)"
    )
    matched = [(ef, e) for ef, e in sorted(sweep.items()) if e[0] >= best]
    if matched:
        ef, e = matched[0]
        lines.append(
            f"at mem0's best recall ({best:.3f}, ef_search {best_ef}): memoryhub needs ef_search {ef} "
            f"(recall {e[0]:.3f}); memoryhub/mem0: {_ratio(e[1], sweep[best_ef][3])}"
        )
    return lines


# --- the tenants run --------------------------------------------------------------------------------


def tenants(args, hub: Memoryhub, mem0: Mem0 | None, load: Workload, exact: Exact, qv: np.ndarray, index_of) -> list:
    interleaved(hub, mem0, load, load.warm, precomputed=False)
    hub.clear_query_cache()
    cold = interleaved(hub, mem0, load, load.timed, precomputed=False)
    hits = interleaved(hub, None, load, load.timed, precomputed=False)
    hub.precomputed(load, qv, on=True)
    pre = interleaved(hub, mem0, load, load.timed, precomputed=True)  # every timed user held by now
    pre_sql = in_sql(lambda: interleaved(hub, mem0, load, load.timed, precomputed=True))
    hybrid_row, hybrid_recall, hybrid_ratios = hybrid(hub, mem0, exact, load, args.hybrid_queries)
    ours = hub_recall(hub, exact, load, load.recall)
    sample = load.recall[: args.mem0_recall_users]  # mem0's searches cost more: a sample of the same users
    theirs = mem0_recall(mem0, exact, load, sample, index_of) if mem0 else None
    users = len(load.users)
    lines = [
        f"tenants: {len(load.row_texts):,} preferences over {users:,} users ({PER_USER} each, {len(load.texts):,} "
        f"distinct texts); {len(load.timed)} timed queries, each for a random user and written like one of its "
        f"preferences, the systems alternating (after {len(load.warm)} warm-up queries); load average {loadavg()}",
        "",
        "| search | median ms | p95 ms |",
        "| --- | --- | --- |",
        _row("memoryhub, query vector precomputed (no embedder call, no cache), the user's memories held", pre.ours),
        _row("memoryhub, the same, ranked in SQL (`memoryhub_search_exact`; nothing held)", pre_sql.ours),
    ]
    if mem0:
        lines.append(_row("mem0, query vector precomputed (no embedder call)", pre.theirs))
    lines += hybrid_row
    lines.append(_row(cold_label(load), cold.ours))
    lines.append(_row("memoryhub, query vector cached in the working set (hit path)", hits.ours))
    if mem0:
        lines.append(_row("mem0 `Memory.search` (embedder call)", cold.theirs))
    lines += [
        "",
        "recall@10 per user against an exact scan of that user's rows (one query per user):",
        "",
        "| system | users | mean | minimum | users below 0.99 |",
        "| --- | --- | --- | --- | --- |",
        _recall_row("memoryhub", ours),
        *hybrid_recall,
    ]
    if theirs:
        lines.append(_recall_row("mem0, its vector search (top 10 of 60)", theirs["vector"]))
        lines.append(_recall_row("mem0, `Memory.search`", theirs["final"]))
        lines += [
            "",
            f"memoryhub/mem0 without the embedder call (target median ≤ 0.5×): {_ratio(pre.ours, pre.theirs)}; "
            f"ranked in SQL: {_ratio(pre_sql.ours, pre_sql.theirs)}; "
            f"with it: {_ratio(cold.ours, cold.theirs)}; "
            f"memoryhub's hit path/mem0 with it: {_ratio(hits.ours, cold.theirs)}",
            *hybrid_ratios,
        ]
    return lines


# --- main -------------------------------------------------------------------------------------------


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--tenants", action="store_true", help="many users with 100 preferences each")
    parser.add_argument("--records", type=int, help="rows stored (default 100,000; --tenants: 200,000)")
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument("--warmup", type=int, default=20)
    parser.add_argument("--recall-users", type=int, default=2000, help="--tenants: users whose recall is measured")
    parser.add_argument("--mem0-recall-users", type=int, default=300, help="--tenants: of those, for mem0")
    parser.add_argument("--ef-sweep", default="40,100,200,300,400,600,1000", help="hnsw.ef_search settings")
    parser.add_argument("--sweep-queries", type=int, default=100, help="timed queries per ef_search setting")
    parser.add_argument("--hybrid-queries", type=int, help="hybrid searches timed and compared (default: all)")
    parser.add_argument("--add-via-api", type=int, default=200, help="records mem0 gets through Memory.add")
    parser.add_argument("--mem0-python", default="/tmp/mem0-venv/bin/python")
    parser.add_argument("--skip-mem0", action="store_true")
    parser.add_argument("--reuse", action="store_true", help="keep the database and its rows from a previous run")
    parser.add_argument("--port", type=int, default=18777)
    parser.add_argument("--workdir", default="/tmp/memoryhub-bench")
    parser.add_argument(
        "--model",
        choices=["e5-use-minilm", "e5-minilm", "e5", "use"],
        default="e5-use-minilm",
        help="bundled embedder of both systems (e5-use-minilm: the default)",
    )
    parser.add_argument("--embed-only", metavar="K/N", help="compute the K-th of N shares of the records' vectors")
    args = parser.parse_args()
    args.ef_sweep = [int(v) for v in args.ef_sweep.split(",")]
    sys.path.insert(0, str(ROOT))
    names = names_for(args.model)
    embedder = embedder_for(args.model)
    records = args.records or (200_000 if args.tenants else 100_000)
    database_url = os.environ.get("BENCH_DATABASE_URL", "postgres://postgres@127.0.0.1:5432/memoryhub_bench_search")
    if args.tenants:
        database_url += "_tenants"
    work = Path(args.workdir)
    work.mkdir(parents=True, exist_ok=True)
    if args.embed_only:
        k, n = (int(v) for v in args.embed_only.split("/"))
        texts = make_texts(max(PER_USER, records // 2) if args.tenants else records)
        embed_cached(embedder, texts, work, query=False, part=(k - 1, n))  # K counts from 1
        return
    if args.tenants:
        load = tenants_workload(records, args.queries, args.warmup, args.recall_users)
    else:
        load = one_user_workload(records, args.queries, args.warmup)
    mode = "tenants" if args.tenants else "one-user"
    files = {
        "texts": work / f"{mode}-texts.json",
        "rows": work / f"{mode}-rows.json",
        "queries": work / f"{mode}-queries.json",
    }
    files["texts"].write_text(json.dumps(load.texts, ensure_ascii=False))
    files["rows"].write_text(json.dumps([[t, u] for t, u in zip(load.row_texts, load.row_users)]))
    files["queries"].write_text(json.dumps(load.queries, ensure_ascii=False))
    # Both systems' vectors, computed as memoryhub computes them (records: record side; queries: search side).
    vectors = embed_cached(embedder, load.texts, work, query=False)
    qv = embed_cached(embedder, load.queries, work, query=True)
    files["vectors"], files["query_vectors"] = work / f"{mode}-vectors.npy", work / f"{mode}-query-vectors.npy"
    np.save(files["vectors"], vectors)
    np.save(files["query_vectors"], qv)
    server = start_embedding_server(args.port, names)
    embedding_url = f"http://127.0.0.1:{args.port}"
    mem0 = None
    try:
        if not args.reuse:
            recreate_database(database_url)
        setup_django(database_url, names, os.environ.get("BENCH_REDIS_URL"))
        hub = Memoryhub(load, vectors)
        print(
            f"memoryhub load (COPY): {hub.load_seconds and round(hub.load_seconds, 1)} s; "
            f"HNSW build (m=32, ef_construction=128) + VACUUM ANALYZE: {hub.index_seconds:.1f} s",
            flush=True,
        )
        exact = Exact(load, vectors, qv)
        index_of = {text: i for i, text in enumerate(load.texts)}
        if not args.skip_mem0:
            mem0 = Mem0(
                args,
                database_url,
                embedding_url,
                names,
                work,
                {**{k: str(v) for k, v in files.items()}, "query_users": load.query_users},
                "mem0_tenants" if args.tenants else "mem0_bench",
            )
            print(f"mem0 load: {json.dumps(mem0.loaded)}", flush=True)
        cost = embedder_cost(hub.in_use.embedder)
        print("\n".join(cost), flush=True)
        run = tenants if args.tenants else one_user
        lines = run(args, hub, mem0, load, exact, qv, index_of)
        q = load.timed[0]
        plans = [hub.explain(load.query_users[q], qv[q])]
        if mem0:
            plans.append("-- mem0 (its default ef_search):\n" + mem0.ask("plan", op="explain", i=q))
        print(shorten("\n".join(plans)))
        print()
        print("\n".join(lines))
        print()
        print("\n".join(cost))
    finally:
        if mem0:
            mem0.close()
        server.terminate()
        server.wait(timeout=10)


if __name__ == "__main__":
    main()

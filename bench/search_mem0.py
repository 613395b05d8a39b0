"""The mem0 half of bench/search.py; runs inside mem0's own virtualenv (never memoryhub's .venv).

    /tmp/mem0-venv/bin/python bench/search_mem0.py CONFIG.json

Loads the benchmark's rows into mem0's pgvector store (a few through `Memory.add(..., infer=False)`, the rest
as precomputed vectors by COPY of the rows its store's `insert` writes, with the payload `add` writes; mem0's
HNSW and keyword indexes are dropped for the bulk load and created again afterwards with mem0's own statements;
skipped when the collection already holds the rows), then answers one request per stdin line, so the parent
can interleave mem0's searches with memoryhub's under the same machine load:

- {"op": "search", "i": q, "pre": bool}: time `Memory.search` of query q for its user (pre: the precomputed
  vector instead of the embedder call); answers {"ms", "found": the texts of its top 10}.
- {"op": "vector", "i": q}: the 10 nearest of mem0's own vector search (`vector_store.search`, the 60
  candidates `Memory.search` asks for), with the precomputed vector; answers {"found"}.
- {"op": "ef", "ef": N | null}: search with `hnsw.ef_search = N` from now on (null: pgvector's default, what
  mem0 runs with). Set the way memoryhub sets its own: a session setting of every pooled connection, here
  through the connection string (`options=-c hnsw.ef_search=N`), since mem0 builds its pool from it.
- {"op": "explain", "i": q}: EXPLAIN ANALYZE of mem0's vector query (its SQL) for query q's user.
"""

from __future__ import annotations

import hashlib
import json
import logging
import sys
import time
import uuid
from datetime import UTC, datetime
from pathlib import Path
from urllib.parse import quote

import numpy as np

logging.basicConfig(level=logging.ERROR)


def memory_from(cfg: dict, ef_search: int | None = None):
    from mem0 import Memory

    dsn = cfg["dsn"]
    if ef_search is not None:
        dsn += ("&" if "?" in dsn else "?") + "options=" + quote(f"-c hnsw.ef_search={int(ef_search)}")
    memory = Memory.from_config(
        {
            "vector_store": {
                "provider": "pgvector",
                "config": {
                    "connection_string": dsn,
                    "collection_name": cfg["collection"],
                    "embedding_model_dims": cfg["dimension"],
                    "hnsw": True,
                },
            },
            # The OpenAI-compatible server of bench/search.py, backed by the bundled model memoryhub embeds with.
            "embedder": {
                "provider": "openai",
                "config": {
                    "model": cfg["model"],
                    "openai_base_url": cfg["embedding_url"],
                    "api_key": "bench",
                    "embedding_dims": cfg["dimension"],
                },
            },
            # Never called: records are added with infer=False and search does not use the LLM.
            "llm": {
                "provider": "openai",
                "config": {"model": "unused", "api_key": "unused", "openai_base_url": cfg["embedding_url"]},
            },
            "history_db_path": cfg["history_db"],
        }
    )
    search_side(memory.embedding_model, cfg)
    return memory


def search_side(model, cfg: dict) -> None:
    """e5 encodes a search text unlike a record; OpenAI's API cannot say which, so mem0's own `embed` asks the
    server for the query-side model name when mem0 embeds for a search (its `memory_action` "search").

    `embed_batch` is left alone: at search time mem0 calls it only for entity boosts, which need spaCy (not
    installed by the bench's command, so off)."""
    if cfg["query_model"] == cfg["model"]:
        return
    records_embed = model.embed

    def embed(text, memory_action=None):
        if memory_action != "search":
            return records_embed(text, memory_action)
        model.config.model = cfg["query_model"]
        try:
            return records_embed(text, memory_action)
        finally:
            model.config.model = cfg["model"]

    model.embed = embed


def payload(text: str, user_id: str) -> dict:
    now = datetime.now(UTC).isoformat()
    return {
        "user_id": user_id,
        "role": "user",
        "data": text,
        "hash": hashlib.md5(text.encode()).hexdigest(),
        "created_at": now,
        "updated_at": now,
        "text_lemmatized": text,
    }


def _sql(cfg: dict, *statements: str) -> None:
    import psycopg

    with psycopg.connect(cfg["dsn"], autocommit=True) as conn:
        for statement in statements:
            conn.execute(statement)


def load(memory, cfg: dict, texts: list[str], rows: list[list], vectors: np.ndarray) -> dict:
    started = time.perf_counter()
    via_add = min(cfg["add_via_api"], len(rows))
    for t, user in rows[:via_add]:
        memory.add([{"role": "user", "content": texts[t]}], user_id=user, infer=False)
    add_seconds = time.perf_counter() - started
    collection = cfg["collection"]
    # mem0 keeps its HNSW and keyword (GIN) indexes from the table's creation; at 10^5 rows a bulk build after
    # the load is many minutes faster than maintaining them row by row, and the rows go in by COPY: exactly
    # the (id, vector, payload) rows its `insert` writes.
    _sql(
        cfg, f'DROP INDEX IF EXISTS "{collection}_hnsw_idx"', f'DROP INDEX IF EXISTS "{collection}_text_lemmatized_idx"'
    )
    import psycopg

    literals: dict[int, str] = {}
    with (
        psycopg.connect(cfg["dsn"]) as conn,
        conn.cursor() as cursor,
        cursor.copy(f'COPY "{collection}" (id, vector, payload) FROM STDIN') as copy,
    ):
        for t, user in rows[via_add:]:
            if t not in literals:
                literals[t] = "[" + ",".join(f"{float(x):.8g}" for x in vectors[t]) + "]"
            copy.write_row((str(uuid.uuid4()), literals[t], json.dumps(payload(texts[t], user))))
    insert_seconds = time.perf_counter() - started
    _sql(
        cfg,
        "SET maintenance_work_mem = '1GB'",
        # mem0's own statements (vector_stores/pgvector.py create_col): pgvector's defaults m=16, ef_construction=64.
        f'CREATE INDEX IF NOT EXISTS "{collection}_hnsw_idx" ON "{collection}" USING hnsw (vector vector_cosine_ops)',
        f'CREATE INDEX IF NOT EXISTS "{collection}_text_lemmatized_idx" ON "{collection}" '
        "USING gin(to_tsvector('simple', payload->>'text_lemmatized'))",
    )
    index_seconds = time.perf_counter() - started - insert_seconds
    _sql(cfg, f'VACUUM ANALYZE "{collection}"')
    return {
        "added_via_api": via_add,
        "add_seconds": round(add_seconds, 1),
        "insert_seconds": round(insert_seconds, 1),
        "hnsw_build_seconds": round(index_seconds, 1),
    }


def serve(memory, cfg: dict, queries: list[str], query_users: list[str], query_vectors: np.ndarray) -> None:
    real_embed = memory.embedding_model.embed
    table = {q: v.tolist() for q, v in zip(queries, query_vectors)}
    print(json.dumps({"ready": True}), flush=True)
    for line in sys.stdin:
        request = json.loads(line)
        op = request["op"]
        if op == "ef":
            memory.vector_store.connection_pool.close()
            memory = memory_from(cfg, request["ef"])
            real_embed = memory.embedding_model.embed
            answer: dict = {"ok": True}
        elif op == "search":
            q = request["i"]
            # "pre": the same vector the server would return, without the HTTP call (what mem0 itself costs).
            memory.embedding_model.embed = (lambda text, *a, **k: table[text]) if request["pre"] else real_embed
            started = time.perf_counter()
            found = memory.search(queries[q], top_k=10, filters={"user_id": query_users[q]})
            elapsed = (time.perf_counter() - started) * 1000
            answer = {"ms": elapsed, "found": [r["memory"] for r in found["results"]]}
        elif op == "vector":
            q = request["i"]
            hits = memory.vector_store.search(
                query=queries[q], vectors=table[queries[q]], top_k=60, filters={"user_id": query_users[q]}
            )
            ranked = sorted(hits, key=lambda h: -h.score)[:10]
            answer = {"found": [h.payload.get("data") for h in ranked]}
        elif op == "explain":
            answer = {"plan": explain(cfg, request.get("ef"), table[queries[request["i"]]], query_users[request["i"]])}
        else:
            answer = {"error": f"unknown op {op!r}"}
        print(json.dumps(answer, ensure_ascii=False), flush=True)


def explain(cfg: dict, ef: int | None, vector: list[float], user: str) -> str:
    import psycopg

    with psycopg.connect(cfg["dsn"]) as conn:
        if ef is not None:
            conn.execute(f"SET hnsw.ef_search = {int(ef)}")
        rows = conn.execute(
            # The statement of mem0's PGVector.search with its user filter (vector_stores/pgvector.py).
            f"EXPLAIN (ANALYZE, BUFFERS, COSTS OFF) SELECT id, vector <=> %s::vector AS distance, payload "
            f'FROM "{cfg["collection"]}" WHERE payload->>%s = %s ORDER BY distance LIMIT %s',
            [vector, "user_id", user, 60],
        ).fetchall()
    return "\n".join(row[0] for row in rows)


def main() -> None:
    cfg = json.loads(Path(sys.argv[1]).read_text())
    texts = json.loads(Path(cfg["texts"]).read_text())
    rows = json.loads(Path(cfg["rows"]).read_text())
    queries = json.loads(Path(cfg["queries"]).read_text())
    vectors = np.load(cfg["vectors"])
    memory = memory_from(cfg)
    count = _count(cfg)
    loaded = load(memory, cfg, texts, rows, vectors) if count != len(rows) else {"reused": count}
    print(json.dumps({"loaded": loaded}), flush=True)
    serve(memory, cfg, queries, cfg["query_users"], np.load(cfg["query_vectors"]))


def _count(cfg: dict) -> int:
    import psycopg

    with psycopg.connect(cfg["dsn"]) as conn:
        exists = conn.execute("SELECT to_regclass(%s)", [cfg["collection"]]).fetchone()[0]
        return conn.execute(f'SELECT count(*) FROM "{cfg["collection"]}"').fetchone()[0] if exists else 0


if __name__ == "__main__":
    main()

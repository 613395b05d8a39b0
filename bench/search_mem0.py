"""The mem0 half of bench/search.py; runs inside mem0's own virtualenv (never memoryhub's .venv).

    /tmp/mem0-venv/bin/python bench/search_mem0.py CONFIG.json

Loads the benchmark's records into mem0's pgvector store (a few through `Memory.add(..., infer=False)`,
the rest as precomputed vectors through the store's own `insert`, with the payload `add` writes; skipped
when the collection already holds them), then times `Memory.search` for each query index read from stdin,
so the parent can interleave mem0's searches with memoryhub's under the same machine load.
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

import numpy as np

logging.basicConfig(level=logging.ERROR)


def memory_from(cfg: dict):
    from mem0 import Memory

    return Memory.from_config(
        {
            "vector_store": {
                "provider": "pgvector",
                "config": {
                    "connection_string": cfg["dsn"],
                    "collection_name": cfg["collection"],
                    "embedding_model_dims": 512,
                    "hnsw": True,
                },
            },
            # The same OpenAI-compatible server memoryhub uses, backed by the same bundled model.
            "embedder": {
                "provider": "openai",
                "config": {
                    "model": cfg["model"],
                    "openai_base_url": cfg["embedding_url"],
                    "api_key": "bench",
                    "embedding_dims": 512,
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


def load(memory, cfg: dict, texts: list[str], vectors: np.ndarray) -> dict:
    started = time.perf_counter()
    via_add = cfg["add_via_api"]
    for text in texts[:via_add]:
        memory.add([{"role": "user", "content": text}], user_id=cfg["user_id"], infer=False)
    add_seconds = time.perf_counter() - started
    batch = 2000
    for start in range(via_add, len(texts), batch):
        chunk = texts[start : start + batch]
        memory.vector_store.insert(
            vectors=[v.tolist() for v in vectors[start : start + batch]],
            payloads=[payload(t, cfg["user_id"]) for t in chunk],
            ids=[str(uuid.uuid4()) for _ in chunk],
        )
    return {"added_via_api": via_add, "add_seconds": add_seconds, "load_seconds": time.perf_counter() - started}


def serve(memory, cfg: dict, queries: list[str], query_vectors: np.ndarray) -> None:
    """Answer timing requests on stdin, one JSON line each: {"i": query index, "pre": use the precomputed vector}."""
    real_embed = memory.embedding_model.embed
    table = {q: v.tolist() for q, v in zip(queries, query_vectors)}
    print(json.dumps({"ready": True}), flush=True)
    for line in sys.stdin:
        request = json.loads(line)
        query = queries[request["i"]]
        # "pre": the same vector the server would return, without the HTTP call (what mem0 itself costs).
        memory.embedding_model.embed = (lambda text, *a, **k: table[text]) if request["pre"] else real_embed
        started = time.perf_counter()
        found = memory.search(query, top_k=10, filters={"user_id": cfg["user_id"]})
        elapsed = (time.perf_counter() - started) * 1000
        print(json.dumps({"ms": elapsed, "n": len(found["results"])}), flush=True)


def main() -> None:
    cfg = json.loads(Path(sys.argv[1]).read_text())
    texts = json.loads(Path(cfg["texts"]).read_text())
    queries = json.loads(Path(cfg["queries"]).read_text())
    vectors = np.load(cfg["vectors"])
    memory = memory_from(cfg)
    count = _count(cfg)
    loaded = load(memory, cfg, texts, vectors) if count != len(texts) else {"reused": count}
    print(json.dumps({"loaded": loaded}), flush=True)
    serve(memory, cfg, queries, np.load(cfg["query_vectors"]))


def _count(cfg: dict) -> int:
    import psycopg

    with psycopg.connect(cfg["dsn"]) as conn:
        exists = conn.execute("SELECT to_regclass(%s)", [cfg["collection"]]).fetchone()[0]
        return conn.execute(f'SELECT count(*) FROM "{cfg["collection"]}"').fetchone()[0] if exists else 0


if __name__ == "__main__":
    main()

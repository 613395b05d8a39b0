"""Keyword relevance scores compared on LoCoMo dialog turns, on the SQL each backend really runs.

    .venv/bin/python bench/keyword_rank.py [--locomo ../shared/data/locomo/locomo10-dev.json] [--pg postgres://…/db]

Each turn is stored as memoryhub stores a record's keyword text (memories.longterm.keyword: jieba tokens,
space-separated) and each question is asked as an OR of its query terms, as the search does. Ranked by:
SQLite FTS5 `bm25()` (an in-memory database), the previous SQLite order (matched terms / terms), and on
PostgreSQL (a temporary table; --pg, default the BENCH_DATABASE_URL or postgres://postgres@127.0.0.1:5432/postgres)
`ts_rank`, `ts_rank_cd` and `ts_rank_cd` with length normalisation 1, over `to_tsvector('simple', …)`.
Recall@k as bench/embedders.py (SOURCE.md beside the data).
"""

from __future__ import annotations

import argparse
import json
import os
import sqlite3
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench.embedders import DEFAULT_LOCOMO, KS, evidence_of, locomo_units, recall  # noqa: E402
from memories.longterm import keyword  # noqa: E402

DEPTH = max(KS)


def sqlite_rankers(texts: list[str]):
    db = sqlite3.connect(":memory:")
    db.execute("CREATE VIRTUAL TABLE t USING fts5(search_text)")
    db.executemany("INSERT INTO t(rowid, search_text) VALUES (?, ?)", enumerate(texts))

    def bm25(terms: list[str]) -> list[int]:
        match = " OR ".join('"' + term.replace('"', '""') + '"' for term in terms)
        rows = db.execute("SELECT rowid FROM t WHERE t MATCH ? ORDER BY bm25(t), rowid DESC LIMIT ?", (match, DEPTH))
        return [r[0] for r in rows]

    def matched(terms: list[str]) -> list[int]:
        scored = [(sum(f" {term} " in text for term in terms), i) for i, text in enumerate(texts)]
        return [i for hits, i in sorted(scored, key=lambda x: (-x[0], -x[1])) if hits][:DEPTH]

    return {"sqlite fts5 bm25": bm25, "sqlite matched/terms (before)": matched}


def postgres_rankers(url: str, texts: list[str]):
    import psycopg

    conn = psycopg.connect(url, autocommit=True)
    conn.execute(
        "CREATE TEMPORARY TABLE IF NOT EXISTS kw (id int, search_text text, search_tsv tsvector "
        "GENERATED ALWAYS AS (to_tsvector('simple'::regconfig, search_text)) STORED)"  # as memoryhub stores it
    )
    conn.execute("TRUNCATE kw")
    with conn.cursor().copy("COPY kw (id, search_text) FROM STDIN") as copy:
        for i, text in enumerate(texts):
            copy.write_row((i, text))

    def ranker(expression: str):
        def rank(terms: list[str]) -> list[int]:
            query = "(" + " || ".join(["plainto_tsquery('simple'::regconfig, %s)"] * len(terms)) + ")"
            vector = "to_tsvector('simple'::regconfig, search_text)"
            sql = (
                f"SELECT id FROM kw WHERE {vector} @@ {query} "
                f"ORDER BY {expression.format(v=vector, q=query)} DESC, id DESC LIMIT %s"
            )
            rows = conn.execute(sql, [*terms, *terms, DEPTH]).fetchall()
            return [r[0] for r in rows]

        return rank

    def bm25(terms: list[str]) -> list[int]:
        sql, params = keyword.bm25_statement("kw", "TRUE", [], terms, DEPTH, 0)
        return [r[0] for r in conn.execute(sql, params).fetchall()]

    return {
        "postgres bm25 (memoryhub)": bm25,
        "postgres ts_rank (before)": ranker("ts_rank({v}, {q})"),
        "postgres ts_rank_cd": ranker("ts_rank_cd({v}, {q})"),
        "postgres ts_rank_cd norm 1": ranker("ts_rank_cd({v}, {q}, 1)"),
        "postgres ts_rank norm 1": ranker("ts_rank({v}, {q}, 1)"),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--locomo", type=Path, default=DEFAULT_LOCOMO)
    parser.add_argument(
        "--pg", default=os.environ.get("BENCH_DATABASE_URL", "postgres://postgres@127.0.0.1:5432/postgres")
    )
    args = parser.parse_args()
    rows: dict[str, list[dict[int, float]]] = {}
    for conversation in json.loads(args.locomo.read_text(encoding="utf-8")):
        ids, texts = locomo_units(conversation)
        stored = [keyword.padded(keyword.segment(text)) for text in texts]
        rankers = {**sqlite_rankers(stored), **postgres_rankers(args.pg, stored)}
        for qa in conversation["qa"]:
            terms = keyword.query_terms(qa.get("question", ""))
            for name, rank in rankers.items():
                order = rank(terms) if terms else []
                rows.setdefault(name, []).append({k: recall([ids[i] for i in order], evidence_of(qa), k) for k in KS})
    print(f"LoCoMo dialog turns, keyword only ({args.locomo.name}, recall %)")
    print(f"{'':32}" + "".join(f"{'R@' + str(k):>8}" for k in KS))
    for name, results in rows.items():
        print(f"{name:32}" + "".join(f"{100 * sum(r[k] for r in results) / len(results):8.1f}" for k in KS))


if __name__ == "__main__":
    main()

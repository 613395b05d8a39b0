"""Word segmentation for keyword search: jieba for Chinese (no spaces between words), plain words otherwise.

PostgreSQL's `to_tsvector('simple', …)` would make a whole Chinese sentence one token, so records are
stored as jieba-segmented text joined with spaces; the `simple` parser then sees one token per word.
Queries are segmented the same way. SQLite matches the same tokens with LIKE over ` tok ` boundaries.
"""

from __future__ import annotations

import functools
import logging
import math
import re
import unicodedata
from collections import Counter
from collections.abc import Iterable, Iterator

import jieba

jieba.setLogLevel(logging.WARNING)  # its dictionary-loading chatter is not an operator's concern

# The stored tsvector of search_text ('simple' configuration; migration longterm 0007), never parsed per search.
TSVECTOR_SQL = "search_tsv"
MAX_QUERY_TERMS = 32

_WORDLIKE = re.compile(r"[0-9A-Za-z\u00C0-\u024F\u0400-\u04FF\u3040-\u30FF\u3400-\u9FFF\uAC00-\uD7AF]")
# Particles and pronouns that would match almost every record; a keyword search on them says nothing.
STOPWORDS = frozenset(
    [
        "的",
        "了",
        "着",
        "过",
        "是",
        "在",
        "和",
        "与",
        "及",
        "或",
        "也",
        "都",
        "就",
        "很",
        "吗",
        "呢",
        "吧",
        "啊",
        "呀",
        "哦",
        "嗯",
        "我",
        "你",
        "您",
        "他",
        "她",
        "它",
        "我们",
        "你们",
        "请",
        "用",
        "给",
        "把",
        "被",
        "让",
        "这",
        "那",
        "一个",
        "一些",
        "a",
        "an",
        "the",
        "and",
        "or",
        "of",
        "to",
        "in",
        "on",
        "at",
        "for",
        "with",
        "by",
        "is",
        "are",
        "was",
        "be",
        "me",
        "my",
        "i",
        "you",
        "your",
        "it",
        "this",
        "that",
        "please",
    ]
)

# Question words and auxiliaries: a question is phrased with them, the answer rarely is ("When did Sam move?"
# -> "I moved to Lisbon in May."). Dropped from queries only; measured on LoCoMo (docs/recall.md).
QUESTION_WORDS = frozenset(
    [
        "what",
        "when",
        "where",
        "who",
        "whom",
        "whose",
        "which",
        "why",
        "how",
        "do",
        "does",
        "did",
        "have",
        "has",
        "had",
        "am",
        "were",
        "been",
        "can",
        "could",
        "would",
        "should",
        "will",
    ]
)


def _normalize(text: str) -> str:
    return unicodedata.normalize("NFKC", text).lower()


def segment(text: str) -> list[str]:
    """All word tokens of `text` (search mode: long words also yield their sub-words), in order."""
    return [token for token in (t.strip() for t in jieba.cut_for_search(_normalize(text))) if _WORDLIKE.search(token)]


def _strings(value: object) -> Iterator[str]:
    if isinstance(value, str):
        yield value
    elif isinstance(value, dict):
        for item in value.values():
            yield from _strings(item)
    elif isinstance(value, list):
        for item in value:
            yield from _strings(item)


def keyword_strings(content: object) -> list[str]:
    """Every string inside a memory's content (what its words are)."""
    return list(_strings(content))


def bm25_rank(documents: list[str], query: str, k1: float = 1.2, b: float = 0.75) -> list[tuple[int, float]]:
    """BM25 of `query`'s terms over a small in-memory list (a recall's snapshot), best first; matches only."""
    terms = query_terms(query)
    if not terms or not documents:
        return []
    counted = [Counter(segment(document)) for document in documents]
    average = sum(sum(c.values()) for c in counted) / len(counted) or 1.0
    frequency = Counter(term for c in counted for term in set(c) if term in terms)
    n = len(counted)
    scored = []
    for position, counts in enumerate(counted):
        length, score = sum(counts.values()), 0.0
        for term in terms:
            tf = counts.get(term, 0)
            if tf:
                idf = math.log(1 + (n - frequency[term] + 0.5) / (frequency[term] + 0.5))
                score += idf * tf * (k1 + 1) / (tf + k1 * (1 - b + b * length / average))
        if score > 0:
            scored.append((position, score))
    return sorted(scored, key=lambda pair: (-pair[1], pair[0]))


def index_text(content: object, evidence: str) -> str:
    """The stored search text: unique tokens of the content's strings and the evidence, space-padded."""
    return padded(segment(" ".join([*_strings(content), evidence])))


def padded(tokens: Iterable[str]) -> str:
    unique = list(dict.fromkeys(tokens))
    return f" {' '.join(unique)} " if unique else ""


def query_terms(query: str) -> list[str]:
    """The distinct, meaningful terms of a query (stopwords dropped unless nothing else is left)."""
    return list(_query_terms(query))


@functools.lru_cache(maxsize=4096)  # a pure function of the text; segmenting costs ~0.15 ms a query
def _query_terms(query: str) -> tuple[str, ...]:
    tokens = list(dict.fromkeys(segment(query)))
    meaningful = [token for token in tokens if token not in STOPWORDS and token not in QUESTION_WORDS]
    return tuple((meaningful or tokens)[:MAX_QUERY_TERMS])


# PostgreSQL keyword ranking (selectors._keyword_postgres; bench/keyword_rank.py measures it)
BM25_K1, BM25_B = 1.2, 0.75
_SINGLE_LEXEME = re.compile(r"^'([^'\\]+)'$")


def single_lexeme(tsquery_text: str) -> str | None | bool:
    """A term's `plainto_tsquery` as text: its one lexeme, None (no lexeme: a stop word), or False (several).

    What the search ranking in Python (history's and long-term's held rows) can match: one lexeme per term.
    """
    if not tsquery_text:
        return None
    single = _SINGLE_LEXEME.match(tsquery_text)
    return single.group(1) if single else False


def _tsquery(count: int) -> str:
    # Each term parsed by plainto_tsquery: every term is a bound parameter, never SQL text.
    return "(" + " || ".join(["plainto_tsquery('simple'::regconfig, %s)"] * count) + ")"


# Bounded work per search, as history search's (docs/recall.md, "Keyword relevance"): the statistics come from
# the user's newest SAMPLE rows and the newest CANDIDATES matches are ranked — exact for a user with at most
# that many current searchable rows (nearly everyone), an estimate above it. Over every row, one user of
# 100,000 memories cost 0.7 s for the statistics alone (to_tsvector of each row; docs/performance.md).
SAMPLE = 1000
CANDIDATES = 1000


def bm25_statement(
    table: str, where: str, where_params: list, terms: list[str], limit: int, offset: int
) -> tuple[str, list]:
    """PostgreSQL BM25 over the rows `where` selects (the user's current searchable rows): one statement.

    A record's token list holds each word once (keyword.padded), so a term's frequency is 0 or 1 and
    BM25 is idf-sum × (k1 + 1) / (1 + k1 (1 − b + b · length / average length)), with
    idf(t) = ln(1 + (n − df + 0.5) / (df + 0.5)). The document count, the average length and each term's
    document frequency are counted over the same selection (its newest SAMPLE rows), so a score depends on
    this user's records only; the newest CANDIDATES matches are ranked.
    """
    vector = TSVECTOR_SQL
    single = "plainto_tsquery('simple'::regconfig, %s)"
    per_term = ", ".join(f"{single} AS t{i}" for i in range(len(terms)))
    frequencies = ", ".join(f"count(*) FILTER (WHERE s.v @@ q.t{i})::float8 AS df{i}" for i in range(len(terms)))
    idf_sum = " + ".join(
        f"CASE WHEN c.v @@ q.t{i} THEN ln(1 + (st.n - st.df{i} + 0.5) / (st.df{i} + 0.5)) ELSE 0 END"
        for i in range(len(terms))
    )
    factor = f"({BM25_K1 + 1} / (1 + {BM25_K1} * (1 - {BM25_B} + {BM25_B} * length(c.v) / st.avgdl)))"
    sql = (
        f"WITH q AS MATERIALIZED (SELECT {per_term}), "
        f"sample AS MATERIALIZED (SELECT {vector} AS v FROM {table} WHERE {where} ORDER BY id DESC LIMIT {SAMPLE}), "
        f"st AS MATERIALIZED (SELECT count(*)::float8 AS n, coalesce(nullif(avg(length(s.v)), 0), 1)::float8 AS avgdl, "
        f"{frequencies} FROM sample s CROSS JOIN q), "
        f"c AS MATERIALIZED (SELECT id, {vector} AS v FROM {table} WHERE {where} "
        f"AND {vector} @@ {_tsquery(len(terms))} ORDER BY id DESC LIMIT {CANDIDATES}) "
        f"SELECT c.id, ({idf_sum}) * {factor} AS score FROM c CROSS JOIN q CROSS JOIN st "
        "ORDER BY score DESC, c.id DESC LIMIT %s OFFSET %s"
    )
    return sql, [*terms, *where_params, *where_params, *terms, limit, offset]

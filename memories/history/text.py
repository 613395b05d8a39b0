"""What the history index stores for a message: the unit text (embedded) and the keyword text (searched).

The unit follows the LoCoMo paper's dialog unit, `(<time>) <speaker> said, "<text>"`: the time and the
speaker are part of what a question asks about ("what did Sam say in May?"), so both signals see them.
Chinese has no spaces between words: the keyword text is jieba-segmented (memories.longterm.keyword), one
token per word, so SQLite FTS5 (unicode61) and PostgreSQL's `simple` parser both see words, not sentences.
Repeated tokens are kept: BM25 and ts_rank_cd count them.
"""

from __future__ import annotations

from datetime import datetime

from memories.longterm.keyword import QUESTION_WORDS, STOPWORDS, segment

MAX_QUERY_TERMS = 32
# PostgreSQL's text-search configuration of the keyword text: must match migration 0001's generated tsvector column.
TS_CONFIG = "english"


def speaker(role: str, name: str) -> str:
    return name or role


def spoken_time(when: datetime) -> str:
    """As LoCoMo writes its session dates ("1:56 pm on 8 May, 2023"), in UTC."""
    hour = when.hour % 12 or 12
    return f"{hour}:{when.minute:02d} {'am' if when.hour < 12 else 'pm'} on {when.day} {when:%B}, {when.year}"


def unit_text(*, role: str, name: str, content: str, created_at: datetime) -> str:
    return f'({spoken_time(created_at)}) {speaker(role, name)} said, "{content}"'


def keyword_text(*, role: str, name: str, content: str, created_at: datetime) -> str:
    # The speaker and the date are searchable words too; the clock time is not (it matches nothing asked).
    words = [*segment(speaker(role, name)), *segment(f"{created_at.day} {created_at:%B} {created_at.year}")]
    return " ".join([*words, *segment(content)])


def query_terms(query: str) -> list[str]:
    """The distinct terms of a query, stopwords dropped unless nothing else is left."""
    tokens = list(dict.fromkeys(segment(query)))
    meaningful = [token for token in tokens if token not in STOPWORDS and token not in QUESTION_WORDS]
    return (meaningful or tokens)[:MAX_QUERY_TERMS]

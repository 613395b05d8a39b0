"""The default bundled embedder: language-centred e5 with an English model beside it, as one vector.

Score wanted for a query q and a record d (docs/recall.md, "The blended embedder"):
    cos_e5(q, d) + λ · cos_MiniLM(q, d)   when both are in Latin script (English),
    cos_e5(q, d) + λ · c                  when the query is English and the record is not,
    cos_e5(q, d)                          when the query is not English.
e5 alone ranks one English paraphrase in five below a near miss; MiniLM reads English better but no other
language, so it may only re-rank English records against each other, and `c` stands in for its score where
it cannot read the record. One cosine gives exactly that ranking, so every vector index (pgvector, SQLite,
the held rows, Qdrant) serves it unchanged:
    record = [e5(d), √λ · e·MiniLM(d), √λ · √(1 − e²)]      (norm √(1 + λ) for every record)
    query  = [e5(q), √λ · e·MiniLM(q), √λ · e·c]
where `e` is the text's share of Latin letters (1 for English, 0 for Chinese; a mix weighs both). Every
record has the same norm, so a query's cosines keep the order of the scores above (each divided by the
query's own norm and √(1 + λ)). λ and c were chosen on the committed paraphrase set and LoCoMo's development
half (docs/performance.md) and are part of the identity: changing them needs a reindex.

No Django import: the embedding bench uses this module without settings.
"""

from __future__ import annotations

import math

import numpy as np

from . import e5, minilm

ENGLISH_WEIGHT = 0.5  # λ
ENGLISH_UNREAD = 0.3  # c: the MiniLM score counted for a record it cannot read
MODEL = (
    f"{e5.MODEL}+all-MiniLM-L6-v2-{minilm.PACKAGE}-{minilm.PACKAGE_VERSION}"
    f"-latin-l{ENGLISH_WEIGHT}-c{ENGLISH_UNREAD}-v1"
)
DIMENSION = e5.DIMENSION + minilm.DIMENSION + 1


def latin_share(text: str) -> float:
    """The share of ASCII letters among a text's letters (0 for a text without letters)."""
    letters = [ch for ch in text if ch.isalpha()]
    if not letters:
        return 0.0
    return sum(1 for ch in letters if ch.isascii()) / len(letters)


def vectors(texts: list[str], *, query: bool) -> np.ndarray:
    """The stored (records) or searched (queries) vectors, one L2-normalised row of DIMENSION per text."""
    base = e5.centred(texts, query=query)
    english = np.asarray([latin_share(text) for text in texts], dtype=np.float64)[:, None]
    reader = np.zeros((len(texts), minilm.DIMENSION))
    read = np.flatnonzero(english[:, 0] > 0.0)
    if read.size:  # MiniLM never runs on a text without a Latin letter
        reader[read] = minilm.vectors([texts[i] for i in read])
    scale = math.sqrt(ENGLISH_WEIGHT)
    last = english * ENGLISH_UNREAD if query else np.sqrt(1.0 - english**2)
    matrix = np.hstack([base, scale * english * reader, scale * last])
    norms = np.linalg.norm(matrix, axis=1, keepdims=True)
    return matrix / np.where(norms == 0.0, 1.0, norms)


def load() -> None:
    e5.load_raw_model()
    minilm.load()

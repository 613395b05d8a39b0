"""The blended bundled embedders: language-centred e5 with other bundled models beside it, each blend one vector.

Score wanted for a query q and a record d (docs/recall.md, "The embedder"):
    cos_e5(q, d)
  + a(q) · cos_USE(q, d)              USE multilingual v3, for every record (`e5-use-minilm` only)
  + λ · cos_MiniLM(q, d)              when query and record are in Latin script (English),
  + λ · c                             when the query is English and the record is not.
e5 ranks one English paraphrase in five below a near miss and prefers a record in the query's language;
MiniLM reads English better but no other language, so it may only re-rank English records against each other,
and `c` stands in for its score where it cannot read the record; USE, trained on translation pairs, settles
Chinese and cross-lingual near misses. a(q) = a_en · e + a_other · (1 − e). One cosine gives exactly that
ranking, so every vector index (pgvector, SQLite, the held rows, Qdrant) serves it unchanged:
    record = [e5(d), USE(d), √λ · e·MiniLM(d), √λ · √(1 − e²)]        (norm √(2 + λ) for every record)
    query  = [e5(q), a(q) · USE(q), √λ · e·MiniLM(q), √λ · e·c]
(without USE, the blend `e5-minilm`: both drop the USE block, every record's norm is √(1 + λ)), where `e` is
the text's share of Latin letters (1 for English, 0 for Chinese; a mix weighs both). Every record has the
same norm, so a query's cosines keep the order of the scores above. The weights were chosen on the committed
paraphrase set and LoCoMo's development half (docs/performance.md) and are part of the identity: changing
them needs a reindex.

No Django import: the embedding bench uses this module without settings.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from . import e5, minilm, use


@dataclass(frozen=True)
class Blend:
    name: str  # its EMBEDDING_LOCAL_MODEL value
    english_weight: float  # λ
    english_unread: float  # c: the MiniLM score counted for a record it cannot read
    use_weights: tuple[float, float] | None = None  # (a_en, a_other): USE's weight for a query; None: no USE
    min_score: float = 0.15  # the hybrid floor measured for it (docs/recall.md, "The floor")

    @property
    def model(self) -> str:
        parts = [e5.MODEL]
        if self.use_weights:
            parts.append(f"{use.MODEL}-en{self.use_weights[0]}-other{self.use_weights[1]}")
        parts.append(f"all-MiniLM-L6-v2-{minilm.PACKAGE}-{minilm.PACKAGE_VERSION}")
        return "+".join(parts) + f"-latin-l{self.english_weight}-c{self.english_unread}-v1"

    @property
    def dimension(self) -> int:
        return e5.DIMENSION + (use.DIMENSION if self.use_weights else 0) + minilm.DIMENSION + 1

    def vectors(self, texts: list[str], *, query: bool) -> np.ndarray:
        """The stored (records) or searched (queries) vectors, one L2-normalised row of `dimension` per text."""
        english = np.asarray([latin_share(text) for text in texts], dtype=np.float64)[:, None]
        blocks = [e5.centred(texts, query=query)]
        if self.use_weights:
            a_en, a_other = self.use_weights
            blocks.append((a_en * english + a_other * (1.0 - english) if query else 1.0) * use.vectors(texts))
        reader = np.zeros((len(texts), minilm.DIMENSION))
        read = np.flatnonzero(english[:, 0] > 0.0)
        if read.size:  # MiniLM never runs on a text without a Latin letter
            reader[read] = minilm.vectors([texts[i] for i in read])
        scale = math.sqrt(self.english_weight)
        last = english * self.english_unread if query else np.sqrt(1.0 - english**2)
        matrix = np.hstack([*blocks, scale * english * reader, scale * last])
        norms = np.linalg.norm(matrix, axis=1, keepdims=True)
        return matrix / np.where(norms == 0.0, 1.0, norms)

    def load(self) -> None:
        e5.load_raw_model()
        minilm.load()
        if self.use_weights:
            use.load()


E5_MINILM = Blend("e5-minilm", english_weight=0.5, english_unread=0.3, min_score=0.18)
E5_USE_MINILM = Blend("e5-use-minilm", english_weight=0.5, english_unread=0.3, use_weights=(0.3, 0.7))
BLENDS = {blend.name: blend for blend in (E5_MINILM, E5_USE_MINILM)}


def latin_share(text: str) -> float:
    """The share of ASCII letters among a text's letters (0 for a text without letters)."""
    letters = [ch for ch in text if ch.isalpha()]
    if not letters:
        return 0.0
    return sum(1 for ch in letters if ch.isascii()) / len(letters)

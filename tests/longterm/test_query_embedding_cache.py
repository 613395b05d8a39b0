"""Query vectors are cached in the working set by embedding identity and normalised text (docs/long-term-memories.md).

The embedder is a real OpenAI-compatible HTTP server (tests.support.embedding_server) that counts the
texts it is asked to embed: a query text is embedded once within the cache's lifetime, a change of
identity embeds it again, and a cache that is down fails the search (503) instead of changing its answer.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator
from io import StringIO

import pytest
from django.core.cache import cache
from django.core.management import call_command
from django.test import override_settings

from memories.longterm.selectors import memory_search
from memories.longterm.services.embedding_index import index_in_use, query_embedding_scope
from memoryhub.addresses import UserAddress
from memoryhub.api.handler import _REDIS_DOWN as REDIS_DOWN
from memoryhub.clients.embeddings import LocalUSEEmbedder
from tests.longterm.support import EN_DETAIL, ZH_LANGUAGE, create, search
from tests.support.api import assert_envelope
from tests.support.embedding_server import ServerOptions, make_server, serve_in_thread
from tests.support.processes import closed_port

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("fresh_embedder")]

QUERY = "请用简洁的中文回复我"


class CountingEmbedder(LocalUSEEmbedder):
    """The bundled model behind the HTTP server, counting every text the server is asked to embed."""

    def __init__(self) -> None:
        self.texts: Counter[str] = Counter()

    def embed(self, texts: list[str]) -> list[list[float]]:
        self.texts.update(texts)
        return super().embed(texts)


class CountingServer:
    def __init__(self, model: str):
        self.embedder = CountingEmbedder()
        self.server = make_server(options=ServerOptions(model=model), embedder=self.embedder)
        serve_in_thread(self.server)
        host, port = self.server.server_address[:2]
        self.url, self.model = f"http://{host}:{port}", model

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture
def server_a() -> Iterator[CountingServer]:
    server = CountingServer("model-a")
    yield server
    server.close()


@pytest.fixture
def server_b() -> Iterator[CountingServer]:
    server = CountingServer("model-b")
    yield server
    server.close()


def use(settings, server: CountingServer) -> None:
    settings.EMBEDDING_BASE_URL, settings.EMBEDDING_MODEL, settings.EMBEDDING_DIMENSIONS = server.url, server.model, 512


def ids(response) -> list[str]:
    assert response.status_code == 200, response.json()
    return [r["id"] for r in response.json()["results"]]


def test_a_query_text_is_embedded_once_and_answers_the_same(alice, settings, server_a):
    use(settings, server_a)
    wanted = create(alice, ZH_LANGUAGE)["id"]
    create(alice, EN_DETAIL)
    first = search(alice, QUERY, "semantic")
    # The same text again, and written differently but equal after the embedder's preprocessing
    # (surrounding and ideographic spaces): no second request, the same answer. The scores to pgvector's float4
    # precision: a later search may be answered from memories held in the process, in float64
    # (tests/longterm/test_hybrid_postgres.py), which rounds to 1e-6 a digit apart on some CPUs.
    again = [search(alice, text, "semantic") for text in (QUERY, f"  {QUERY}\u3000")]
    assert server_a.embedder.texts[QUERY] == 1
    assert all(ids(response) == ids(first) for response in again) and ids(first)[0] == wanted
    scores = [r["score"] for r in first.json()["results"]]
    assert [r["score"] for r in again[0].json()["results"]] == pytest.approx(scores, abs=2e-6)
    search(alice, "Ｆｕｌｌ－width，ｑｕｅｒｙ", "semantic")  # NFKC folds full-width letters and punctuation
    search(alice, "Full-width,query", "semantic")
    assert server_a.embedder.texts["Full-width,query"] == 1
    # the two writes, the two distinct queries (and the server's own warm-up before it accepts traffic)
    assert sum(server_a.embedder.texts.values()) - server_a.embedder.texts["warm-up"] == 2 + 2


def test_another_product_embeds_its_own_queries(alice, bob, settings, server_a):
    use(settings, server_a)
    create(alice, ZH_LANGUAGE)
    create(bob, ZH_LANGUAGE)
    search(alice, QUERY, "semantic")
    search(bob, QUERY, "semantic")  # the cache is per product: no product learns what another asked
    assert server_a.embedder.texts[QUERY] == 2


def test_a_new_identity_embeds_the_query_again(alice, settings, server_a, server_b):
    use(settings, server_a)
    create(alice, ZH_LANGUAGE)
    before = ids(search(alice, QUERY, "semantic"))
    use(settings, server_b)
    call_command("reindex_embeddings", "--no-progress", stdout=StringIO())
    after = ids(search(alice, QUERY, "semantic"))
    search(alice, QUERY, "semantic")
    assert server_a.embedder.texts[QUERY] == 1 and server_b.embedder.texts[QUERY] == 1
    assert after == before  # the same model under another name: the same answer, from its own vectors
    a = query_embedding_scope(alice.product.pk, server_a.embedder.identity, QUERY)
    assert a.key != query_embedding_scope(alice.product.pk, index_in_use().embedder.identity, QUERY).key


def test_the_entry_holds_the_exact_vector_the_embedder_returned(alice, settings, server_a):
    use(settings, server_a)
    in_use = index_in_use()
    direct = in_use.embed_one(QUERY)
    assert in_use.embed_query(alice.product.pk, QUERY) == direct  # miss: embedded, stored
    assert in_use.embed_query(alice.product.pk, QUERY) == direct  # hit: float64 round trip, bit for bit
    assert cache.get(query_embedding_scope(alice.product.pk, in_use.embedder.identity, QUERY).key) is not None


def test_a_cache_that_is_down_fails_the_search_and_embeds_nothing(alice, settings, server_a):
    use(settings, server_a)
    create(alice, ZH_LANGUAGE)
    down = {
        "default": {
            "BACKEND": "django_redis.cache.RedisCache",
            "LOCATION": f"redis://127.0.0.1:{closed_port()}/0",
            "OPTIONS": {"CLIENT_CLASS": "django_redis.client.DefaultClient", "SOCKET_CONNECT_TIMEOUT": 1},
        }
    }
    embedded = sum(server_a.embedder.texts.values())
    with override_settings(CACHES=down, DJANGO_REDIS_IGNORE_EXCEPTIONS=False):
        # The working-set rule (docs/architecture.md): a cache outage is a 503, never a silent fallback.
        assert_envelope(search(alice, QUERY, "semantic"), 503, "storage_unavailable")
        with pytest.raises(REDIS_DOWN):
            memory_search(UserAddress(alice.product, "u1"), mode="semantic", query=QUERY, limit=10, cursor=None)
    assert sum(server_a.embedder.texts.values()) == embedded
    assert ids(search(alice, QUERY, "semantic"))  # the cache is back: search answers again

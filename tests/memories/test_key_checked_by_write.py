"""A memory PUT from a key this process has read before checks the key in its own statement, not in a lookup.

memories/api/authentication.py keeps a snapshot of each key (and its product) with the rows' versions;
`memoryhub_memory_cas_for_key` (migration 0017) writes only if neither row changed. Whatever else happens is
confirmed by a lookup first: revocation, an erasure and a schema change are seen as exactly as before.
"""

from __future__ import annotations

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from memories.lifecycle.services.erasure import erasure_start
from memories.models import Product
from memories.selectors.documents import memory_document_get
from memories.services.products import api_key_revoke
from memoryhub.addresses import ConversationAddress
from tests.support.api import assert_envelope

pytestmark = pytest.mark.requires_postgres
URL = "/v1/users/u1/conversations/c1/memory"


def stored(api) -> tuple[int, object]:
    return memory_document_get(ConversationAddress(api.product, "u1", "c1"))


def put(api, revision: int, memory: object, **headers):
    return api.put(URL, {"expectedRevision": revision, "memory": memory}, **headers)


def test_a_known_keys_put_is_one_statement_that_checks_the_key(alice):
    assert put(alice, 0, {"v": 1}).json() == {"revision": 1}  # the first: the key is read with its versions
    with CaptureQueriesContext(connection) as captured:
        assert put(alice, 1, {"v": 2}).json() == {"revision": 2}
    assert [q["sql"].split("(")[0] for q in captured.captured_queries] == ["SELECT memoryhub_memory_cas_for_key"]
    assert stored(alice) == (2, {"v": 2})


@pytest.mark.parametrize(
    "body",
    [
        {"expectedRevision": 1, "memory": {"v": 2}},  # would be written
        {"expectedRevision": 0, "memory": {"v": 2}},  # would be a conflict
        {"expectedRevision": 1, "memory": "not an object"},  # would be refused as invalid
        {"expectedRevision": 1},  # would be refused by the serializer
    ],
)
def test_a_revoked_key_gets_401_whatever_its_put_would_have_done(alice, body):
    assert put(alice, 0, {"v": 1}).status_code == 200
    api_key_revoke(api_key=alice.product.api_keys.get())
    response = alice.put(URL, body)
    assert_envelope(response, 401, "unauthenticated")
    assert response["WWW-Authenticate"] == "Bearer"
    assert stored(alice) == (1, {"v": 1})


def test_a_schema_set_by_another_process_refuses_what_it_refuses(alice):
    assert put(alice, 0, {"scene": "gate"}).status_code == 200
    schema = {"type": "object", "required": ["scene"]}
    Product.objects.filter(pk=alice.product.pk).update(memory_schema=schema)  # no signal reaches this process
    assert_envelope(put(alice, 1, {"keyHolder": "贼"}), 422, "rejected_by_policy")
    assert stored(alice) == (1, {"scene": "gate"})
    Product.objects.filter(pk=alice.product.pk).update(memory_schema=None)
    assert put(alice, 1, {"keyHolder": "贼"}).json() == {"revision": 2}  # and lets through what it lets through


def test_an_erasure_started_since_refuses_the_write(alice):
    assert put(alice, 0, {"v": 1}).status_code == 200
    erasure_start(product=Product.objects.get(pk=alice.product.pk), user_id="u1", requested_by="t", schedule=False)
    assert_envelope(put(alice, 1, {"v": 2}), 409, "erasure_in_progress")
    assert stored(alice) == (1, {"v": 1})


def test_a_put_with_an_idempotency_key_looks_the_key_up_first(alice):
    assert put(alice, 0, {"v": 1}).status_code == 200
    with CaptureQueriesContext(connection) as captured:
        first = put(alice, 1, {"v": 2}, HTTP_IDEMPOTENCY_KEY="k1")
    assert first.json() == {"revision": 2}
    assert "memoryhub_memory_cas_for_key" not in " ".join(q["sql"] for q in captured.captured_queries)
    api_key_revoke(api_key=alice.product.api_keys.get())
    assert_envelope(put(alice, 1, {"v": 2}, HTTP_IDEMPOTENCY_KEY="k1"), 401, "unauthenticated")  # no replay


def test_a_revoked_key_refused_before_the_view_gets_401_too(alice, monkeypatch):
    from memoryhub.api.throttling import PerKeyRateThrottle

    monkeypatch.setattr(PerKeyRateThrottle, "THROTTLE_RATES", {"per_key": "1/min"})
    assert put(alice, 0, {"v": 1}).status_code == 200
    assert_envelope(put(alice, 1, {"v": 2}), 429, "rate_limited")  # the key is fine: the limit answers
    api_key_revoke(api_key=alice.product.api_keys.get())
    assert_envelope(put(alice, 1, {"v": 2}), 401, "unauthenticated")  # not 429: the key is gone
    not_json = alice.client.put(URL, "{not json", content_type="application/json")
    assert_envelope(not_json, 401, "unauthenticated")  # not the parser's 400
    assert stored(alice) == (1, {"v": 1})


def test_with_webhooks_a_known_keys_write_and_its_event_commit_or_roll_back_together(alice, settings):
    from memories.webhooks.models import WebhookMessage

    settings.WEBHOOK_ALLOW_PRIVATE = True  # registered only: nothing is delivered in this test
    url = "http://127.0.0.1:9/hooks"
    assert alice.post("/v1/webhooks", {"url": url, "events": ["memory.updated"]}).status_code == 201
    assert put(alice, 0, {"v": 1}).status_code == 200  # the key is read with its versions
    with CaptureQueriesContext(connection) as captured:
        assert put(alice, 1, {"v": 2}).json() == {"revision": 2}
    assert "memoryhub_memory_cas_for_key" in " ".join(q["sql"] for q in captured.captured_queries)
    assert WebhookMessage.objects.filter(product=alice.product, type="memory.updated").count() == 2
    api_key_revoke(api_key=alice.product.api_keys.get())
    assert_envelope(put(alice, 2, {"v": 3}), 401, "unauthenticated")
    assert stored(alice) == (2, {"v": 2})
    assert WebhookMessage.objects.filter(product=alice.product, type="memory.updated").count() == 2

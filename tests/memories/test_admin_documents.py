"""The operator console (docs/contract.md): products, keys, memory documents edited through the API's service."""

from __future__ import annotations

import json
import re

import pytest
from django.contrib.admin.models import ADDITION, CHANGE, LogEntry
from django.contrib.admin.utils import quote
from django.contrib.messages import get_messages
from django.urls import reverse
from rest_framework.test import APIClient

from memories import forms as memory_forms
from memories.models import ApiKey, MemoryDocument, Product
from memories.services.products import api_key_create
from tests.factories import ProductFactory
from tests.support.admin import log_messages, staff_client
from tests.support.api import assert_envelope
from tests.support.metrics import metric

URL = "/v1/users/u1/conversations/c1/memory"
KEY_PATTERN = re.compile(r"mhk_[A-Za-z0-9_-]+")
INLINE_MANAGEMENT = {
    "api_keys-TOTAL_FORMS": "0",
    "api_keys-INITIAL_FORMS": "0",
    "api_keys-MIN_NUM_FORMS": "0",
    "api_keys-MAX_NUM_FORMS": "1000",
}


def messages_of(response) -> list[str]:
    return [str(message) for message in get_messages(response.wsgi_request)]


def document_of(api) -> MemoryDocument:
    return MemoryDocument.objects.get(product=api.product, user_id="u1", conversation_id="c1")


def change_url(obj) -> str:
    # quote() as the admin does: product ids contain "_", the admin's escape character.
    return reverse(f"admin:memories_{obj._meta.model_name}_change", args=[quote(obj.pk)])


def save_document(admin_client, document, memory: object, loaded_revision: int, **kwargs):
    data = {"memory": json.dumps(memory, ensure_ascii=False), "loaded_revision": str(loaded_revision), "_save": "Save"}
    return admin_client.post(change_url(document), data, **kwargs)


@pytest.fixture(autouse=True)
def _fast_password_hashing(settings):
    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]


@pytest.fixture
def written(alice):
    alice.put(URL, {"expectedRevision": 0, "memory": {"mood": "calm", "notes": ["第一"]}})
    return alice


# --- products and keys -----------------------------------------------------------------------------


def test_product_list_and_change_pages_open(admin_client, alice):
    listing = admin_client.get(reverse("admin:memories_product_changelist"))
    assert listing.status_code == 200
    assert alice.product.name in listing.content.decode()
    page = admin_client.get(change_url(alice.product))
    assert page.status_code == 200
    body = page.content.decode()
    assert alice.key.split("_")[1] in body  # the key's prefix is listed
    assert alice.key not in body  # never the key itself


def test_product_whose_id_looks_like_an_admin_escape_opens_from_the_list(admin_client, db):
    product = ProductFactory(id="prd_4022aabbccddeeff", name="Escapes")
    listing = admin_client.get(reverse("admin:memories_product_changelist")).content.decode()
    link = re.search(r'href="([^"]+/change/)"', listing).group(1)
    assert admin_client.get(link).status_code == 200
    assert admin_client.get(change_url(product)).status_code == 200


def test_admin_pages_require_a_staff_login(client, alice):
    response = client.get(reverse("admin:memories_product_changelist"))
    assert response.status_code == 302
    assert "/admin/login/" in response["Location"]


def test_adding_a_product_shows_its_key_once_and_the_key_works(admin_client, db):
    data = {"name": "Console product", "memory_schema": "", **INLINE_MANAGEMENT}
    response = admin_client.post(reverse("admin:memories_product_add"), data, follow=True)
    assert response.status_code == 200
    product = Product.objects.get(name="Console product")
    keys = [match for text in messages_of(response) for match in KEY_PATTERN.findall(text)]
    assert len(keys) == 1
    assert APIClient(HTTP_AUTHORIZATION=f"Bearer {keys[0]}").get(URL).json() == {"revision": 0, "memory": None}
    assert ApiKey.objects.filter(product=product).count() == 1
    again = admin_client.get(change_url(product))
    assert keys[0] not in again.content.decode()


def test_a_new_key_never_travels_in_a_cookie(admin_client, db):
    """The message showing it is kept in the server-side session (settings.MESSAGE_STORAGE)."""
    data = {"name": "Cookie product", "memory_schema": "", **INLINE_MANAGEMENT}
    response = admin_client.post(reverse("admin:memories_product_add"), data)
    assert response.status_code == 302
    assert "messages" not in response.cookies
    assert not any("mhk_" in morsel.value for morsel in response.cookies.values())
    shown = admin_client.get(response["Location"])
    assert len(KEY_PATTERN.findall(shown.content.decode())) == 1


def test_product_with_a_valid_schema_is_saved_and_enforced_by_the_api(admin_client, alice):
    schema = {"type": "object", "required": ["mood"]}
    data = {
        "name": alice.product.name,
        "memory_schema": json.dumps(schema),
        **INLINE_MANAGEMENT,
        "api_keys-TOTAL_FORMS": "1",
        "api_keys-INITIAL_FORMS": "1",
        "api_keys-0-id": str(alice.product.api_keys.get().pk),
        "api_keys-0-product": alice.product.pk,
    }
    response = admin_client.post(change_url(alice.product), data)
    assert response.status_code == 302, response.content.decode()[:2000]
    assert Product.objects.get(pk=alice.product.pk).memory_schema == schema
    assert_envelope(alice.put(URL, {"expectedRevision": 0, "memory": {}}), 422, "rejected_by_policy")


@pytest.mark.parametrize("schema", ['{"type": "no-such-type"}', '{"minLength": -1}', "[1, 2]", '"text"', "{not json"])
def test_product_schema_that_is_not_a_valid_json_schema_is_refused(admin_client, db, schema):
    data = {"name": "Bad schema", "memory_schema": schema, **INLINE_MANAGEMENT}
    response = admin_client.post(reverse("admin:memories_product_add"), data)
    assert response.status_code == 200
    assert response.context["adminform"].form.errors["memory_schema"]
    assert not Product.objects.filter(name="Bad schema").exists()


def test_api_key_list_opens_and_revoke_action_revokes(admin_client, alice):
    extra = api_key_create(product=alice.product, name="to revoke")
    listing = admin_client.get(reverse("admin:memories_apikey_changelist"))
    assert listing.status_code == 200
    assert extra.api_key.prefix in listing.content.decode()
    response = admin_client.post(
        reverse("admin:memories_apikey_changelist"),
        {"action": "revoke", "_selected_action": [extra.api_key.pk]},
        follow=True,
    )
    assert response.status_code == 200
    assert any("Revoked 1" in text for text in messages_of(response))
    assert ApiKey.objects.get(pk=extra.api_key.pk).revoked_at is not None
    assert_envelope(APIClient(HTTP_AUTHORIZATION=f"Bearer {extra.plaintext}").get(URL), 401, "unauthenticated")
    assert alice.get(URL).status_code == 200


def test_issuing_a_key_needs_the_add_key_permission_and_is_logged(alice):
    action = {"action": "issue_api_key", "_selected_action": [alice.product.pk]}
    viewer = staff_client("memories.view_product")
    page = viewer.post(reverse("admin:memories_product_changelist"), action, follow=True).content.decode()
    assert "mhk_" not in page and alice.product.api_keys.count() == 1  # view only: no key, nothing shown

    issuer = staff_client("memories.view_product", "memories.add_apikey")
    response = issuer.post(reverse("admin:memories_product_changelist"), action, follow=True)
    issued = alice.product.api_keys.latest("id")
    assert alice.product.api_keys.count() == 2 and any("mhk_" in text for text in messages_of(response))
    assert log_messages(issued, ADDITION) == [f"Issued the API key {issued.prefix}… of {alice.product}"]


def test_revoking_keys_needs_the_change_permission_and_is_logged(alice):
    extra = api_key_create(product=alice.product, name="to revoke").api_key
    action = {"action": "revoke", "_selected_action": [extra.pk]}
    staff_client("memories.view_apikey").post(reverse("admin:memories_apikey_changelist"), action)
    assert ApiKey.objects.get(pk=extra.pk).revoked_at is None and log_messages(extra) == []

    staff_client("memories.view_apikey", "memories.change_apikey").post(
        reverse("admin:memories_apikey_changelist"), action
    )
    assert ApiKey.objects.get(pk=extra.pk).revoked_at is not None
    assert log_messages(extra, CHANGE) == [f"Revoked the API key {extra.prefix}…"]


def test_api_key_change_page_opens(admin_client, alice):
    assert admin_client.get(change_url(alice.product.api_keys.get())).status_code == 200


# --- memory documents ------------------------------------------------------------------------------


def test_memory_document_list_and_change_page_open_with_history(admin_client, written):
    written.put(URL, {"expectedRevision": 1, "memory": {"mood": "excited"}})
    listing = admin_client.get(reverse("admin:memories_memorydocument_changelist"))
    assert listing.status_code == 200
    assert "u1" in listing.content.decode()
    page = admin_client.get(change_url(document_of(written)))
    assert page.status_code == 200
    body = page.content.decode()
    assert "r2" in body and "r1" in body
    assert "excited" in body and "第一" in body


def test_operator_edit_creates_a_new_revision_recorded_as_the_operator(admin_client, admin_user, written):
    response = save_document(admin_client, document_of(written), {"mood": "edited by operator"}, loaded_revision=1)
    assert response.status_code == 302
    assert written.get(URL).json() == {"revision": 2, "memory": {"mood": "edited by operator"}}
    newest = written.get(URL + "/revisions").json()["results"][0]
    assert newest["revision"] == 2
    assert newest["actor"] == {"type": "operator", "id": admin_user.get_username()}


def test_operator_edit_on_a_stale_revision_is_refused_visibly_and_changes_nothing(admin_client, written):
    document = document_of(written)
    written.put(URL, {"expectedRevision": 1, "memory": {"mood": "changed by the app"}})
    conflicts = metric("memoryhub_conflicts_total", kind="memory_document")
    response = save_document(admin_client, document, {"mood": "operator's stale edit"}, loaded_revision=1)
    assert response.status_code == 200
    assert "changed while you edited it" in response.content.decode()
    assert metric("memoryhub_conflicts_total", kind="memory_document") == conflicts + 1  # counted like the API's
    assert written.get(URL).json() == {"revision": 2, "memory": {"mood": "changed by the app"}}
    assert len(written.get(URL + "/revisions").json()["results"]) == 2


def test_operator_edit_losing_a_race_after_validation_is_refused_visibly(admin_client, written, monkeypatch):
    # The app writes between the form's check and the service call: the service's CAS still refuses.
    monkeypatch.setattr(memory_forms.MemoryDocumentForm, "clean", lambda form: form.cleaned_data)
    document = document_of(written)
    written.put(URL, {"expectedRevision": 1, "memory": {"mood": "app won"}})
    response = save_document(admin_client, document, {"mood": "operator lost"}, loaded_revision=1, follow=True)
    assert any("Not saved" in text for text in messages_of(response))
    assert written.get(URL).json() == {"revision": 2, "memory": {"mood": "app won"}}
    assert not LogEntry.objects.filter(object_id=str(document.pk)).exists()  # no "Changed" entry for a refused save


def test_operator_edit_is_logged_in_the_admin_history(admin_client, written):
    document = document_of(written)
    save_document(admin_client, document, {"mood": "logged"}, loaded_revision=1)
    assert LogEntry.objects.filter(object_id=str(document.pk), action_flag=CHANGE).count() == 1


def too_deep() -> dict:
    node: list = []
    for _ in range(31):
        node = [node]
    return {"a": node}  # depth 33


@pytest.mark.parametrize("memory", [[1, 2], "text", None, too_deep()])
def test_operator_edit_with_an_invalid_memory_is_refused(admin_client, written, memory):
    response = save_document(admin_client, document_of(written), memory, loaded_revision=1)
    assert response.status_code == 200
    assert response.context["adminform"].form.errors
    assert written.get(URL).json()["revision"] == 1


def test_operator_edit_failing_the_product_schema_is_refused(admin_client, written):
    written.product.memory_schema = {"type": "object", "required": ["mood"]}
    written.product.save()
    response = save_document(admin_client, document_of(written), {"no_mood": True}, loaded_revision=1)
    assert response.status_code == 200
    assert "mood" in str(response.context["adminform"].form.errors)
    assert written.get(URL).json()["memory"] == {"mood": "calm", "notes": ["第一"]}


@pytest.mark.parametrize("how", ["page", "action"])
def test_an_operator_delete_removes_the_revisions_too_so_the_memory_stays_writable(admin_client, written, how):
    """A delete that left the revisions made every later write collide with them (503, then 409 for good)."""
    document = document_of(written)
    assert written.put(URL, {"expectedRevision": 1, "memory": {"mood": "second"}}).status_code == 200
    if how == "page":
        url = reverse("admin:memories_memorydocument_delete", args=[quote(document.pk)])
        response = admin_client.post(url, {"post": "yes"})
    else:
        changelist = reverse("admin:memories_memorydocument_changelist")
        data = {"action": "delete_selected", "_selected_action": [document.pk], "post": "yes"}
        response = admin_client.post(changelist, data)
    assert response.status_code == 302
    assert written.get(URL).json() == {"revision": 0, "memory": None}
    assert written.get(URL + "/revisions").json()["results"] == []
    assert written.put(URL, {"expectedRevision": 0, "memory": {"mood": "fresh"}}).json() == {"revision": 1}
    assert written.get(URL).json() == {"revision": 1, "memory": {"mood": "fresh"}}

"""The admin for lorebooks: inspect a book and its entries; an entry edit goes through the API's service."""

from __future__ import annotations

import json

import pytest
from django.urls import reverse

from lorebooks.models import LorebookEntry, LorebookEntryVersion

from .support import import_world, world_info

pytestmark = pytest.mark.django_db


@pytest.fixture(autouse=True)
def _fast_password_hashing(settings):
    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]


def entry_row(alice, uid="1") -> LorebookEntry:
    return LorebookEntry.objects.get(product=alice.product, lorebook__slug="eldoria", uid=uid)


def save(admin_client, entry, fields: dict, loaded: int):
    url = reverse("admin:lorebooks_lorebookentry_change", args=[entry.pk])
    data = {"fields_json": json.dumps(fields), "loaded_revision": str(loaded), "_save": "Save"}
    data |= {"versions-TOTAL_FORMS": "0", "versions-INITIAL_FORMS": "0"}
    return admin_client.post(url, data, follow=True)


def test_pages_render(admin_client, alice):
    import_world(alice)
    book = alice.product.lorebook_set.get()
    assert "Salt Guild" in admin_client.get(reverse("admin:lorebooks_lorebook_change", args=[book.pk])).content.decode()
    page = admin_client.get(
        reverse("admin:lorebooks_lorebookentry_change", args=[entry_row(alice).pk])
    ).content.decode()
    assert "characterFilter" in page and "tide-city" in page  # the native JSON and the view
    assert admin_client.get(reverse("admin:lorebooks_lorebookentry_changelist")).status_code == 200


def test_an_operator_edit_merges_only_what_changed(admin_client, alice):
    import_world(alice)
    entry = entry_row(alice)
    view = alice.get("/v1/lorebooks/eldoria/entries/1").json()["entry"]
    assert save(admin_client, entry, view | {"content": "Varn drowns."}, loaded=1).status_code == 200
    entry.refresh_from_db()
    assert entry.revision == 2
    expected = world_info()
    expected["entries"]["1"]["content"] = "Varn drowns."
    assert alice.get("/v1/lorebooks/eldoria/export").json() == expected
    latest = LorebookEntryVersion.objects.get(entry=entry, revision=2)
    assert (latest.cause, latest.actor) == ("operator", "operator:admin")


@pytest.mark.parametrize(("fields", "loaded"), [({"selectiveLogic": 9}, 1), ({"content": "late"}, 0)])
def test_a_bad_or_stale_edit_saves_nothing(admin_client, alice, fields, loaded):
    import_world(alice)
    entry = entry_row(alice)
    page = save(admin_client, entry, fields, loaded=loaded).content.decode()
    assert ("Nothing saved" in page) if loaded == 0 else ("errorlist" in page)
    assert "was changed successfully" not in page
    entry.refresh_from_db()
    assert entry.revision == 1 and alice.get("/v1/lorebooks/eldoria/export").json() == world_info()

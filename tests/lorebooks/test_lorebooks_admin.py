"""The admin for lorebooks: inspect a book and its entries; an entry edit goes through the API's service."""

from __future__ import annotations

import json

import pytest
from django.contrib.admin.models import LogEntry
from django.contrib.messages import get_messages
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
    assert LogEntry.objects.get().object_id == str(entry.pk)  # a save that happened is in the history


@pytest.mark.parametrize(("fields", "loaded"), [({"selectiveLogic": 9}, 1), ({"content": "late"}, 0)])
def test_a_bad_or_stale_edit_is_a_form_error_and_saves_and_logs_nothing(admin_client, alice, fields, loaded):
    import_world(alice)
    entry = entry_row(alice)
    response = save(admin_client, entry, fields, loaded=loaded)
    page = response.content.decode()
    assert response.redirect_chain == [] and "errorlist" in page  # the form again, with its error
    assert ("changed while you edited it" in page) if loaded == 0 else True
    assert "was changed successfully" not in page
    entry.refresh_from_db()
    assert entry.revision == 1 and alice.get("/v1/lorebooks/eldoria/export").json() == world_info()
    assert not LogEntry.objects.exists()


def test_an_edit_after_an_api_edit_is_refused_and_not_in_the_admins_history(admin_client, alice):
    import_world(alice)
    entry = entry_row(alice)
    view = alice.get("/v1/lorebooks/eldoria/entries/1").json()["entry"]
    api = alice.patch("/v1/lorebooks/eldoria/entries/1", {"expectedRevision": 1, "entry": {"content": "api edit"}})
    assert api.status_code == 200
    response = save(admin_client, entry, view | {"content": "operator edit"}, loaded=1)
    assert response.redirect_chain == [] and "changed while you edited it" in response.content.decode()
    versions = alice.get("/v1/lorebooks/eldoria/entries/1/versions").json()["results"]
    assert [v["cause"] for v in versions] == ["api_key", "import"]
    assert not LogEntry.objects.exists()


def test_a_race_lost_after_the_form_check_is_reported_and_not_logged(admin_client, alice, monkeypatch):
    from lorebooks import admin as lorebook_admin

    monkeypatch.setattr(lorebook_admin.LorebookEntryForm, "clean", lambda self: self.cleaned_data)
    import_world(alice)
    entry = entry_row(alice)
    response = save(admin_client, entry, {"content": "late"}, loaded=0)
    messages = [str(m) for m in get_messages(response.wsgi_request)]
    assert any(m.startswith("Not saved:") for m in messages), messages
    entry.refresh_from_db()
    assert entry.revision == 1 and not LogEntry.objects.exists()

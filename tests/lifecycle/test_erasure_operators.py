"""Erasure by the operators: `manage.py erase_user` and the admin's 'Erase a user' with a confirmation page."""

from __future__ import annotations

import json
from io import StringIO

import pytest
from django.contrib.admin.models import ADDITION
from django.contrib.admin.utils import quote
from django.core.management import call_command
from django.test import Client

from memories.lifecycle.models import Erasure
from memories.models import Conversation, Turn
from tests.compact.support import create_scenario, eager_celery, play
from tests.factories import SuperuserFactory
from tests.support.admin import log_messages, staff_client

pytestmark = pytest.mark.django_db


@pytest.fixture(autouse=True)
def _eager(monkeypatch) -> None:
    eager_celery(monkeypatch)  # jobs run in-process at the commit (the real worker: test_erasure_worker.py)


def test_the_command_previews_then_erases_and_prints_the_receipt(alice) -> None:
    create_scenario(alice)
    play(alice, "hello", "hi", conv="/v1/users/ann-7q/conversations/c1")
    out = StringIO()
    call_command("erase_user", product=alice.product.pk, user="ann-7q", dry_run=True, stdout=out)
    preview = json.loads(out.getvalue())["wouldRemove"]
    assert preview["memories.Turn"] == 1 and Turn.objects.filter(user_id="ann-7q").exists()
    out = StringIO()
    call_command("erase_user", product=alice.product.pk, user="ann-7q", operator="dpo", stdout=out)
    receipt = json.loads(out.getvalue())
    assert receipt["status"] == "done" and receipt["counts"]["memories.Turn"] == 1
    assert not Turn.objects.filter(user_id="ann-7q").exists()
    assert Erasure.objects.get().requested_by == "operator:dpo"


# "era_40…" is what the admin would unquote to "era@…" if the redirect did not quote it (≈ 2 % of random ids)
@pytest.mark.parametrize("erasure_id", [None, "era_40" + "0" * 18, "era_2222" + "0" * 16])
def test_the_admin_shows_the_counts_before_erasing(
    alice, django_capture_on_commit_callbacks, monkeypatch, erasure_id
) -> None:
    if erasure_id:
        monkeypatch.setattr(Erasure._meta.get_field("id"), "_get_default", lambda: erasure_id)
    create_scenario(alice)
    play(alice, "hello", "hi", conv="/v1/users/ann-7q/conversations/c1")
    operator = Client()
    operator.force_login(SuperuserFactory(username="op"))
    assert "Erase a user" in operator.get("/admin/lifecycle/erasure/").content.decode()
    form = {"product": alice.product.pk, "user_id": "ann-7q", "conversation_id": ""}
    preview = operator.post("/admin/lifecycle/erasure/erase/", {**form, "preview": "1"})
    page = preview.content.decode()
    assert preview.status_code == 200 and "memories.Turn" in page and "Yes, erase" in page
    assert Conversation.objects.filter(user_id="ann-7q").exists()  # nothing erased by the preview
    with django_capture_on_commit_callbacks(execute=True):
        done = operator.post("/admin/lifecycle/erasure/erase/", {**form, "confirm": "1"})
    erasure = Erasure.objects.get()
    assert done.status_code == 302
    assert done["Location"].endswith(f"/admin/lifecycle/erasure/{quote(erasure.pk)}/change/")
    assert erasure.pk == (erasure_id or erasure.pk)
    assert erasure.status == "done" and erasure.requested_by == "operator:op"
    assert log_messages(erasure, ADDITION) == [f"Started the erasure {erasure.pk} (user)"]
    assert not Conversation.objects.filter(user_id="ann-7q").exists()
    shown = operator.get(done["Location"])
    assert shown.status_code == 200, (shown.status_code, shown.get("Location"))
    receipt = shown.content.decode()
    assert erasure.subject_hash in receipt and "ann-7q" not in receipt.replace("annotate", "")


@pytest.mark.parametrize("user_id", ["bad user id!", "x" * 129, "ann\n"])
def test_the_admin_refuses_an_id_the_api_refuses(alice, user_id) -> None:
    operator = Client()
    operator.force_login(SuperuserFactory(username="op"))
    form = {"product": alice.product.pk, "user_id": user_id, "conversation_id": "", "preview": "1"}
    page = operator.post("/admin/lifecycle/erasure/erase/", form)
    assert page.status_code == 200 and "Yes, erase" not in page.content.decode()
    assert not Erasure.objects.exists()


def test_erasing_needs_the_add_erasure_permission(alice) -> None:
    create_scenario(alice)
    play(alice, "hello", "hi", conv="/v1/users/ann-7q/conversations/c1")
    viewer = staff_client("lifecycle.view_erasure")
    form = {"product": alice.product.pk, "user_id": "ann-7q", "conversation_id": ""}
    assert viewer.get("/admin/lifecycle/erasure/erase/").status_code == 403
    assert viewer.post("/admin/lifecycle/erasure/erase/", {**form, "preview": "1"}).status_code == 403
    assert viewer.post("/admin/lifecycle/erasure/erase/", {**form, "confirm": "1"}).status_code == 403
    assert not Erasure.objects.exists() and Conversation.objects.filter(user_id="ann-7q").exists()

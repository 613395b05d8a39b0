"""The console and the admin in English and Simplified Chinese (LocaleMiddleware, compiled catalogue in locale/)."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest
from django.conf import settings
from django.urls import reverse
from django.utils import translation

from tests.browser.support import seed_product

pytestmark = pytest.mark.django_db


def build_script():
    path = Path(settings.BASE_DIR) / "scripts" / "build_zh_hans.py"
    spec = importlib.util.spec_from_file_location("build_zh_hans", path)
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_a_zh_hans_request_gets_the_dashboard_and_the_admin_in_chinese(admin_client):
    seed_product()
    page = admin_client.get(reverse("admin:index"), HTTP_ACCEPT_LANGUAGE="zh-hans").content.decode()
    assert '<html lang="zh-hans"' in page
    assert "各运行时的轮次" in page and "失败的任务" in page and "产品" in page  # the console's catalogue
    assert "站点管理" in page  # Django's own admin labels
    assert ">轮次</a>" in page and ">日记</a>" in page  # the apps' and models' names in the app list
    assert "Turns per runtime" not in page
    english = admin_client.get(reverse("admin:index"), HTTP_ACCEPT_LANGUAGE="en").content.decode()
    assert "Turns per runtime" in english and "各运行时的轮次" not in english


def test_the_language_switcher_keeps_the_choice(admin_client):
    response = admin_client.post(reverse("set_language"), {"language": "zh-hans", "next": "/admin/"})
    assert response.status_code == 302 and response.url == "/admin/"
    assert "站点管理" in admin_client.get("/admin/").content.decode()
    admin_client.post(reverse("set_language"), {"language": "en", "next": "/admin/"})
    assert "Site administration" in admin_client.get("/admin/").content.decode()


def test_the_api_stays_english_whatever_the_client_asks(alice, client):
    response = client.get("/v1/scenarios", HTTP_ACCEPT_LANGUAGE="zh-hans")
    assert response.status_code == 401 and "Content-Language" not in response.headers
    message = response.json()["error"]["message"]
    assert message.isascii(), message
    admin_page = client.get("/admin/login/", HTTP_ACCEPT_LANGUAGE="zh-hans")
    assert admin_page.headers["Content-Language"] == "zh-hans"
    assert client.get("/v1/scenarios", HTTP_ACCEPT_LANGUAGE="zh-hans").json()["error"]["message"] == message


def test_the_committed_catalogue_is_compiled_from_the_build_script():
    messages = build_script().MESSAGES
    with translation.override("zh-hans"):
        assert {k: translation.gettext(k) for k in messages} == messages


def test_an_action_page_speaks_chinese_too(admin_client):
    turn = seed_product().turns[0]  # its diary job is still pending here (nothing ran the outbox row)
    url = reverse("console:rerun", args=[turn.pk, "diaries"])
    page = admin_client.get(url, HTTP_ACCEPT_LANGUAGE="zh-hans").content.decode()
    assert "重新运行失败的任务" in page and f"轮次 {turn.pk} 的 diaries 任务状态为 pending，并未失败" in page

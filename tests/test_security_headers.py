"""Production hardening (docs/production.md#https-headers-and-metrics): HSTS, Secure cookies, the proxy's HTTPS
header and trusted origins from the environment, a Content-Security-Policy on the admin and console that their
pages honour (no inline script or handler), and /metrics behind a token or an address allow-list."""

from __future__ import annotations

import re
import subprocess
import sys
from html.parser import HTMLParser
from ipaddress import ip_network

import pytest
from django.conf import settings as django_settings
from django.test import Client

from memories.models import Conversation, Turn
from tests.browser.support import seed_product
from tests.factories import SuperuserFactory

HOST = "memoryhub.example.com"
PROBE = (
    "import django, json; from django.conf import settings as s; django.setup(); print(json.dumps([s.PUBLIC, "
    "s.SECURE_HSTS_SECONDS, s.SESSION_COOKIE_SECURE, s.CSRF_COOKIE_SECURE, s.SECURE_PROXY_SSL_HEADER, "
    "s.CSRF_TRUSTED_ORIGINS, [str(n) for n in s.METRICS_ALLOWED_NETWORKS], s.METRICS_TOKEN]))"
)


def settings_of(tmp_path, **environ: str) -> list:
    import json
    import os

    keep = {k: v for k, v in os.environ.items() if k in {"PATH", "HOME", "LANG", "PYTHONPATH"}}
    env = {**keep, "DJANGO_SETTINGS_MODULE": "memoryhub.settings", "MEMORYHUB_VAR_DIR": str(tmp_path)}
    result = subprocess.run(
        [sys.executable, "-c", PROBE],
        cwd=django_settings.BASE_DIR,
        env={**env, "SECRET_KEY": "probe", **environ},
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout)


# --- settings from the environment ----------------------------------------------------------------------------


def test_local_hosts_keep_the_plain_http_defaults(tmp_path):
    assert settings_of(tmp_path) == [False, 0, False, False, None, [], ["0.0.0.0/0", "::/0"], None]


def test_a_public_host_gets_hsts_secure_cookies_and_loopback_only_metrics(tmp_path):
    public = settings_of(tmp_path, ALLOWED_HOSTS=f"{HOST},127.0.0.1")
    assert public == [True, 31_536_000, True, True, None, [], ["127.0.0.0/8", "::1/128"], None]


def test_every_hardening_setting_can_be_set(tmp_path):
    chosen = settings_of(
        tmp_path,
        ALLOWED_HOSTS=HOST,
        SECURE_HSTS_SECONDS="600",
        SESSION_COOKIE_SECURE="0",
        CSRF_COOKIE_SECURE="0",
        SECURE_PROXY_SSL_HEADER="X-Forwarded-Proto",
        CSRF_TRUSTED_ORIGINS=f"https://{HOST}",
        METRICS_ALLOWED_NETWORKS="10.0.0.0/8,192.168.1.7",
        METRICS_TOKEN="scrape-me",
    )
    assert chosen == [
        True,
        600,
        False,
        False,
        ["HTTP_X_FORWARDED_PROTO", "https"],
        [f"https://{HOST}"],
        ["10.0.0.0/8", "192.168.1.7/32"],
        "scrape-me",
    ]


@pytest.mark.parametrize(
    "name, value",
    [("CSRF_TRUSTED_ORIGINS", HOST), ("METRICS_ALLOWED_NETWORKS", "not-a-network"), ("SECURE_PROXY_SSL_HEADER", "a b")],
)
def test_a_malformed_hardening_setting_refuses_to_start(tmp_path, name, value):
    import os

    env = {k: v for k, v in os.environ.items() if k in {"PATH", "HOME", "LANG"}}
    env |= {"DJANGO_SETTINGS_MODULE": "memoryhub.settings", "MEMORYHUB_VAR_DIR": str(tmp_path), "SECRET_KEY": "x"}
    result = subprocess.run(
        [sys.executable, "-c", PROBE],
        cwd=django_settings.BASE_DIR,
        env={**env, name: value},
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert result.returncode != 0 and "ImproperlyConfigured" in result.stderr and name in result.stderr


# --- the settings at work, through HTTP ------------------------------------------------------------------------


@pytest.fixture
def public(settings):
    settings.ALLOWED_HOSTS = [HOST]
    settings.SECURE_HSTS_SECONDS = 31_536_000
    settings.SESSION_COOKIE_SECURE = settings.CSRF_COOKIE_SECURE = True
    return settings


@pytest.mark.django_db
def test_admin_login_behind_a_tls_load_balancer_needs_the_proxy_header(public):
    """The load balancer speaks HTTPS to the browser and HTTP to memoryhub: without SECURE_PROXY_SSL_HEADER the
    browser's Origin (https://…) does not match the request (http://…) and the login is 403."""
    SuperuserFactory(username="ops", password="pw")
    forwarded = {"HTTP_HOST": HOST, "HTTP_X_FORWARDED_PROTO": "https", "HTTP_ORIGIN": f"https://{HOST}"}

    def log_in():
        client = Client(enforce_csrf_checks=True)
        page = client.get("/admin/login/", **forwarded)
        token = re.search(r'name="csrfmiddlewaretoken" value="([^"]+)"', page.content.decode()).group(1)
        body = {"username": "ops", "password": "pw", "csrfmiddlewaretoken": token, "next": "/admin/"}
        return client.post("/admin/login/?next=/admin/", body, **forwarded)

    assert log_in().status_code == 403
    public.SECURE_PROXY_SSL_HEADER = ("HTTP_X_FORWARDED_PROTO", "https")
    answer = log_in()
    assert answer.status_code == 302 and answer["Location"] == "/admin/"
    assert answer.cookies["sessionid"]["secure"] and answer.cookies["sessionid"]["httponly"]
    assert answer["Strict-Transport-Security"] == "max-age=31536000"


@pytest.mark.django_db
def test_trusted_origins_admit_the_admin_login_from_another_origin(public):
    SuperuserFactory(username="ops", password="pw")
    public.SECURE_PROXY_SSL_HEADER = ("HTTP_X_FORWARDED_PROTO", "https")
    public.CSRF_TRUSTED_ORIGINS = ["https://ops.example.com"]
    client = Client(enforce_csrf_checks=True)
    forwarded = {"HTTP_HOST": HOST, "HTTP_X_FORWARDED_PROTO": "https"}
    page = client.get("/admin/login/", **forwarded)
    token = re.search(r'name="csrfmiddlewaretoken" value="([^"]+)"', page.content.decode()).group(1)
    body = {"username": "ops", "password": "pw", "csrfmiddlewaretoken": token}
    post = client.post("/admin/login/", body, HTTP_ORIGIN="https://ops.example.com", **forwarded)
    assert post.status_code == 302
    other = Client(enforce_csrf_checks=True)
    other.get("/admin/login/", **forwarded)
    refused = other.post("/admin/login/", body, HTTP_ORIGIN="https://evil.example.com", **forwarded)
    assert refused.status_code == 403


# --- the admin and console's Content-Security-Policy ----------------------------------------------------------


class InlineCode(HTMLParser):
    """What `script-src 'self'` blocks: inline <script> bodies, on…= handlers and javascript: URLs."""

    def __init__(self) -> None:
        super().__init__()
        self.found: list[str] = []
        self._script_without_src = False

    def handle_starttag(self, tag, attrs):
        named = dict(attrs)
        self._script_without_src = tag == "script" and "src" not in named
        for name, value in attrs:
            if name.startswith("on") or (value or "").strip().lower().startswith("javascript:"):
                self.found.append(f"<{tag} {name}={value!r}>")

    def handle_data(self, data):
        if self._script_without_src and data.strip():
            self.found.append(f"<script>{data.strip()[:60]}…")

    def handle_endtag(self, tag):
        if tag == "script":
            self._script_without_src = False


def admin_pages(client: Client) -> list[str]:
    """The index, every changelist and add page it links to, and the console's pages of one seeded product."""
    index = client.get("/admin/").content.decode()
    links = sorted(set(re.findall(r'href="(/admin/[a-z_]+/[a-z_]+/(?:add/)?)"', index)))
    turn = Turn.objects.order_by("pk").first()
    conversation = Conversation.objects.get(product_id=turn.product_id, conversation_id=turn.conversation_id)
    console = [f"/admin/?product={turn.product_id}", f"/admin/console/turns/{turn.pk}/"]
    console += [f"/admin/console/conversations/{conversation.pk}/timeline/", f"/admin/memories/turn/{turn.pk}/change/"]
    return ["/admin/", *links, *console]


@pytest.mark.django_db
def test_the_admin_and_console_send_a_csp_their_pages_honour(client):
    seed_product()
    client.force_login(SuperuserFactory())
    pages = admin_pages(client)
    assert len(pages) > 10 and "/admin/memories/product/" in pages
    for path in pages:
        response = client.get(path)
        assert response.status_code == 200, path
        assert response["Content-Security-Policy"] == django_settings.CONTENT_SECURITY_POLICY, path
        assert "script-src 'self'" in response["Content-Security-Policy"]
        parser = InlineCode()
        parser.feed(response.content.decode())
        assert parser.found == [], (path, parser.found)
    switcher = client.get("/admin/").content.decode()
    assert "console/autosubmit.js" in switcher and "data-autosubmit" in switcher
    assert client.get("/static/console/autosubmit.js").status_code == 200


@pytest.mark.django_db
def test_the_api_sends_no_csp(alice, settings):
    assert "Content-Security-Policy" not in alice.get("/v1/users/u1/conversations/c1/memory")
    settings.CONTENT_SECURITY_POLICY = ""
    assert "Content-Security-Policy" not in Client().get("/admin/login/")


# --- /metrics ---------------------------------------------------------------------------------------------------


def test_metrics_are_open_by_default_on_a_local_host(client):
    assert client.get("/metrics", REMOTE_ADDR="203.0.113.9").status_code == 200


def test_metrics_need_the_token_or_an_allowed_address(client, settings):
    settings.METRICS_TOKEN = "scrape-me"
    settings.METRICS_ALLOWED_NETWORKS = [ip_network("10.0.0.0/8")]
    refused = client.get("/metrics", REMOTE_ADDR="203.0.113.9")
    assert refused.status_code == 401 and refused["WWW-Authenticate"] == "Bearer"
    assert refused.json()["error"]["code"] == "unauthenticated" and b"memoryhub_" not in refused.content
    wrong = client.get("/metrics", REMOTE_ADDR="203.0.113.9", HTTP_AUTHORIZATION="Bearer scrape-you")
    assert wrong.status_code == 401
    assert client.get("/metrics", REMOTE_ADDR="203.0.113.9", HTTP_AUTHORIZATION="Bearer scrape-me").status_code == 200
    assert client.get("/metrics", REMOTE_ADDR="10.1.2.3").status_code == 200
    forwarded = client.get("/metrics", REMOTE_ADDR="203.0.113.9", HTTP_X_FORWARDED_FOR="10.1.2.3")
    assert forwarded.status_code == 401  # the TCP peer decides, never a header the client writes

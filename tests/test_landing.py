"""The landing page at `/`: HTML for a browser, JSON on request; the admin's "View site" goes there."""

from __future__ import annotations

import pytest
from django.conf import settings
from django.test import Client

from memoryhub import __version__
from tests.support.api import assert_envelope


def test_a_browser_gets_html_with_the_links_and_the_version(client):
    response = client.get("/", HTTP_ACCEPT="text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8")
    assert response.status_code == 200 and response["Content-Type"].startswith("text/html")
    page = response.content.decode()
    for link in ("/api/docs/", "/admin/", "/readyz", "#first-session"):
        assert f'{link}"' in page, link
    assert f"version {__version__}" in page and "gives AI chat, role-play and agent products" in page
    # the README's first session, read from README.md
    assert 'id="first-session"' in page and "expectedRevision" in page


def test_the_first_session_is_rendered_from_markdown_not_shown_raw(client):
    page = client.get("/", HTTP_ACCEPT="text/html").content.decode()
    session = page[page.index('id="first-session"') :]
    assert '<pre><code class="language-sh">' in session  # the README's fenced commands
    assert "<p>" in session and "<code>" in session
    assert "```" not in session and "\n## " not in session


def test_plain_curl_gets_html_and_accept_json_gets_json(client):
    assert client.get("/").headers["Content-Type"].startswith("text/html")  # no Accept header
    body = client.get("/", HTTP_ACCEPT="application/json").json()
    assert body["name"] == "memoryhub" and body["version"] == __version__
    assert body["links"] == {
        "apiDocs": "http://testserver/api/docs/",
        "openapi": "http://testserver/api/schema/",
        "admin": "http://testserver/admin/",
        "readyz": "http://testserver/readyz",
        "firstSession": "http://testserver/#first-session",
    }
    assert "memory and state" in body["description"]


def test_one_version_everywhere(client):
    assert settings.SPECTACULAR_SETTINGS["VERSION"] == __version__
    assert f"version: {__version__}" in client.get("/api/schema/").content.decode()


def test_only_get_and_head(client):
    assert client.head("/").status_code == 200
    assert client.post("/").status_code == 405


@pytest.mark.django_db
def test_the_admins_view_site_link_goes_to_the_landing_page(admin_client):
    page = admin_client.get("/admin/").content.decode()
    assert '<a href="/">View site</a>' in page
    assert admin_client.get("/").status_code == 200


@pytest.mark.parametrize("path", ["/", "/healthz", "/readyz", "/metrics"])
@pytest.mark.parametrize("method", ["post", "put", "patch", "delete"])
def test_a_method_other_than_get_is_the_json_405_not_a_csrf_page(path, method):
    """docs/contract.md, "The error envelope": every error is JSON (CSRF would answer its HTML page to a POST)."""
    response = getattr(Client(enforce_csrf_checks=True), method)(path)
    assert_envelope(response, 405, "method_not_allowed")
    assert response["Allow"] == "GET, HEAD"


@pytest.mark.parametrize("path", ["/api/schema/", "/api/docs/"])
def test_the_schema_and_its_page_answer_errors_in_the_json_envelope(client, path):
    """Their own renderers are YAML and HTML: a 405 was a YAML envelope or a bare HTML page."""
    assert_envelope(client.post(path), 405, "method_not_allowed")
    assert_envelope(client.get(path, HTTP_ACCEPT="application/xml"), 406, "not_acceptable")
    page = client.get(path)
    assert page.status_code == 200 and not page["Content-Type"].startswith("application/json")


def test_the_first_session_names_the_address_that_served_the_page(client):
    """A server on another port (or host) gets commands that reach it, not 127.0.0.1:8000."""
    page = client.get("/", HTTP_HOST="127.0.0.1:8103").content.decode()
    assert "http://127.0.0.1:8103/v1/users/alice" in page and "127.0.0.1:8000" not in page

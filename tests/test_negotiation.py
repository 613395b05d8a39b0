"""The negotiation shortcut answers exactly what DRF's own negotiation answers."""

from __future__ import annotations

import pytest
from django.http import Http404
from rest_framework.exceptions import NotAcceptable
from rest_framework.negotiation import DefaultContentNegotiation
from rest_framework.renderers import BrowsableAPIRenderer, JSONRenderer, StaticHTMLRenderer
from rest_framework.request import Request
from rest_framework.test import APIRequestFactory

from memoryhub.api.negotiation import JSONFirstContentNegotiation

ACCEPTS = [None, "", "*/*", " application/json ", "application/json", "application/json; indent=4", "text/html",
           "application/*", "*/*;q=0.1, text/html", "application/xml", "text/html, */*"]  # fmt: skip
RENDERER_LISTS = [
    [JSONRenderer()],
    [JSONRenderer(), BrowsableAPIRenderer()],
    [BrowsableAPIRenderer(), JSONRenderer()],
    [StaticHTMLRenderer()],
]


def outcome(negotiation, accept, renderers, path="/x", format_suffix=None):
    headers = {} if accept is None else {"HTTP_ACCEPT": accept}
    request = Request(APIRequestFactory().get(path, **headers))
    try:
        renderer, media_type = negotiation.select_renderer(request, renderers, format_suffix)
    except NotAcceptable:
        return "406"
    except Http404:  # DRF's answer to a format no renderer has
        return "404"
    return type(renderer), media_type


@pytest.mark.parametrize("accept", ACCEPTS)
@pytest.mark.parametrize("renderers", RENDERER_LISTS, ids=lambda r: "+".join(type(x).__name__ for x in r))
def test_the_shortcut_agrees_with_drf(accept, renderers):
    ours, drf = JSONFirstContentNegotiation(), DefaultContentNegotiation()
    assert outcome(ours, accept, renderers) == outcome(drf, accept, renderers)
    for variant in ({"path": "/x?format=api"}, {"format_suffix": "api"}):
        assert outcome(ours, accept, renderers, **variant) == outcome(drf, accept, renderers, **variant)


def test_the_api_answers_json_to_clients_that_ask_for_it_or_for_anything(alice):
    for accept in (None, "*/*", "application/json"):
        headers = {} if accept is None else {"HTTP_ACCEPT": accept}
        response = alice.get("/v1/users/u1/conversations/c1/memory", **headers)
        assert response.status_code == 200 and response["Content-Type"] == "application/json"
    assert alice.get("/v1/users/u1/conversations/c1/memory", HTTP_ACCEPT="text/html").status_code == 406


def test_a_format_query_parameter_is_ignored_by_the_api(alice):
    """Answers are JSON only: `?format=api` (DRF's renderer override) neither hides a resource nor renders HTML."""
    url = "/v1/users/u1/conversations/c1/memory"
    assert alice.put(url, {"expectedRevision": 0, "memory": {"a": 1}}).status_code == 200
    for value in ("api", "json", "html", "worldinfo"):
        response = alice.get(f"{url}?format={value}")
        assert response.status_code == 200 and response["Content-Type"] == "application/json", value
        assert response.json() == {"revision": 1, "memory": {"a": 1}}


def test_the_openapi_document_still_reads_its_format(client):
    assert client.get("/api/schema/?format=json")["Content-Type"].startswith("application/vnd.oai.openapi+json")
    assert client.get("/api/schema/")["Content-Type"].startswith("application/vnd.oai.openapi")

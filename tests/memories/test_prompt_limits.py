"""Prompt amplification: a template's size and placeholder count are capped when saved, the rendered prompt's
size before it is built, and the inspector and the admin show a very large stored prompt cut."""

from __future__ import annotations

import time

import pytest
from django.conf import settings
from django.urls import reverse

from memories.models import Scenario, Turn
from tests.factories import SuperuserFactory, TurnFactory
from tests.support.api import assert_envelope
from tests.support.scenarios import create, refused, scenario

CONV = "/v1/users/u1/conversations/c1"
MESSAGE = "m" * 100_000  # the longest userMessage a prepare accepts


def _prepare(api, message: str = MESSAGE):
    return api.post(f"{CONV}/turns", {"scenarioId": "gate", "userMessage": message})


# --- the template, when saved ----------------------------------------------------------------------------


def test_a_template_repeating_a_placeholder_past_the_cap_is_400(alice):
    fields = refused(alice, scenario(template="{{userMessage}}" * 3000))  # the review's template
    assert fields["template"] == f"3000 placeholders; the limit is {settings.TEMPLATE_MAX_PLACEHOLDERS}"


def test_a_template_over_the_size_cap_is_400(alice):
    fields = refused(alice, scenario(template="x" * (settings.TEMPLATE_MAX_CHARS + 1)))
    assert fields["template"] == f"longer than {settings.TEMPLATE_MAX_CHARS} characters"


def test_a_template_at_the_caps_is_accepted(alice):
    uses = settings.TEMPLATE_MAX_PLACEHOLDERS
    template = "{{userMessage}}" * uses
    template += "x" * (settings.TEMPLATE_MAX_CHARS - len(template))
    assert create(alice, scenario(template=template))["template"] == template


def test_the_caps_follow_the_settings(alice, settings):
    settings.TEMPLATE_MAX_PLACEHOLDERS = 2
    fields = refused(alice, scenario(template="{{userMessage}} {{jsonMemory}} {{userMessage}}"))
    assert fields["template"] == "3 placeholders; the limit is 2"


# --- the rendered prompt, before it is built ------------------------------------------------------------


def test_a_prompt_over_the_cap_is_413_before_it_is_built_and_stores_nothing(alice):
    # 100 placeholders are allowed; with the longest message they would render 10,000,000 characters.
    create(alice, scenario(template="{{userMessage}}" * 100))
    started = time.monotonic()
    error = assert_envelope(_prepare(alice), 413, "prompt_too_large")
    assert time.monotonic() - started < 5
    assert error["details"] == {"characters": 10_000_000, "limit": settings.PROMPT_MAX_CHARS}
    assert not Turn.objects.exists()
    assert _prepare(alice, "short").status_code == 201  # the same scenario renders a normal message


def test_a_template_stored_before_the_caps_is_still_bounded_at_prepare(alice):
    create(alice, scenario(template="{{userMessage}}"))
    Scenario.objects.filter(product=alice.product, slug="gate").update(template="{{userMessage}}" * 3000)
    assert_envelope(_prepare(alice), 413, "prompt_too_large")
    assert not Turn.objects.exists()


def test_a_prompt_at_the_cap_is_prepared(alice, settings):
    settings.PROMPT_MAX_CHARS = 200_000
    create(alice, scenario(template="{{userMessage}}{{userMessage}}"))
    response = _prepare(alice)
    assert response.status_code == 201, response.json()
    assert len(response.json()["prompt"]) == 200_000
    settings.PROMPT_MAX_CHARS = 199_999
    assert_envelope(_prepare(alice), 413, "prompt_too_large")


# --- showing a very large stored prompt -----------------------------------------------------------------


@pytest.fixture
def huge_turn(db):
    limit = settings.INSPECTOR_PROMPT_MAX_CHARS
    return TurnFactory(prompt="p" * limit + "TAIL" + "q" * 1000)


def test_the_inspector_shows_a_very_large_prompt_cut(client, huge_turn):
    client.force_login(SuperuserFactory())
    page = client.get(reverse("console:turn-inspector", args=[huge_turn.pk])).content.decode()
    limit = settings.INSPECTOR_PROMPT_MAX_CHARS
    assert 'id="prompt-clipped"' in page and f"Only the first {limit} of {limit + 1004} characters" in page
    assert "TAIL" not in page and len(page) < 4 * limit  # the raw prompt and the spans: once each, cut


def test_the_admin_shows_a_very_large_prompt_cut(client, huge_turn):
    client.force_login(SuperuserFactory())
    page = client.get(reverse("admin:memories_turn_change", args=[huge_turn.pk])).content.decode()
    assert "1004 more characters not shown" in page and "TAIL" not in page

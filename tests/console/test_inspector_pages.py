"""The inspector, timeline and artefact pages through Django's test client: admin login, permissions,
product scoping, escaping of user content, and the artefact selectors' version choice."""

from __future__ import annotations

import re

import pytest
from django.contrib.auth.models import Permission, User
from django.urls import reverse

from diaries.models import DiaryEntry
from memories.console.artefacts import document_artefact, table_artefact
from memories.models import MemoryDocument
from memories.state.models import ConversationState
from memories.story.models import StorySnapshot
from memoryhub.errors import NotFound
from tables.models import MemoryTable
from tests.console.inspector_data import XSS, seed_conversation
from tests.factories import ProductFactory, SuperuserFactory, TurnFactory


@pytest.fixture
def story(transactional_db):
    return seed_conversation()


def _pages(story) -> list[str]:
    table = MemoryTable.objects.get(product=story.product, name="时空表格")
    return [
        *(reverse("console:turn-inspector", args=[t.pk]) for t in story.turns),
        reverse("console:conversation-timeline", args=[story.conversation.pk]),
        reverse("console:conversation-timeline", args=[story.conversation.pk]) + "?until=1",
        reverse("console:artefact", args=["tables", table.pk]) + "?from=1&to=3",
        reverse("console:artefact", args=["documents", MemoryDocument.objects.get(product=story.product).pk]),
        reverse("console:artefact", args=["state", ConversationState.objects.get(product=story.product).pk]),
        reverse("console:artefact", args=["story", StorySnapshot.objects.get(product=story.product).pk]),
        reverse("console:artefact", args=["diaries", DiaryEntry.objects.get(product=story.product).pk]),
    ]


def test_every_page_renders_for_an_operator_and_user_content_is_escaped(story, client):
    client.force_login(SuperuserFactory())
    for url in _pages(story):
        response = client.get(url)
        assert response.status_code == 200, url
        html = response.content.decode()
        assert XSS not in html and "<b><img" not in html, url  # user content is text, never markup
    timeline = client.get(reverse("console:conversation-timeline", args=[story.conversation.pk])).content.decode()
    message_pages = re.findall(r'href="(/admin/memories/message/\d+/change/)"', timeline)
    assert len(message_pages) == 8 and client.get(message_pages[0]).status_code == 200
    inspector = client.get(_pages(story)[1]).content.decode()
    assert "&lt;img src=x onerror=&quot;window.__xss=1&quot;&gt;" in inspector
    assert 'data-variable="memoryTable"' in inspector and 'class="mh-var' in inspector


def test_pages_need_the_admin_login_and_the_models_view_permission(story, client):
    url = reverse("console:turn-inspector", args=[story.turns[0].pk])
    response = client.get(url)
    assert response.status_code == 302 and "/admin/login/" in response["Location"]

    staff = User.objects.create_user("staff", password="pw", is_staff=True)
    client.force_login(staff)
    assert client.get(url).status_code == 403
    staff.user_permissions.add(Permission.objects.get(codename="view_turn"))
    staff = User.objects.get(pk=staff.pk)  # permissions are cached on the instance
    client.force_login(staff)
    assert client.get(url).status_code == 200


def test_another_products_object_is_404_when_the_product_is_pinned(story, client):
    client.force_login(SuperuserFactory())
    other = ProductFactory()
    for url in _pages(story):
        assert client.get(url, {"product": other.pk}).status_code == 404, url
        assert client.get(url, {"product": story.product.pk}).status_code == 200, url
    assert client.get(reverse("console:turn-inspector", args=[10**9])).status_code == 404
    table = MemoryTable.objects.get(product=story.product, name="时空表格")
    assert client.get(reverse("console:artefact", args=["tables", table.pk]), {"to": "99"}).status_code == 404
    assert client.get(reverse("console:artefact", args=["tables", table.pk]), {"to": "x"}).status_code == 404


def test_artefacts_compare_the_newest_version_with_the_one_before_by_default(story):
    table = MemoryTable.objects.get(product=story.product, name="时空表格")
    latest = table_artefact(product=story.product, table_id=table.pk)
    assert (latest.old.number, latest.new.number) == (2, 3)
    assert [v.number for v in latest.versions] == [3, 2, 1]
    assert latest.versions[0].turn_id == story.turns[1].pk
    first = table_artefact(product=story.product, table_id=table.pk, new=1)
    assert first.old is None and first.diff.rows == []
    with pytest.raises(NotFound):
        table_artefact(product=ProductFactory(), table_id=table.pk)

    document = MemoryDocument.objects.get(product=story.product)
    diff = document_artefact(product=story.product, document_id=document.pk)
    [section] = diff.sections
    assert (diff.old.number, diff.new.number) == (1, 2) and section.changed
    assert any("港口" in line.text for line in section.lines if line.kind == "removed")


def test_the_pages_speak_simplified_chinese_when_the_operator_asks(story, client):
    client.force_login(SuperuserFactory())
    url = reverse("console:turn-inspector", args=[story.turns[1].pk])
    html = client.get(url, HTTP_ACCEPT_LANGUAGE="zh-hans").content.decode()
    assert "模型看到的内容" in html and "未被引用的变量" in html and "与上一轮比较" in html
    timeline = reverse("console:conversation-timeline", args=[story.conversation.pk])
    assert "第 2 轮" in client.get(timeline, HTTP_ACCEPT_LANGUAGE="zh-hans").content.decode()
    assert "What the model saw" in client.get(url, HTTP_ACCEPT_LANGUAGE="en").content.decode()


@pytest.mark.django_db
def test_a_turn_of_a_deleted_scenario_shows_its_prompt_whole_and_its_runtime_state(client):
    turn = TurnFactory(prompt="<i>kept</i>", runtime_state={"hinos": {"claimId": "<b>c1</b>"}})
    turn.scenario.delete()
    client.force_login(SuperuserFactory())
    html = client.get(reverse("console:turn-inspector", args=[turn.pk])).content.decode()
    assert 'id="prompt-problem"' in html and "the scenario was deleted" in html
    assert "&lt;i&gt;kept&lt;/i&gt;" in html and "<i>kept</i>" not in html
    assert 'id="runtime-state"' in html and "&lt;b&gt;c1&lt;/b&gt;" in html


def test_the_admin_lists_link_each_artefact_to_its_console_page(story, client):
    client.force_login(SuperuserFactory())
    lists = {
        "tables_memorytable": ("console:artefact", "tables"),
        "memories_memorydocument": ("console:artefact", "documents"),
        "state_conversationstate": ("console:artefact", "state"),
        "story_storysnapshot": ("console:artefact", "story"),
        "diaries_diaryentry": ("console:artefact", "diaries"),
        "memories_conversation": ("console:conversation-timeline",),
        "memories_turn": ("console:turn-inspector",),
    }
    for changelist, (page, *kind) in lists.items():
        html = client.get(reverse(f"admin:{changelist}_changelist")).content.decode()
        prefix = reverse(page, args=[*kind, 1]).rsplit("/1/", 1)[0]
        assert f'href="{prefix}/' in html, changelist


def test_a_version_that_is_not_an_ascii_number_is_not_found(story, client):
    client.force_login(SuperuserFactory())
    timeline = reverse("console:conversation-timeline", args=[story.conversation.pk])
    for bad in ("x", "³", "9" * 30):  # "³" passes str.isdigit() but not int(); 30 digits pass no column
        assert client.get(f"{timeline}?until={bad}").status_code == 404


def test_every_artefact_page_is_one_row_of_one_table_driven_view(story, client):
    from memories.console import inspector_urls, inspector_views

    assert [p.name for p in inspector_urls.urlpatterns] == ["turn-inspector", "conversation-timeline", "artefact"]
    assert set(inspector_views.ARTEFACTS) == {"tables", "documents", "state", "story", "diaries"}
    client.force_login(SuperuserFactory())
    table = MemoryTable.objects.get(product=story.product, name="时空表格")
    assert client.get(reverse("console:artefact", args=["tables", table.pk])).status_code == 200
    assert client.get(reverse("console:artefact", args=["no-such-kind", table.pk])).status_code == 404

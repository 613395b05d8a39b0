"""The dashboard in a real browser: log in, read a figure, follow it to its list, switch to Chinese, re-run a
failed job and re-send a failed Hinos commit through their confirmation pages. Each step saves a screenshot
into SCREENSHOTS (docs/console/ when asked: shown by docs/console.md and the README)."""

from __future__ import annotations

from memories.models import Event, Turn
from memoryhub import turn_jobs
from memoryhub.outbox.models import OutboxMessage
from tests.browser.support import SCREENSHOTS, failed_job_turn, jobs_in_process
from tests.hinos.support import COMMIT, PREPARE, PREPARED
from tests.support.http_server import Reply


def figure(page, section: str, label: str):
    return page.locator(f"#figures-{section} a.figure", has_text=label)


def test_a_figure_leads_to_the_list_of_its_rows(admin_page, live_server, seeded, shot):
    failed_job_turn(seeded, "tables")  # a fourth turn, whose table job failed
    refused = {"kind": "preference", "content": {"language": "zh"}, "evidence": "中文", "source": "中文"}
    refused["consent"] = False
    assert seeded.api.post("/v1/users/u1/memories", refused).status_code == 422
    assert seeded.api.post("/v1/users/u1/memories/search", {"query": "灯塔", "mode": "keyword"}).status_code == 200
    page = admin_page
    page.goto(f"{live_server.url}/admin/?product={seeded.product.pk}")
    runtime = figure(page, "turns", "axon_go")
    assert runtime.locator(".value").inner_text() == "4"
    assert figure(page, "table-jobs", "failed").locator(".value").inner_text() == "1"
    assert figure(page, "refusals", "no_consent").locator(".value").inner_text() == "1"
    assert int(figure(page, "search", "searches measured").locator(".value").inner_text()) >= 1
    assert page.locator("#failed-jobs tr", has_text="tables").get_by_text("Re-run…").is_visible()
    assert page.locator("#product-switcher option:checked").inner_text().startswith("lighthouse-app")
    shot(page, "dashboard")
    page.locator("#console-dashboard").screenshot(path=str(SCREENSHOTS / "dashboard-figures.png"))  # the README's
    runtime.click()
    page.wait_for_url("**/admin/memories/turn/**")
    assert page.locator("#result_list tbody tr").count() == 4
    assert "axon_go" in page.locator("#changelist-filter").inner_text()
    shot(page, "dashboard-figure-list")


def test_switching_to_chinese_shows_the_console_in_chinese(admin_page, live_server, seeded, shot):
    page = admin_page
    page.goto(f"{live_server.url}/admin/?product={seeded.product.pk}")
    with page.expect_navigation():
        page.select_option("#language-switcher select", "zh-hans")
    assert page.locator("html").get_attribute("lang") == "zh-hans"
    assert page.locator("#figures-turns h2").inner_text() == "各运行时的轮次"
    assert "站点管理" in page.content()
    shot(page, "zh-dashboard")
    with page.expect_navigation():
        page.select_option("#language-switcher select", "en")
    assert page.locator("#figures-turns h2").inner_text() == "Turns per runtime"


def test_rerun_of_a_failed_diary_job_with_its_confirmation(admin_page, live_server, seeded, shot):
    turn = failed_job_turn(seeded, "diaries")
    page = admin_page
    page.goto(f"{live_server.url}/admin/?product={seeded.product.pk}")
    assert figure(page, "diary-jobs", "failed").locator(".value").inner_text() == "1"
    row = page.locator("#failed-jobs tr", has_text=f"{turn.pk} · u1/c1")
    row.get_by_text("Re-run…").click()
    page.wait_for_url(f"**/admin/console/actions/rerun/{turn.pk}/diaries/")
    shot(page, "actions-rerun-confirm")
    with jobs_in_process():  # the live server runs the outbox row in-process, broker or not
        page.get_by_role("button", name="Yes, I’m sure").click()
        page.wait_for_url("**/admin/?product=*")
    assert "is scheduled again (re-run 1)" in page.locator(".messagelist").inner_text()
    assert figure(page, "diary-jobs", "failed").locator(".value").inner_text() == "0"
    shot(page, "actions-rerun-done")
    assert Turn.objects.get(pk=turn.pk).memory_write["work"]["diaries"] == "done"
    assert OutboxMessage.objects.filter(dedup_key=turn_jobs.dedup_key("diaries", turn.pk, "rerun-1")).count() == 1


def test_resend_of_a_failed_hinos_commit_with_its_confirmation(
    admin_page, live_server, alice, stub_server, settings, shot
):
    settings.HINOS_MEMORY_URL = stub_server.url
    stub_server.route("POST", PREPARE, Reply(200, PREPARED))
    stub_server.route("POST", COMMIT, Reply(200, {"committed": False}))
    scenario = {
        "id": "gate",
        "name": "City gate",
        "memoryRuntime": "hinos",
        "template": "{{hinosMemory}} {{userMessage}}",
        "memorySources": [{"id": "external-memory", "agentRef": "hinos", "variable": "hinosMemory"}],
    }
    assert alice.post("/v1/scenarios", scenario).status_code == 201
    conv = "/v1/users/u1/conversations/c1"
    turn_id = alice.post(f"{conv}/turns", {"scenarioId": "gate", "userMessage": "我答应明天归还铜钥匙"}).json()[
        "turnId"
    ]
    alice.post(f"{conv}/turns/{turn_id}/complete", {"assistantMessage": "守卫点头"})

    page = admin_page
    page.goto(f"{live_server.url}/admin/?product={alice.product.pk}")
    assert figure(page, "hinos", "awaiting a re-send").locator(".value").inner_text() == "1"
    page.locator("#failed-jobs tr", has_text="Hinos commit").get_by_text("Re-send…").click()
    page.wait_for_url("**/admin/console/actions/resend/*/")
    assert "claim-1" in page.locator("#content-main").inner_text()
    stub_server.route("POST", COMMIT, Reply(200, {"committed": True}))
    page.get_by_role("button", name="Yes, I’m sure").click()
    page.wait_for_url("**/admin/?product=*")
    assert "acknowledged the re-sent commit" in page.locator(".messagelist").inner_text()
    assert figure(page, "hinos", "acknowledged since").locator(".value").inner_text() == "1"
    shot(page, "actions-resend-done")
    assert Event.objects.filter(type="memory.write_resent", turn_id=turn_id).count() == 1

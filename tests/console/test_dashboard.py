"""The dashboard on the admin index: per product, each figure counts what its admin list shows."""

from __future__ import annotations

import pytest
from django.urls import reverse

from memories.console import dashboard
from memories.console.dashboard import dashboard_build, quantile
from memoryhub import metrics
from tests.browser.support import failed_job_turn, jobs_in_process, seed_product
from tests.factories import TurnFactory
from tests.support.admin import staff_client

pytestmark = pytest.mark.django_db


@pytest.fixture
def seeded(django_capture_on_commit_callbacks):
    with jobs_in_process(), django_capture_on_commit_callbacks(execute=True):
        return seed_product()


def figures(board) -> list[dashboard.Figure]:
    # conflicts[0] is the database's (table edits); the others are the process-wide /metrics counter
    sections = [board.turns_by_runtime, board.conflicts[:1], board.hinos, board.diary_jobs, board.table_jobs]
    return [f for section in [*sections, board.refusals] for f in section]


def listed(admin_client, url: str) -> int:
    response = admin_client.get(url)
    assert response.status_code == 200, url  # an unknown filter would redirect to ?e=1
    return response.context["cl"].result_count


def test_every_database_figure_links_to_the_list_of_exactly_the_rows_it_counts(admin_client, seeded):
    failed = failed_job_turn(seeded, "diaries")
    board = dashboard_build(product=seeded.product)
    assert [(f.label, f.value) for f in board.turns_by_runtime] == [("axon_go", 4)]
    assert {str(f.label): f.value for f in board.table_jobs}["done: updated or unchanged"] >= 3
    assert {str(f.label): f.value for f in board.diary_jobs}["failed"] == 1
    assert [(job.turn.pk, job.work) for job in board.failed_jobs] == [(failed.pk, "diaries")]
    for figure in figures(board):
        assert listed(admin_client, figure.url) == figure.value, (figure.label, figure.url)


def test_the_product_switcher_shows_one_product_and_an_unknown_id_is_a_404(admin_client, seeded):
    other = TurnFactory(scenario__product__name="other-app", scenario__memory_runtime="hinos").product
    page = admin_client.get(reverse("admin:index"), {"product": other.pk}).content.decode()
    assert f'<option value="{other.pk}" selected>' in page
    assert "hinos" in page and "axon_go" not in page
    first = admin_client.get(reverse("admin:index")).content.decode()  # no ?product=: the first product
    assert "axon_go" in first and seeded.product.pk in first
    assert admin_client.get(reverse("admin:index"), {"product": "prd_nope"}).status_code == 404
    assert admin_client.get(reverse("console:dashboard"), {"product": other.pk}).url.endswith(f"?product={other.pk}")


def test_the_dashboard_needs_the_admin_login(client, seeded):
    response = client.get(reverse("admin:index"))
    assert response.status_code == 302 and "/admin/login/" in response.url


def test_conflicts_and_search_latency_come_from_the_metrics_registry(admin_client, seeded):
    before = {f.label: f.value for f in dashboard_build(product=seeded.product).conflicts}
    metrics.CONFLICTS.labels(kind="memory_document").inc()
    response = seeded.api.post("/v1/users/u1/memories/search", {"query": "灯塔"})
    assert response.status_code < 500
    board = dashboard_build(product=seeded.product)
    after = {f.label: f.value for f in board.conflicts}
    assert after["memory_document"] == before.get("memory_document", 0) + 1
    searches, p50, p95 = board.search_latency
    assert searches.value >= 1 and p50.value is not None and p95.value >= p50.value
    assert listed(admin_client, dict(zip(after, [f.url for f in board.conflicts]))["memory_document"]) >= 0


def test_quantile_interpolates_inside_the_bucket_like_histogram_quantile():
    buckets = [(0.1, 50.0), (0.5, 90.0), (1.0, 100.0), (float("inf"), 100.0)]
    assert quantile(buckets, 0.5) == pytest.approx(0.1)
    assert quantile(buckets, 0.7) == pytest.approx(0.1 + 0.4 * 20 / 40)
    assert quantile(buckets, 0.95) == pytest.approx(0.5 + 0.5 * 5 / 10)
    assert quantile([(0.1, 0.0), (float("inf"), 0.0)], 0.5) is None
    assert quantile([(0.1, 0.0), (float("inf"), 4.0)], 0.5) == 0.1  # all above the last bound


def test_under_gunicorn_the_figures_sum_every_workers_metrics(tmp_path, monkeypatch):
    """PROMETHEUS_MULTIPROC_DIR set: the values of every process's files, as /metrics prints them."""
    import subprocess
    import sys

    from django.conf import settings

    from memories.console import metrics_read

    worker = (
        "from memoryhub.metrics import CONFLICTS, LATENCY\n"
        "CONFLICTS.labels(kind='memory_table').inc(2)\n"
        "LATENCY.labels(route='v1/users/<str:user_id>/memories/search', method='POST').observe(0.2)\n"
    )
    env = {"PROMETHEUS_MULTIPROC_DIR": str(tmp_path), "PATH": "/usr/bin:/bin"}
    for _ in range(2):  # two "workers"
        subprocess.run([sys.executable, "-c", worker], env=env, check=True, cwd=settings.BASE_DIR)
    monkeypatch.setenv("PROMETHEUS_MULTIPROC_DIR", str(tmp_path))
    assert metrics_read.counter_by_label("memoryhub_conflicts", "kind") == {"memory_table": 4.0}
    buckets = dict(metrics_read.histogram_buckets("memoryhub_http_request_seconds", route_suffix="memories/search"))
    assert buckets[0.1] == 0 and buckets[0.25] == 2 and buckets[float("inf")] == 2
    assert quantile(buckets.items(), 0.5) == pytest.approx(0.1 + 0.15 * 1 / 2)


def test_the_dashboard_needs_the_view_permission_of_everything_it_shows(seeded):
    failed = failed_job_turn(seeded, "diaries")
    index = reverse("admin:index")
    for missing in (None, *dashboard.DASHBOARD_PERMISSIONS):
        held = [p for p in dashboard.DASHBOARD_PERMISSIONS if p != missing] if missing else []
        page = staff_client(*held).get(index, {"product": seeded.product.pk})
        body = page.content.decode()
        assert page.status_code == 200 and 'id="console-dashboard"' not in body, missing
        assert str(seeded.product) not in body and "/actions/rerun/" not in body  # no names, ids or failures

    page = staff_client(*dashboard.DASHBOARD_PERMISSIONS).get(index, {"product": seeded.product.pk}).content.decode()
    assert 'id="console-dashboard"' in page and reverse("console:rerun", args=[failed.pk, "diaries"]) in page

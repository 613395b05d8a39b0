"""Browser tests (Playwright + Debian's chromium, docs/console.md): a live server, a logged-in admin page.

Skipped on the embedded default when chromium (or Playwright) is missing; FAIL instead under
MEMORYHUB_REQUIRE_SERVICES=1, where .ci/run installs chromium with apt. `playwright install` is never used:
the browser is the system's (MEMORYHUB_CHROMIUM, default /usr/bin/chromium).
"""

from __future__ import annotations

import importlib.util
import os
import shutil

import pytest

from tests.browser.support import Seeded, screenshot, seed_product
from tests.factories import SuperuserFactory
from tests.support.services import REQUIRE_SERVICES

# Playwright's sync API keeps an event loop running in the main thread for the whole session; the tests'
# own ORM calls (fixtures, assertions) are synchronous code all the same.
os.environ.setdefault("DJANGO_ALLOW_ASYNC_UNSAFE", "true")

CHROMIUM = os.environ.get("MEMORYHUB_CHROMIUM", "/usr/bin/chromium")
CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]
PASSWORD = "pw"


def browser_missing() -> str | None:
    if importlib.util.find_spec("playwright") is None:
        return "needs the playwright package (requirements.txt)"
    if not (os.path.exists(CHROMIUM) or shutil.which(CHROMIUM)):
        return f"needs chromium at {CHROMIUM} (apt-get install chromium)"
    return None


def pytest_runtest_setup(item):
    reason = browser_missing()
    if reason and REQUIRE_SERVICES:
        pytest.fail(f"browser test: {reason} (MEMORYHUB_REQUIRE_SERVICES=1 forbids skipping)")
    if reason:
        pytest.skip(reason)


@pytest.fixture(scope="session")
def browser_type_launch_args(browser_type_launch_args):
    """pytest-playwright's launch arguments: the system chromium, headless, nothing fetched from the network."""
    return {**browser_type_launch_args, "executable_path": CHROMIUM, "headless": True, "args": CHROMIUM_ARGS}


@pytest.fixture(scope="session")
def browser_context_args(browser_context_args):
    return {**browser_context_args, "viewport": {"width": 1280, "height": 900}, "locale": "en-US"}


@pytest.fixture
def admin_user(transactional_db):
    """A superuser `op` (password `pw`)."""
    return SuperuserFactory(username="op", password=PASSWORD)


@pytest.fixture
def admin_page(page, live_server, admin_user):
    """A Playwright page logged in to the admin of the live server as `op`, showing the admin index."""
    page.set_default_timeout(15_000)
    page.goto(f"{live_server.url}/admin/login/?next=/admin/")
    page.fill("#id_username", admin_user.username)
    page.fill("#id_password", PASSWORD)
    page.click("input[type=submit]")
    page.wait_for_url(f"{live_server.url}/admin/")
    return page


@pytest.fixture
def seeded(transactional_db) -> Seeded:
    """A product `lighthouse-app` with conversation u1/c1: three committed turns through the real API, each
    reply with a `<tableEdit>` (table versions), diary planned (minRounds 2); jobs run in-process."""
    return seed_product()


@pytest.fixture
def shot():
    """`shot(page, "name")` saves docs/console/name.png (full page)."""
    return screenshot

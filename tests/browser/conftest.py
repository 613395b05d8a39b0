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


@pytest.fixture(scope="package", autouse=True)
def _sync_orm_beside_playwright():
    """Playwright's sync API keeps an event loop running in the main thread while it is started; the tests' own
    ORM calls (fixtures, assertions) are synchronous code all the same. Only for this package."""
    before = os.environ.get("DJANGO_ALLOW_ASYNC_UNSAFE")
    os.environ["DJANGO_ALLOW_ASYNC_UNSAFE"] = "true"
    yield
    if before is None:
        os.environ.pop("DJANGO_ALLOW_ASYNC_UNSAFE", None)
    else:
        os.environ["DJANGO_ALLOW_ASYNC_UNSAFE"] = before


# pytest-playwright starts Playwright (and with it a running event loop) once per session and stops it at the
# very end, which would break every later test calling asyncio.run (e.g. tests/mcp). Here it lives for this
# package only: the same fixtures, package-scoped.
@pytest.fixture(scope="package")
def playwright(_sync_orm_beside_playwright):
    from playwright.sync_api import sync_playwright

    pw = sync_playwright().start()
    yield pw
    pw.stop()


@pytest.fixture(scope="package")
def browser_type(playwright, browser_name):
    return getattr(playwright, browser_name or "chromium")


@pytest.fixture(scope="package")
def launch_browser(browser_type_launch_args, browser_type):
    def launch(**kwargs):
        return browser_type.launch(**{**browser_type_launch_args, **kwargs})

    return launch


@pytest.fixture(scope="package")
def browser(launch_browser):
    browser = launch_browser()
    yield browser
    browser.close()


@pytest.fixture(scope="session")
def browser_type_launch_args(browser_type_launch_args):
    """pytest-playwright's launch arguments: the system chromium, headless, nothing fetched from the network."""
    return {**browser_type_launch_args, "executable_path": CHROMIUM, "headless": True, "args": CHROMIUM_ARGS}


@pytest.fixture(scope="package")
def browser_context_args():
    """Every page: 1280×900, English until the switcher says otherwise (no device emulation, no recording)."""
    return {"viewport": {"width": 1280, "height": 900}, "locale": "en-US"}


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
    """`shot(page, "name")` saves name.png (full page) into SCREENSHOTS (tests/browser/support.py)."""
    return screenshot

"""Browser tests: Playwright for Python driving Debian's Chromium (``/usr/bin/chromium``,
``apt-get install -y chromium``; never ``playwright install``) against the live server.

Every test gets a fresh browser context. ``shot(page, name)`` saves a screenshot of a page state
under ``test-output/browser/`` (``BROWSER_OUTPUT`` overrides); a failing test leaves a
screenshot of every page it had open there, named after the test.
"""

from __future__ import annotations

import os
import re
import shutil
from pathlib import Path

import pytest

# Playwright's sync API runs an event loop in this thread; the ORM calls the tests make
# around it are still synchronous code, which Django refuses under a running loop unless told.
os.environ.setdefault("DJANGO_ALLOW_ASYNC_UNSAFE", "true")

CHROMIUM = os.environ.get("CHROMIUM_PATH", "/usr/bin/chromium")
CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
]
OUTPUT = Path(os.environ.get("BROWSER_OUTPUT", Path(__file__).resolve().parents[2] / "test-output" / "browser"))


def pytest_collection_modifyitems(items):
    for item in items:
        if "tests/browser/" in str(item.fspath).replace(os.sep, "/"):
            item.add_marker(pytest.mark.browser)


@pytest.hookimpl(tryfirst=True, hookwrapper=True)
def pytest_runtest_makereport(item, call):
    outcome = yield
    report = outcome.get_result()
    setattr(item, f"rep_{report.when}", report)


@pytest.fixture(scope="session")
def browser():
    from playwright.sync_api import sync_playwright

    if not shutil.which(CHROMIUM) and not Path(CHROMIUM).exists():
        pytest.fail(f"Chromium not found at {CHROMIUM}: apt-get install -y chromium (or set CHROMIUM_PATH)")
    playwright = sync_playwright().start()
    chromium = playwright.chromium.launch(executable_path=CHROMIUM, headless=True, args=CHROMIUM_ARGS)
    yield chromium
    chromium.close()
    playwright.stop()


def _slug(text: str) -> str:
    return re.sub(r"[^A-Za-z0-9_.-]+", "_", text).strip("_")[:150]


@pytest.fixture
def shot(request):
    """``shot(page, "name")``: save a screenshot of the page's state now; returns the path."""
    test = _slug(request.node.name)

    def take(page, name: str) -> Path:
        OUTPUT.mkdir(parents=True, exist_ok=True)
        path = OUTPUT / f"{test}--{_slug(name)}.png"
        page.screenshot(path=str(path), full_page=True)
        return path

    return take


@pytest.fixture
def context(browser, request):
    """A fresh browser context (cookies, storage); on failure, a screenshot of each open page."""
    ctx = browser.new_context(viewport={"width": 1100, "height": 900}, locale="en-US")
    ctx.set_default_timeout(10_000)
    yield ctx
    failed = getattr(request.node, "rep_call", None)
    if failed is not None and failed.failed:
        OUTPUT.mkdir(parents=True, exist_ok=True)
        for index, open_page in enumerate(ctx.pages):
            try:
                open_page.screenshot(path=str(OUTPUT / f"FAILED--{_slug(request.node.name)}--{index}.png"), full_page=True)
            except Exception:  # a crashed page: nothing to save
                pass
    ctx.close()


@pytest.fixture
def page(context):
    """A page whose console errors and failed requests are collected in ``page.problems``."""
    new_page = context.new_page()
    new_page.problems = []
    new_page.on("console", lambda m: new_page.problems.append(f"console.{m.type}: {m.text}") if m.type == "error" else None)
    new_page.on("pageerror", lambda e: new_page.problems.append(f"pageerror: {e}"))
    return new_page

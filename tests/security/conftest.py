"""Fixtures of the XSS suite: Chromium as the browser tests drive it (tests/browser/conftest.py:
Debian's Chromium, never a downloaded one), a watched context (``harness.Watch``) and a host
site of our own on another origin. The suite's tests that drive the browser are marked
``browser``, like those of tests/browser/."""

from __future__ import annotations

import os

import pytest

from tests.browser.conftest import OUTPUT, _slug, shot  # noqa: F401  (fixtures)

from .harness import HostSite, Watch


def pytest_collection_modifyitems(items):
    for item in items:
        in_suite = "tests/security/" in str(item.fspath).replace(os.sep, "/")
        if in_suite and {"browser", "context", "page"} & set(getattr(item, "fixturenames", ())):
            item.add_marker(pytest.mark.browser)


@pytest.fixture
def watch(request):
    """The test's ``Watch``. A test that failed before its last check (a page that a payload
    broke, so that an expected count was off) still reports what ran and what was found."""
    watching = Watch()
    yield watching
    failed = getattr(request.node, "rep_call", None)
    if failed is not None and failed.failed:
        watching.take("after the failure")
        print(f"{len(watching.findings)} findings of the XSS watch:", *watching.findings[:100], sep="\n")


@pytest.fixture
def context(browser, watch, request):
    """A fresh context that bypasses the pages' Content-Security-Policy, with the hook in every
    document; on failure, a screenshot of each open page."""
    ctx = browser.new_context(viewport={"width": 1100, "height": 900}, locale="en-US", bypass_csp=True)
    ctx.set_default_timeout(15_000)
    watch.install(ctx)
    yield ctx
    failed = getattr(request.node, "rep_call", None)
    if failed is not None and failed.failed:
        OUTPUT.mkdir(parents=True, exist_ok=True)
        for index, open_page in enumerate(ctx.pages):
            try:
                open_page.screenshot(path=str(OUTPUT / f"FAILED--{_slug(request.node.name)}--{index}.png"))
            except Exception:  # noqa: BLE001 - a crashed page: nothing to save
                pass
    ctx.close()


@pytest.fixture
def page(context, watch):
    return watch.watch(context.new_page())


@pytest.fixture
def host():
    site = HostSite()
    yield site
    site.close()

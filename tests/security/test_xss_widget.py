"""The XSS corpus in the widget, in Chromium: every payload as a comment body, as the display name
its author signs in with (the host's SSO payload) and as a guest's name and comment, then shown
by the widget framed on a host page of another origin in its three modes (every "Load more",
every "View all replies", an unfolded stacked chain, the signed-in reader's notifications), by
each kind of fragment the widget fetches (the list, a thread's replies, a stacked chain, one
comment), and as the ``data-title`` and ``data-url`` a host page gives the widget. Nothing may
run, and no link may lead to ``javascript:`` (``harness.Watch``)."""

from __future__ import annotations

import time
from html import escape
from urllib.parse import urlencode

import pytest
from playwright.sync_api import expect
from rest_framework.test import APIClient

from accounts.guests import form_token_issue, guest_comment_post
from comments.sso import sign_payload
from tests.browser.conftest import click
from tests.factories import SiteFactory

from . import inputs
from .corpus import PAYLOADS

pytestmark = pytest.mark.django_db(transaction=True)

SECRET = "xss-sso-secret"
SITE = "xss"
KEY = "xss-discussion"


def _settle_events() -> None:
    """Hand on the events of the comments just posted (the notifications' stream, when there is
    one), as the beat task would."""
    from notifications import jobs

    jobs.events_drain()


@pytest.fixture
def discussion(live_server, host, settings):
    """One discussion holding the corpus twice over: each payload a top-level comment by a reader
    the host signed in under that payload as their name (the host's SSO payload, exchanged at
    ``/api/v1/auth/sso``; posted through the API), and each a guest's comment, under the payload
    as the guest's name, in one of two long chains of replies (a stacked discussion's floors),
    one of them under a comment of Wendy's, who is told of it."""
    settings.ACCOUNTS_GUEST_FORM_MIN_SECONDS = 0
    site = SiteFactory(
        key=SITE,
        sso_secret=SECRET,
        allowed_origins=[host.origin, same_site(host)],
        signin_guests=True,
        guest_moderation="post",
    )
    api = APIClient()
    readers = inputs.sso_readers(api, site=SITE, secret=SECRET, payloads=PAYLOADS)
    wendy = inputs.sso_reader(api, site=SITE, secret=SECRET, external_id="wendy", name="Wendy")
    subject_id = inputs.subject_create(
        api, token=wendy.token, site=SITE, key=KEY, title="A discussion", url="https://x.example/discussion"
    )
    wendys = inputs.comment_post(api, token=wendy.token, subject_id=subject_id, body="Tell me what you think.")["id"]
    roots = [
        inputs.comment_post(api, token=readers[p.number].token, subject_id=subject_id, body=p.text)["id"]
        for p in PAYLOADS
    ]
    half = len(PAYLOADS) // 2
    chain_ends = []
    for above, chain in ((wendys, PAYLOADS[:half]), (roots[0], PAYLOADS[half:])):
        for p in chain:
            token = form_token_issue(site=site).token
            above = guest_comment_post(
                site=site, key=KEY, body=p.text, name=p.name, reply_to_id=above, form_token=token
            ).comment.pk
        chain_ends.append(above)
    _settle_events()
    return {"subject": subject_id, "threads": [wendys, roots[0]], "chain_ends": chain_ends}


def same_site(host) -> str:
    """The host site's origin on ``localhost``: the service's site, another origin."""
    return host.origin.replace("127.0.0.1", "localhost")


def embed_tag(key: str, *, mode: str = "", sso: str = "", title: str = "", url: str = "") -> str:
    attributes = {"data-site": SITE, "data-key": key, "data-mode": mode, "data-sso": sso, "data-title": title}
    if url:
        attributes["data-url"] = url
    written = " ".join(f'{name}="{escape(value, quote=True)}"' for name, value in attributes.items() if value)
    return f"<div data-comments {written}></div>"


def loader(live_server) -> str:
    return f"<script src='{live_server.url}/static/comments/embed.js' async></script>"


def test_no_payload_runs_in_the_widget_its_fragments_or_its_page(page, watch, host, live_server, discussion, shot):
    widget_on_host_pages(page, watch, host, live_server, shot)
    fragments(page, watch, live_server, discussion)
    titles_and_urls(page, watch, host, live_server)
    watch.assert_clean()


def widget_on_host_pages(page, watch, host, live_server, shot) -> None:
    signed = sign_payload(SECRET, {"id": "wendy", "name": "Wendy", "exp": int(time.time()) + 3600})

    # two-level: every page of top-level comments, every thread unfolded, Wendy's notifications
    page.goto(host.page("/two-level", embed_tag(KEY, sso=signed) + loader(live_server)))
    widget = page.frame_locator("iframe")
    expect(widget.locator("#cw-me-name")).to_have_text("Wendy")
    # The list is read again for her: busy from when her name shows until it is hers.
    expect(widget.locator("#cw-list")).to_have_attribute("aria-busy", "false")
    more = widget.locator("a.cw-more[data-action=more]")
    for _ in range(len(PAYLOADS)):  # (a page at least each time: a bound, should a click do nothing)
        if not more.count():
            break
        click(more)
        expect(widget.locator("a.cw-more[aria-busy]")).to_have_count(0)
    expect(widget.locator(".cw-items > .cw-thread")).to_have_count(len(PAYLOADS) + 1)
    expand = widget.locator("a.cw-expand")
    threads = expand.count()
    for opened in range(1, threads + 1):
        click(expand.first)
        expect(expand).to_have_count(threads - opened)
    watch.check("widget, two-level, every page and thread", page, ours=True)
    click(widget.locator("#cw-nt-toggle"))
    expect(widget.locator("#cw-nt-list > li")).not_to_have_count(0)
    watch.check("widget, Wendy's notifications", page, ours=True)
    shot(page, "two-level")

    # flat, newest first: every reply says whom it answers ("reply to @name")
    page.goto(host.page("/flat", embed_tag(KEY, mode="flat") + loader(live_server)))
    widget = page.frame_locator("iframe")
    click(widget.get_by_role("link", name="Newest"))
    expect(widget.locator(".cw-to").first).to_be_visible()
    click(widget.locator("a.cw-more[data-action=more]"))
    expect(widget.locator("a.cw-more[aria-busy]")).to_have_count(0)
    watch.check("widget, flat", page, ours=True)

    # stacked, newest first: the floors above each comment, two long chains unfolded
    page.goto(host.page("/stacked", embed_tag(KEY, mode="stacked") + loader(live_server)))
    widget = page.frame_locator("iframe")
    click(widget.get_by_role("link", name="Newest"))
    folds = widget.locator("a.cw-fold")
    expect(folds.first).to_be_visible()
    for _ in range(2):
        before = widget.locator(".cw-floor").count()
        click(folds.first)
        expect(widget.locator(".cw-floor")).not_to_have_count(before)
    watch.check("widget, stacked", page, ours=True)


def fragment_pages(page, url: str):
    """A fragment as a reader without JavaScript follows it (inside the page layout), then each
    next page its "Load more" link leads to, 100 comments a page."""
    for _ in range(2 * len(PAYLOADS) // 100 + 2):  # a bound: never more pages than that
        if not url:
            return
        page.goto(url)
        yield url
        url = ""
        more = page.locator("a.cw-more")
        if more.count():
            following = more.first.get_attribute("data-fragment") or more.first.get_attribute("href") or ""
            if "/embed/fragments/" in following:
                url = page.url.split("/embed/")[0] + following + "&limit=100"
    raise AssertionError(f"more pages than the comments could fill: {url}")


def fragments(page, watch, live_server, discussion) -> None:
    service = live_server.url
    base = {"site": SITE, "key": KEY, "lang": "en", "limit": 100}
    two_level = {**base, "mode": "two_level", "sort": "new", "replies": 10}
    shown = 0
    for url in fragment_pages(page, f"{service}/embed/fragments/comments?{urlencode(two_level)}"):
        shown += page.locator(".cw-thread > .cw-c").count()
        watch.check(f"fragment, two-level list: {url}", page)
    assert shown == len(PAYLOADS) + 1
    # The other modes' lists show the same comments in the same template, but for what only
    # they show: "reply to @name" (flat) and the floors above (stacked), on their first page.
    for mode in ("flat", "stacked"):
        page.goto(f"{service}/embed/fragments/comments?{urlencode({**base, 'mode': mode, 'sort': 'new'})}")
        expect(page.locator(".cw-items > li")).to_have_count(100)
        watch.check(f"fragment, {mode} list", page)
    for root in discussion["threads"]:
        for url in fragment_pages(page, f"{service}/embed/fragments/comments/{root}/replies?lang=en&limit=100"):
            watch.check(f"fragment, replies: {url}", page)
    for end in discussion["chain_ends"]:
        page.goto(f"{service}/embed/fragments/comments/{end}/chain?lang=en")
        assert page.locator(".cw-floor").count() >= len(PAYLOADS) // 2
        watch.check(f"fragment, chain of {end}", page)
        for mode in ("stacked", "flat"):
            page.goto(f"{service}/embed/fragments/comments/{end}?lang=en&mode={mode}")
            watch.check(f"fragment, comment {end} ({mode})", page)


def titles_and_urls(page, watch, host, live_server) -> None:
    """``data-title`` and ``data-url`` as a host page gives them (its own attributes, which it
    escapes), sent on by the loader to the widget's page: the title and address of a discussion
    not started yet, one a payload. The host page is on ``localhost`` (another origin than the
    service, but the same site, so the frames share its process: 200-odd frames load in
    seconds, not a minute)."""
    origin = same_site(host)
    tags = "".join(embed_tag(p.key, title=p.title, url=p.text) for p in PAYLOADS)
    count_ready = (
        "<script>window.ready = 0; window.addEventListener('message', (e) => {"
        " if (e.data && e.data.type === 'comments:ready') window.ready += 1; });</script>"
    )
    page.goto(origin + host.path("/titles", count_ready + tags + loader(live_server)))
    # Frames below the fold load lazily: load them all now, and wait until each one's script ran.
    page.evaluate("() => document.querySelectorAll('iframe').forEach((f) => { f.loading = 'eager'; })")
    page.wait_for_function(f"() => window.ready === {len(PAYLOADS)}", timeout=60_000)
    loaded = [f for f in page.frames if "/embed/" in f.url]
    assert len(loaded) == len(PAYLOADS)
    titles = {frame.evaluate("() => document.getElementById('cw').dataset.title").strip() for frame in loaded}
    assert titles == {p.title.strip() for p in PAYLOADS}
    watch.check("embed page, data-title and data-url", page, ours=True, scroll_frames=False)

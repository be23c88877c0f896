"""The XSS corpus imported, in Chromium: a Disqus export and a WordPress export (WXR) whose
comments (HTML, as both hand them over), commenters' names, pages' titles and addresses are the
payloads, brought in by the portability app's import (``portability.services.import_file``), then
shown by the widget's fragments, the feeds (as a reader shows them) and the moderation console's
review queue (each titled page's comment held in the source: unapproved). Nothing may run, and
no link may lead to ``javascript:`` (``harness.Watch``)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from urllib.parse import urlencode
from xml.sax.saxutils import escape

import pytest
from django.test import Client
from playwright.sync_api import expect

from comments.models import Comment, Status
from portability.services import import_file
from tests.browser.conftest import click, type_into
from tests.factories import SiteFactory, UserFactory

from .corpus import PAYLOADS
from .test_xss_mail_feeds import CONTROLS, as_a_reader_shows
from .test_xss_widget import fragment_pages

pytestmark = pytest.mark.django_db(transaction=True)

START = datetime(2020, 1, 1, tzinfo=UTC)
# An XML file cannot hold C0 control characters (but tab and line breaks): no export has them.
TEXTS = {p.number: p.text.translate(CONTROLS) for p in PAYLOADS}
URLS = {p.number: p.url.translate(CONTROLS) for p in PAYLOADS}


def _when(n: int) -> datetime:
    return START + timedelta(minutes=n)


def _link(n: int) -> str:
    """A page's address: an http one with the payload in it, or (every other page) the payload
    itself, which the import must not keep as a link."""
    return URLS[n] if n % 2 else TEXTS[n]


def disqus_export() -> str:
    """A thread of every payload's comment (published), then a thread a payload (its title and
    address) with a comment held for approval, by an anonymous commenter named by the payload."""
    threads = [
        '<thread dsq:id="all"><id>xss-all</id><link>https://x.example/all</link><title>Imported</title>'
        f"<createdAt>{START.isoformat()}</createdAt></thread>"
    ]
    posts = []
    for p in PAYLOADS:
        n, text = p.number, escape(TEXTS[p.number])
        threads.append(
            f'<thread dsq:id="t{n}"><id>xss-{n}</id><link>{escape(_link(n))}</link><title>{text}</title>'
            f"<createdAt>{START.isoformat()}</createdAt></thread>"
        )
        author = f"<author><name>{text}</name><isAnonymous>false</isAnonymous><username>u{n}</username></author>"
        posts.append(
            f'<post dsq:id="a{n}"><message>{text}</message><createdAt>{_when(n).isoformat()}</createdAt>'
            f'<isDeleted>false</isDeleted><isSpam>false</isSpam>{author}<thread dsq:id="all"/></post>'
        )
        posts.append(
            f'<post dsq:id="h{n}"><message>Held {n}</message><createdAt>{_when(n).isoformat()}</createdAt>'
            f"<isDeleted>false</isDeleted><isSpam>false</isSpam><isApproved>false</isApproved>"
            f'<author><name>{text}</name><isAnonymous>true</isAnonymous></author><thread dsq:id="t{n}"/></post>'
        )
    return (
        '<?xml version="1.0" encoding="utf-8"?>\n<disqus xmlns="http://disqus.com" '
        'xmlns:dsq="http://disqus.com/disqus-internals">' + "".join(threads + posts) + "</disqus>"
    )


def wordpress_export() -> str:
    """The same in WordPress's terms: a post with every payload's comment, approved, then a post
    a payload with a comment waiting for approval by a commenter named by the payload."""

    def comment(number: int, n: int, approved: str, body: str) -> str:
        text = escape(TEXTS[n])
        return (
            f"<wp:comment><wp:comment_id>{number}</wp:comment_id><wp:comment_author>{text}</wp:comment_author>"
            f"<wp:comment_author_url>{escape(_link(n))}</wp:comment_author_url>"
            f"<wp:comment_date_gmt>{_when(n):%Y-%m-%d %H:%M:%S}</wp:comment_date_gmt>"
            f"<wp:comment_content>{escape(body)}</wp:comment_content><wp:comment_approved>{approved}</wp:comment_approved>"
            "<wp:comment_type>comment</wp:comment_type><wp:comment_parent>0</wp:comment_parent>"
            "<wp:comment_user_id>0</wp:comment_user_id></wp:comment>"
        )

    def item(post_id: int, title: str, link: str, comments: list[str]) -> str:
        return (
            f"<item><title>{escape(title)}</title><link>{escape(link)}</link><wp:post_id>{post_id}</wp:post_id>"
            f"<wp:post_date_gmt>{START:%Y-%m-%d %H:%M:%S}</wp:post_date_gmt>"
            "<wp:comment_status>open</wp:comment_status><wp:status>publish</wp:status>"
            f"<wp:post_type>post</wp:post_type>{''.join(comments)}</item>"
        )

    items = [
        item(
            1,
            "Imported from WordPress",
            "https://wp.example/all",
            [comment(p.number, p.number, "1", TEXTS[p.number]) for p in PAYLOADS],
        )
    ]
    items += [
        item(
            1000 + p.number,
            TEXTS[p.number],
            _link(p.number),
            [comment(1000 + p.number, p.number, "0", f"Held {p.number}")],
        )
        for p in PAYLOADS
    ]
    return (
        '<?xml version="1.0" encoding="UTF-8" ?>\n<rss version="2.0" xmlns:wp="http://wordpress.org/export/1.2/" '
        'xmlns:dc="http://purl.org/dc/elements/1.1/"><channel><title>A blog</title>'
        + "".join(items)
        + "</channel></rss>"
    )


@pytest.fixture
def imported(live_server, tmp_path, settings):
    settings.FEEDS_ITEMS = 2 * len(PAYLOADS)
    sites = {}
    for fmt, export, all_key in (
        ("disqus", disqus_export(), "xss-all"),
        ("wordpress", wordpress_export(), "/all"),  # the permalink's path
    ):
        site = SiteFactory(key=f"xss-{fmt}", name=f"Imported from {fmt}")
        path = tmp_path / f"{fmt}.xml"
        path.write_text(export, encoding="utf-8")
        summary = import_file(site=site, format=fmt, path=str(path))
        assert summary.imported == 2 * len(PAYLOADS), summary.lines()
        sites[site.key] = all_key
    UserFactory(username="mod", is_staff=True, is_superuser=True)
    return sites


def test_no_imported_payload_runs_in_the_fragments_the_feeds_or_the_console(page, watch, live_server, imported):
    service = live_server.url
    client = Client()
    for site, key in imported.items():
        query = {"site": site, "key": key, "lang": "en", "limit": 100, "mode": "two_level", "sort": "new"}
        shown = 0
        for url in fragment_pages(page, f"{service}/embed/fragments/comments?{urlencode(query)}"):
            shown += page.locator(".cw-thread > .cw-c").count()
            watch.check(f"imported, fragment {url}", page)
        # An HTML comment that the import's cleaning leaves empty (a script, an image and nothing
        # else) is kept as deleted, and shows nowhere.
        published = Comment.objects.filter(subject__site__key=site, status=Status.PUBLISHED).count()
        assert shown == published > len(PAYLOADS) // 2
        for kind in ("rss", "atom"):
            answer = client.get(f"/feeds/sites/{site}/comments.{kind}")
            assert answer.status_code == 200
            page.set_content(as_a_reader_shows(answer.content))
            expect(page.locator("article")).to_have_count(published)
            watch.check(f"imported, {site} feed ({kind})", page)

    page.goto(f"{service}/console/login/?next=/console/")
    type_into(page.get_by_label("Username"), "mod")
    type_into(page.get_by_label("Password"), "pw-123456")
    click(page.get_by_role("button", name="Sign in"))
    for site in imported:
        page.goto(f"{service}/console/?site={site}")
        seen = page.locator("li.task").count()
        watch.check(f"imported, {site} queue", page)
        for _ in range(len(PAYLOADS)):  # a bound: never more pages than that
            if not page.locator("a[rel=next]").count():
                break
            page.goto(page.locator("a[rel=next]").first.evaluate("(a) => a.href"))
            seen += page.locator("li.task").count()
            watch.check(f"imported, {site} queue {page.url}", page)
        assert seen == len(PAYLOADS)
    watch.assert_clean()

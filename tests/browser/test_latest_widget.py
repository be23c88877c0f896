"""The "latest comments" sidebar (``static/comments/latest.js``) in a real browser, on a host
page of another origin (127.0.0.1) than the service (localhost), as docs/embedding.md shows it:
the site's newest public comments, as text (a comment's markup is not inserted), linked to
their discussions' pages; a page on an origin the site does not allow gets nothing."""

from __future__ import annotations

import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest
from playwright.sync_api import expect

from tests.browser.conftest import assert_seen_by_a_person
from tests.factories import CommentFactory, SiteFactory, SubjectFactory


def host_server(service: str, markup: str):
    page = f"""<!doctype html><html lang="en"><head><meta charset="utf-8"><title>Host</title></head>
<body><aside>{markup}</aside><script src="{service}/static/comments/latest.js" async></script></body></html>""".encode()

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self):
            self.send_response(200 if self.path == "/" else 404)
            self.send_header("Content-Type", "text/html; charset=utf-8")
            self.end_headers()
            self.wfile.write(page if self.path == "/" else b"")

        def log_message(self, *args):
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server


@pytest.fixture
def hosted(live_server, transactional_db):
    servers = []

    def start(markup: str, *, allowed: bool = True):
        server = host_server(live_server.url, markup)
        servers.append(server)
        origin = f"http://127.0.0.1:{server.server_port}"
        return origin, SiteFactory(key="blog", allowed_origins=[origin] if allowed else [])

    yield start
    for server in servers:
        server.shutdown()
        server.server_close()


def test_the_sidebar_lists_the_sites_newest_comments_as_text(hosted, page, shot):
    origin, site = hosted('<div data-comments-latest data-site="blog" data-limit="2"></div>')
    subject = SubjectFactory(site=site, title="Cats", url="https://blog.example/cats")
    CommentFactory(subject=subject, body="older")
    CommentFactory(subject=subject, body="the **middle** one")
    CommentFactory(subject=subject, body="newest <img src=x onerror=alert(1)> & more")
    page.goto(origin + "/")
    items = page.locator(".comments-latest .comments-latest-item")
    expect(items).to_have_count(2)
    assert_seen_by_a_person(items.first)
    expect(items.nth(0).locator(".comments-latest-text")).to_have_text(
        "newest <img src=x onerror=alert(1)> & more"
    )  # as text, not markup
    expect(items.nth(1).locator(".comments-latest-text")).to_have_text("the middle one")
    link = items.nth(0).locator("a.comments-latest-subject")
    expect(link).to_have_text("Cats")
    assert link.get_attribute("href").startswith("https://blog.example/cats#comment-")
    assert page.locator(".comments-latest img, .comments-latest strong").count() == 0
    shot(page, "latest-comments")


def test_a_page_on_an_origin_the_site_does_not_allow_gets_nothing(hosted, page):
    origin, site = hosted('<div data-comments-latest data-site="blog">Loading</div>', allowed=False)
    CommentFactory(subject=SubjectFactory(site=site), body="hidden")
    page.goto(origin + "/")
    expect(page.locator("[data-comments-latest-error]")).to_have_count(1, timeout=10_000)
    expect(page.locator("[data-comments-latest]")).to_have_text("Loading")

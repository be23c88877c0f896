"""The widget's default key (no ``data-key``: ``location.pathname``, static/comments/embed.js) is
the key an import gives a page's thread (``portability.keys.page_key``): the same string for
every address a reader may open a page at, checked in Chromium; and an imported, remapped Disqus
thread shows on its new page with no ``data-key`` at all."""

from __future__ import annotations

import io
import threading
from urllib.parse import parse_qs, urlsplit

import pytest
from django.core.management import call_command
from playwright.sync_api import expect

from demo.management.commands.demo_host import make_host_server
from portability.keys import page_key
from tests.factories import SiteFactory
from tests.portability.conftest import fixture_path

# Addresses of one page as readers may open it, after the host's origin.
ADDRESSES = [
    "/posts/2020/notes/",
    "/posts/2020/notes",  # no trailing slash: another key, as the browser says
    "/posts/2020/notes/?utm_source=feed#comments",
    "/2020/中文/",
    '/a b/"q"<x>`{y}|^\'~!$&()*+,;=:@[]',
    "/a/./b/../c/%2e%2E/d",
    "/%7e%zz/100%",
    "",
    "//double//slashes//",
    "/emoji/😀/",
]


def host_page(service: str, site: str) -> str:
    return (
        "<!doctype html><html><head><meta charset=utf-8><title>A page</title></head><body>"
        f'<div id="comments" data-comments data-site="{site}"></div>'
        f'<script src="{service}/static/comments/embed.js" async></script></body></html>'
    )


@pytest.fixture
def blog(live_server, transactional_db):
    """A host site on 127.0.0.1 whose every page is an article embedding the widget without a
    ``data-key``; its origin."""
    html = host_page(live_server.url, "moved").encode()

    def app(environ, start_response):
        start_response("200 OK", [("Content-Type", "text/html; charset=utf-8")])
        return [html]

    server = make_host_server(app, "127.0.0.1", 0)
    origin = f"http://127.0.0.1:{server.server_port}"
    SiteFactory(key="moved", allowed_origins=[origin])
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield origin
    server.shutdown()
    server.server_close()


def test_the_widgets_default_key_is_the_imports_page_key_at_every_address(blog, page):
    for address in (blog + a for a in ADDRESSES):
        page.goto(address)
        frame = page.locator("#comments iframe")
        expect(frame).to_have_count(1)
        asked = parse_qs(urlsplit(frame.get_attribute("src") or "").query)["key"][0]
        assert asked == page_key(address), address


def test_an_imported_thread_moved_to_a_new_domain_shows_on_its_new_page_without_a_data_key(blog, page):
    call_command(
        "import_comments",
        fixture_path("disqus-moved.xml"),
        "--site=moved",
        "--format=disqus",
        "--key-from=path",
        f"--map-url=https://old.example.com/={blog}/",
        f"--map-url=https://old.example.com/blog/={blog}/posts/",
        stdout=io.StringIO(),
    )
    page.goto(f"{blog}/posts/2020/notes/?utm_source=feed#comments")
    expect(page.frame_locator("#comments iframe").locator("body")).to_contain_text("A note on the Hugo notes.")
    page.goto(f"{blog}/2019/01/05/hello.html")
    frame = page.frame_locator("#comments iframe")
    expect(frame.locator("body")).to_contain_text("Welcome to the Jekyll post.")
    expect(frame.locator("body")).to_contain_text("A reply on the Jekyll post.")

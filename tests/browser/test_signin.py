"""Signing in on the service itself, in a real browser: a static page on another origin with
only the two embed tags (no server of its own to sign an SSO payload), a reader who clicks
"Sign in", asks for a link in the window that opens, opens the link from the email the real
SMTP server received, and comes back to the discussion signed in, to post a comment."""

from __future__ import annotations

import re
import threading
import time

import pytest
from playwright.sync_api import expect

from comments import services
from comments.models import ApiToken, Comment, Site
from comments.sso import sign_payload
from demo.management.commands.demo_host import make_host_server
from tests.browser.conftest import assert_seen_by_a_person, click, type_into
from tests.factories import SiteFactory, UserFactory
from tests.smtp_server import smtp_server  # noqa: F401  (fixture)

LINK = re.compile(r"https?://\S+/auth/email/link\?token=\S+")


def serve_static_page(live_server, *, sso: str = "", **site):
    """A static page on 127.0.0.1 (the service is on localhost) with the two tags and nothing
    else (``sso``: a payload the page was rendered with, as ``data-sso``), its site allowing
    that origin; returns the page's URL and the server."""

    def app(environ, start_response):
        attribute = f" data-sso='{sso}'" if sso else ""
        html = (
            "<!doctype html><html lang='en'><head><meta charset='utf-8'><title>A static blog</title></head>"
            "<body><h1>A post on a static blog</h1><p>Words.</p>"
            f"<div data-comments data-site='static' data-key='post-1'{attribute}></div>"
            f"<script src='{live_server.url}/static/comments/embed.js' async></script></body></html>"
        )
        start_response("200 OK", [("Content-Type", "text/html; charset=utf-8")])
        return [html.encode()]

    server = make_host_server(app, "127.0.0.1", 0)
    origin = f"http://127.0.0.1:{server.server_port}"
    SiteFactory(key="static", name="Static blog", allowed_origins=[origin], **site)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return f"{origin}/post-1", server


@pytest.fixture
def static_host(live_server, transactional_db):
    """A static blog: no server to sign an SSO payload, so its site allows email alone."""
    url, server = serve_static_page(live_server, sso_secret="", signin_sso=False)
    yield url
    server.shutdown()
    server.server_close()


def test_a_reader_signs_in_by_email_link_in_the_window_and_comments(
    page, context, live_server, public_url, static_host, smtp_server, shot
):
    page.goto(static_host)
    widget = page.frame_locator("iframe")
    sign_in = widget.get_by_role("button", name="Sign in")

    with context.expect_page() as opened:
        click(sign_in)
    window = opened.value
    window.wait_for_load_state()
    assert window.url.startswith(f"{live_server.url}/auth/?site=static")  # the service's own origin
    type_into(window.get_by_label("Email address"), "ada@example.com")
    type_into(window.get_by_label("Your name, shown with your comments"), "Ada Lovelace")
    click(window.get_by_role("button", name="Email me a sign-in link"))
    assert_seen_by_a_person(window.get_by_role("heading", name="Check your email"))
    shot(window, "window-waiting")

    (message,) = smtp_server.wait_for(1)
    (link,) = LINK.findall(message.get_content())
    # The reader's mail program opens the link in a tab of its own, in the same browser.
    tab = context.new_page()
    tab.goto(link)
    assert_seen_by_a_person(tab.get_by_role("heading", name="You are signed in"))
    # The waiting window handed the token on and closed (maybe before the tab's load ended).
    for _ in range(100):
        if window.is_closed():
            break
        tab.wait_for_timeout(100)
    assert window.is_closed(), "the sign-in window stayed open"

    me = widget.locator("#cw-me")
    assert_seen_by_a_person(me)
    expect(me).to_contain_text("Signed in as Ada Lovelace (via email)")
    expect(widget.get_by_role("button", name="Sign in")).to_be_hidden()
    page.bring_to_front()
    type_into(widget.get_by_label("Your comment"), "Signed in by email, no host server needed.")
    click(widget.get_by_role("button", name="Post"))
    posted = widget.locator(".cw-c", has_text="Signed in by email, no host server needed.")
    assert_seen_by_a_person(posted)
    expect(posted).to_contain_text("Ada Lovelace")
    shot(page, "signed-in-and-posted")

    comment = Comment.objects.select_related("author").get()
    assert comment.author.email == "ada@example.com"
    assert [p for p in page.problems if "favicon" not in p] == []

    assert ApiToken.objects.filter(user=comment.author).count() == 1
    click(widget.get_by_role("button", name="Sign out"))
    assert_seen_by_a_person(widget.get_by_role("button", name="Sign in"))
    # Signing out revoked the token on the service, not only in the frame's memory.
    for _ in range(50):
        if not ApiToken.objects.filter(user=comment.author).exists():
            break
        page.wait_for_timeout(100)
    assert not ApiToken.objects.filter(user=comment.author).exists(), "the token outlived the sign-out"


def test_a_token_from_any_window_but_the_one_the_frame_opened_is_refused(page, context, static_host):
    """Only the sign-in window the frame opened may hand it a token: a message of the service's
    own origin from elsewhere (here the frame itself), even one carrying a good token of
    another reader, signs nobody in."""
    mallory = UserFactory(display_name="Mallory")
    raw, _ = services.token_issue(user=mallory, site=Site.objects.get(key="static"))
    page.goto(static_host)
    widget = page.frame_locator("iframe")
    with context.expect_page():
        click(widget.get_by_role("button", name="Sign in"))  # the frame's own window is open
    frame = next(f for f in page.frames if "/embed/" in f.url)
    signed_in = frame.evaluate(
        """async (token) => {
            const forged = {type: 'comments:signin', site: 'static', token, via: 'email',
                            user: {id: 1, name: 'Mallory', avatar: null}};
            // Messages arrive in order: once the probe is here, the forged one was handled.
            const handled = new Promise((done) => window.addEventListener('message', (e) => e.data === 'probe' && done()));
            window.postMessage(forged, location.origin);
            window.postMessage('probe', location.origin);
            await handled;
            return !document.getElementById('cw-me').hidden;
        }""",
        raw,
    )
    assert signed_in is False
    expect(widget.locator("#cw-me")).to_be_hidden()


def test_the_hosts_sso_wins_on_a_site_that_allows_email_too(page, live_server, transactional_db):
    secret = "static-sso-secret"
    payload = sign_payload(secret, {"id": "host-7", "name": "Grace Hopper", "exp": int(time.time()) + 600})
    url, server = serve_static_page(live_server, sso=payload, sso_secret=secret)
    try:
        page.goto(url)
        widget = page.frame_locator("iframe")
        me = widget.locator("#cw-me")
        assert_seen_by_a_person(me)
        expect(me).to_contain_text("Signed in as Grace Hopper")
        expect(me).not_to_contain_text("via")
        expect(widget.get_by_role("button", name="Sign in")).to_be_hidden()
    finally:
        server.shutdown()
        server.server_close()

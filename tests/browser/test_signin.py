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


def serve_static_page(live_server, *, sso: str = "", host: str = "127.0.0.1", key: str = "static", **site):
    """A static blog on ``host`` (the service is on localhost: another site) with the two tags
    on each page and nothing else, each page's key its path (``sso``: a payload the pages were
    rendered with, as ``data-sso``), its site (``key``) allowing that origin; returns the URL
    of its page ``/post-1`` and the server."""

    def app(environ, start_response):
        attribute = f" data-sso='{sso}'" if sso else ""
        page_key = environ["PATH_INFO"].strip("/") or "post-1"
        html = (
            "<!doctype html><html lang='en'><head><meta charset='utf-8'><title>A static blog</title></head>"
            f"<body><h1>A post on a static blog: {page_key}</h1><p>Words.</p>"
            f"<div data-comments data-site='{key}' data-key='{page_key}'{attribute}></div>"
            f"<script src='{live_server.url}/static/comments/embed.js' async></script></body></html>"
        )
        start_response("200 OK", [("Content-Type", "text/html; charset=utf-8")])
        return [html.encode()]

    server = make_host_server(app, host, 0)
    origin = f"http://{host}:{server.server_port}"
    SiteFactory(key=key, name="Static blog", allowed_origins=[origin], **site)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return f"{origin}/post-1", server


@pytest.fixture
def static_host(live_server, transactional_db):
    """A static blog: no server to sign an SSO payload, so its site allows email alone."""
    url, server = serve_static_page(live_server, sso_secret="", signin_sso=False)
    yield url
    server.shutdown()
    server.server_close()


def sign_in_by_email(page, context, live_server, smtp_server, shot=None):
    """Click "Sign in" in the widget on ``page``, ask for a link in the window, open the link
    from the e-mail in a tab of its own, as a mail program does; the window closes."""
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
    if shot:
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
    tab.close()


def sign_out(page, token: ApiToken) -> None:
    """Click "Sign out" in the widget on ``page``: the frame shows "Sign in" again, and the
    token is revoked on the service, not only forgotten in the frame's memory."""
    widget = page.frame_locator("iframe")
    click(widget.get_by_role("button", name="Sign out"))
    assert_seen_by_a_person(widget.get_by_role("button", name="Sign in"))
    for _ in range(50):
        if not ApiToken.objects.filter(pk=token.pk).exists():
            break
        page.wait_for_timeout(100)
    assert not ApiToken.objects.filter(pk=token.pk).exists(), "the token outlived the sign-out"


def test_a_reader_signs_in_by_email_link_in_the_window_and_comments(
    page, context, live_server, public_url, static_host, smtp_server, shot
):
    page.goto(static_host)
    widget = page.frame_locator("iframe")
    sign_in_by_email(page, context, live_server, smtp_server, shot)

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
    sign_out(page, ApiToken.objects.get(user=comment.author))


def test_a_reader_stays_signed_in_on_that_blog_alone_until_they_sign_out(
    page, context, live_server, public_url, static_host, smtp_server, shot
):
    """The frame keeps the sign-in in cookies partitioned under the blog's site (CHIPS): a
    reload, another post and a new tab keep the reader; another blog, under another site,
    shows the frame nothing of it; "Sign out" ends it everywhere."""
    other_url, other_server = serve_static_page(
        live_server, host="127.0.0.2", key="other", sso_secret="", signin_sso=False
    )
    try:
        page.goto(static_host)
        sign_in_by_email(page, context, live_server, smtp_server)
        widget = page.frame_locator("iframe")
        expect(widget.locator("#cw-me")).to_contain_text("Signed in as Ada Lovelace (via email)")
        token = ApiToken.objects.get()

        def signed_in_as_ada(tab):
            me = tab.frame_locator("iframe").locator("#cw-me")
            assert_seen_by_a_person(me)
            expect(me).to_contain_text("Signed in as Ada Lovelace (via email)")
            expect(tab.frame_locator("iframe").get_by_role("button", name="Sign in")).to_be_hidden()
            assert_seen_by_a_person(tab.frame_locator("iframe").get_by_label("Your comment"))

        page.reload()
        signed_in_as_ada(page)
        page.goto(static_host.replace("/post-1", "/post-2"))
        signed_in_as_ada(page)
        type_into(widget.get_by_label("Your comment"), "Still signed in on another post.")
        click(widget.get_by_role("button", name="Post"))
        assert_seen_by_a_person(widget.locator(".cw-c", has_text="Still signed in on another post."))
        assert Comment.objects.get().subject.key == "post-2"

        new_tab = context.new_page()
        new_tab.goto(static_host.replace("/post-1", "/post-3"))
        signed_in_as_ada(new_tab)
        shot(new_tab, "still-signed-in-in-a-new-tab")

        # Another blog: a stranger there, and its frame does not even ask.
        asked = []
        new_tab.on("request", lambda request: asked.append(request.url) if "/auth/session" in request.url else None)
        new_tab.goto(other_url)
        stranger = new_tab.frame_locator("iframe")
        assert_seen_by_a_person(stranger.get_by_role("button", name="Sign in"))
        expect(stranger.locator("#cw-me")).to_be_hidden()
        new_tab.wait_for_timeout(500)  # a resume would have been asked at load
        assert asked == []
        shot(new_tab, "a-stranger-on-another-blog")
        new_tab.close()

        sign_out(page, token)
        page.reload()
        assert_seen_by_a_person(page.frame_locator("iframe").get_by_role("button", name="Sign in"))
        expect(page.frame_locator("iframe").locator("#cw-me")).to_be_hidden()
    finally:
        other_server.shutdown()
        other_server.server_close()


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

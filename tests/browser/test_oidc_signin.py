"""Signing in with an OpenID Connect provider, in a real browser: a static page on another
origin with only the two embed tags, a reader who clicks "Sign in", picks the provider in the
window that opens, types their name and password into the provider's own login form (a real
provider, tests/oidc_provider, on loopback), consents, and is back in the discussion signed in,
to post a comment."""

from __future__ import annotations

import hashlib
import secrets

import pytest
import requests
from allauth.socialaccount.models import SocialAccount
from playwright.sync_api import expect

from accounts.models import SignInHandoff
from comments.models import ApiToken, Comment
from tests.browser.conftest import assert_seen_by_a_person, click, type_into
from tests.browser.test_signin import serve_static_page
from tests.oidc_provider.fixtures import oidc_provider, oidc_providers  # noqa: F401  (fixtures)
from tests.oidc_provider.provider import PASSWORD, USERNAME, send_coop


@pytest.fixture
def static_host(live_server, transactional_db, oidc_providers):
    """A static blog whose readers sign in with the test provider (or by email)."""
    url, server = serve_static_page(live_server, sso_secret="", signin_sso=False, signin_oidc=["test"])
    yield url
    server.shutdown()
    server.server_close()


def open_window(page, context, live_server):
    page.goto(page.static_host)
    widget = page.frame_locator("iframe")
    with context.expect_page() as opened:
        click(widget.get_by_role("button", name="Sign in"))
    window = opened.value
    window.wait_for_load_state()
    assert window.url.startswith(f"{live_server.url}/auth/?site=static")
    return widget, window


def at_the_provider(window, oidc_provider):
    click(window.get_by_role("link", name="Continue with Test ID"))
    window.wait_for_url(f"{oidc_provider.issuer.rsplit('/o', 1)[0]}/login/**")
    assert_seen_by_a_person(window.get_by_role("heading", name="Sign in to the test provider"))
    type_into(window.get_by_label("Username"), USERNAME)
    type_into(window.get_by_label("Password"), PASSWORD)
    click(window.get_by_role("button", name="Sign in"))
    assert_seen_by_a_person(window.get_by_role("heading", name="Authorize Comment service?"))


def test_a_reader_signs_in_with_the_provider_in_the_window_and_comments(
    page, context, live_server, static_host, oidc_provider, shot
):
    page.static_host = static_host
    widget, window = open_window(page, context, live_server)
    shot(window, "window-choices")
    at_the_provider(window, oidc_provider)
    shot(window, "provider-consent")
    with window.expect_event("close"):
        click(window.get_by_role("button", name="Authorize"))

    me = widget.locator("#cw-me")
    assert_seen_by_a_person(me)
    expect(me).to_contain_text("Signed in as Ada Lovelace (via Test ID)")
    expect(widget.get_by_role("button", name="Sign in")).to_be_hidden()
    type_into(widget.get_by_label("Your comment"), "Signed in with an OpenID Connect provider.")
    click(widget.get_by_role("button", name="Post"))
    posted = widget.locator(".cw-c", has_text="Signed in with an OpenID Connect provider.")
    assert_seen_by_a_person(posted)
    expect(posted).to_contain_text("Ada Lovelace")
    shot(page, "signed-in-and-posted")

    comment = Comment.objects.select_related("author").get()
    assert SocialAccount.objects.get(provider="test").user_id == comment.author_id
    assert [p for p in page.problems if "favicon" not in p] == []


def test_a_provider_that_cuts_the_window_off_still_signs_the_reader_in(
    page, context, live_server, static_host, oidc_provider, shot
):
    """Its pages send Cross-Origin-Opener-Policy: same-origin, as some providers' do, so the
    window loses the frame that opened it; the frame takes the sign-in with its secret."""
    page.static_host = static_host
    send_coop(oidc_provider, True)
    try:
        widget, window = open_window(page, context, live_server)
        at_the_provider(window, oidc_provider)
        click(window.get_by_role("button", name="Authorize"))
        me = widget.locator("#cw-me")
        assert_seen_by_a_person(me)
        expect(me).to_contain_text("Signed in as Ada Lovelace (via Test ID)")
    finally:
        send_coop(oidc_provider, False)
    for _ in range(50):
        if window.is_closed():
            break
        page.wait_for_timeout(100)
    assert window.is_closed(), "the window stayed open"
    type_into(widget.get_by_label("Your comment"), "Signed in though the window was cut off.")
    click(widget.get_by_role("button", name="Post"))
    assert_seen_by_a_person(widget.locator(".cw-c", has_text="Signed in though the window was cut off."))
    assert ApiToken.objects.count() == 1


def test_a_refused_consent_ends_in_the_window_and_signs_nobody_in(
    page, context, live_server, static_host, oidc_provider, shot
):
    page.static_host = static_host
    widget, window = open_window(page, context, live_server)
    at_the_provider(window, oidc_provider)
    click(window.get_by_role("button", name="Cancel"))
    message = window.get_by_role("alert")
    assert_seen_by_a_person(message)
    expect(message).to_contain_text("You did not let Test ID sign you in, so nobody was signed in.")
    assert window.url.startswith(live_server.url)
    shot(window, "refused")
    expect(widget.get_by_role("button", name="Sign in")).to_be_visible()
    expect(widget.locator("#cw-me")).to_be_hidden()
    assert not ApiToken.objects.exists()


def test_an_attackers_handoff_never_yields_the_readers_sign_in(page, context, live_server, static_host, oidc_provider):
    """Issue 33, F1, as an attacker tries it: a secret of their own, its SHA-256 named as the
    hand-off, once in a link the reader opens, once posted to a window the attacker's page
    opened on the service. The reader signs in at the provider both times; the attacker's
    secret takes nothing."""
    secret = secrets.token_hex(32)
    name = hashlib.sha256(secret.encode()).hexdigest()
    send_coop(oidc_provider, True)  # the case the hand-off exists for: the window cut off
    try:
        page.goto(f"{live_server.url}/auth/with/test?site=static&lang=en&handoff={name}")
        signed_in_at_the_provider(page)
        assert take(live_server, secret).status_code == 204

        page.goto(static_host)  # any page of another origin will do
        # The window keeps the reader's sign-in (accounts.remembered) and hands it back at once,
        # but to a frame of the service's own origin alone: the attacker's page hears nothing.
        heard = page.evaluate(
            """(url) => new Promise((done) => {
                const heard = [];
                window.addEventListener('message', (e) => { if (e.data && e.data.token) heard.push(e.data); });
                const w = window.open(url, 'comments-signin');
                const check = setInterval(() => {
                    if (w.closed) { clearInterval(check); setTimeout(() => done(heard), 300); }
                }, 50);
            })""",
            f"{live_server.url}/auth/?site=static&lang=en&handoff={name}",
        )
        assert heard == []
        assert take(live_server, secret).status_code == 204
        # A browser the window never signed in: the reader goes to the provider in it.
        context.clear_cookies()
        with context.expect_page() as opened:
            page.evaluate(
                """([url, name]) => {
                    const w = window.open(url, 'comments-signin');
                    const tell = () => { try { w.postMessage({type: 'comments:handoff', name}, '*'); } catch (e) {} };
                    setInterval(tell, 50);
                }""",
                [f"{live_server.url}/auth/?site=static&lang=en&handoff={name}", name],
            )
        window = opened.value
        window.wait_for_load_state()
        click(window.get_by_role("link", name="Continue with Test ID"))
        signed_in_at_the_provider(window)
    finally:
        send_coop(oidc_provider, False)
    assert take(live_server, secret).status_code == 204
    assert not SignInHandoff.objects.exists()


def signed_in_at_the_provider(window):
    """Log in at the provider if it asks, authorize, and wait for the service's page."""
    login = window.get_by_role("heading", name="Sign in to the test provider")
    consent = window.get_by_role("heading", name="Authorize Comment service?")
    expect(login.or_(consent)).to_be_visible()
    if login.is_visible():
        type_into(window.get_by_label("Username"), USERNAME)
        type_into(window.get_by_label("Password"), PASSWORD)
        click(window.get_by_role("button", name="Sign in"))
    assert_seen_by_a_person(consent)
    click(window.get_by_role("button", name="Authorize"))
    expect(window.get_by_role("heading", name="You are signed in")).to_be_attached()


def take(live_server, secret):
    return requests.post(f"{live_server.url}/api/v1/auth/handoff", json={"secret": secret}, timeout=10)

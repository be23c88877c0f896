"""Staying signed in (``accounts.remembered``, security.md "Staying signed in"): the frame keeps a
window's sign-in in partitioned cookies and resumes it; the window hands a sign-in back at once.
Each control is attacked as an outsider would: a page of another origin asking for the kept
token, one site's cookie replayed under another site's name, a revoked token, a password's
token, a tampered cookie."""

from __future__ import annotations

import json
import re
from typing import Any

import pytest
from django.test import Client

from accounts import remembered
from comments import services
from comments.models import ApiToken, Site

from ..factories import SiteFactory, UserFactory
from ..smtp_server import smtp_server  # noqa: F401  (fixture)
from .test_email_link import link_in

RESULT = re.compile(r'<script id="si-result" type="application/json">(.*?)</script>', re.S)
FRAME: dict[str, Any] = {"HTTP_SEC_FETCH_SITE": "same-origin"}  # what a browser sends with the frame's fetch


@pytest.fixture
def site(db):
    return SiteFactory(key="blog", name="The Blog")


def issued(site: Site | None, name: str = "Ada") -> str:
    raw, _ = services.token_issue(user=UserFactory(display_name=name), site=site)
    return raw


def keep(browser: Client, raw: str, via: str = "email", **headers):
    return browser.post(
        "/api/v1/auth/session",
        {"via": via},
        content_type="application/json",
        HTTP_AUTHORIZATION=f"Bearer {raw}",
        **headers,
    )


def resume(browser: Client, site_key: str = "blog", **headers):
    return browser.post("/api/v1/auth/session/resume", {"site": site_key}, content_type="application/json", **headers)


def set_cookie_lines(response) -> dict[str, str]:
    return {name: morsel.OutputString() for name, morsel in response.cookies.items()}


def test_a_kept_sign_in_is_resumed_by_the_frame_on_a_later_page(site):
    raw = issued(site)
    browser = Client()
    kept = keep(browser, raw, **FRAME)
    assert kept.status_code == 204, kept.content

    lines = set_cookie_lines(kept)
    session, signed = lines["cw-session-blog"], lines["cw-signed-blog"]
    for line in (session, signed):
        assert "Partitioned" in line and "Secure" in line and "SameSite=None" in line
    assert "HttpOnly" in session and "Path=/api/v1/auth/session" in session
    assert "HttpOnly" not in signed and "Path=/;" in signed and signed.startswith("cw-signed-blog=1;")
    life = int(re.search(r"Max-Age=(\d+)", session).group(1))
    assert 29 * 86400 < life <= 30 * 86400  # the token's own life (COMMENTS_TOKEN_TTL)

    resumed = resume(browser, **FRAME)
    assert resumed.status_code == 200, resumed.content
    body = resumed.json()
    assert body["token"] == raw and body["via"] == "email" and body["via_label"] == "(via email)"
    assert body["user"]["name"] == "Ada"


def test_the_reader_resumes_in_their_language_and_with_their_provider(site):
    browser = Client()
    keep(browser, issued(site), via="github", **FRAME)
    answer = browser.post(
        "/api/v1/auth/session/resume", {"site": "blog", "lang": "zh-hans"}, content_type="application/json", **FRAME
    )
    assert answer.status_code == 200
    assert answer.json()["via"] == "github" and answer.json()["via_label"] == "（通过 github）"


def test_a_page_of_another_origin_neither_keeps_nor_resumes_a_sign_in(site):
    """The host page runs under the same top-level site as the frame, so its fetch to the
    service carries the frame's partitioned cookies: the service itself must refuse it."""
    raw = issued(site)
    browser = Client()
    for headers in ({"HTTP_SEC_FETCH_SITE": "cross-site"}, {"HTTP_ORIGIN": "https://host.example"}):
        refused = keep(browser, raw, **headers)
        assert refused.status_code == 403 and refused.json()["error"]["code"] == "permission_denied"
        assert "cw-session-blog" not in refused.cookies
    keep(browser, raw, **FRAME)
    for headers in ({"HTTP_SEC_FETCH_SITE": "same-site"}, {"HTTP_ORIGIN": "http://evil.example"}):
        refused = resume(browser, **headers)
        assert refused.status_code == 403
        assert raw not in refused.content.decode()


def test_one_sites_kept_sign_in_replayed_under_another_sites_name_is_refused(site):
    other = SiteFactory(key="other", name="Other")
    raw = issued(site)
    browser = Client()
    browser.cookies["cw-session-other"] = f"email.{raw}"
    refused = resume(browser, "other", **FRAME)
    assert refused.status_code == 401 and refused.json()["error"]["code"] == "not_authenticated"
    assert raw not in refused.content.decode()
    assert "Max-Age=0" in set_cookie_lines(refused)["cw-session-other"]  # the stale cookie goes
    assert other.pk  # the site exists: the refusal is the token's site, not an unknown key


def test_a_sign_out_revokes_the_token_and_removes_the_kept_sign_in(site):
    raw = issued(site)
    browser = Client()
    keep(browser, raw, **FRAME)
    signed_out = browser.delete("/api/v1/auth/session", HTTP_AUTHORIZATION=f"Bearer {raw}", **FRAME)
    assert signed_out.status_code == 204
    assert not ApiToken.objects.exists()
    lines = set_cookie_lines(signed_out)
    assert "Max-Age=0" in lines["cw-session-blog"] and "Partitioned" in lines["cw-session-blog"]
    assert "Max-Age=0" in lines["cw-signed-blog"]

    # A copy of the cookie kept elsewhere resumes nothing.
    copy = Client()
    copy.cookies["cw-session-blog"] = f"email.{raw}"
    assert resume(copy, **FRAME).status_code == 401


def test_a_password_token_which_acts_on_every_site_is_never_kept_in_a_frame(site):
    refused = keep(Client(), issued(None), **FRAME)
    assert refused.status_code == 403
    assert "cw-session-blog" not in refused.cookies


@pytest.mark.parametrize(
    "value", ["", "email", "email.", "EMAIL.abcdefghijklmnopqrstuvwxyz", "email.short", "a.b.c", "email." + "x" * 300]
)
def test_a_tampered_cookie_resumes_nothing_and_never_fails(site, value):
    browser = Client()
    browser.cookies["cw-session-blog"] = value
    assert resume(browser, **FRAME).status_code == 401


def test_bad_input_is_answered_in_the_contracts_shape(site):
    raw = issued(site)
    assert keep(Client(), raw, via="Email Link!", **FRAME).status_code == 400
    extra = Client().post(
        "/api/v1/auth/session",
        {"via": "email", "keep": True},
        content_type="application/json",
        HTTP_AUTHORIZATION=f"Bearer {raw}",
        **FRAME,
    )
    assert extra.status_code == 400 and extra.json()["error"]["fields"] == {"keep": ["Unknown field."]}
    assert keep(Client(), "not-a-token", **FRAME).status_code == 401
    assert resume(Client(), "no-such-site", **FRAME).status_code == 404


def test_the_window_hands_a_sign_in_back_at_once_until_its_token_is_revoked(site, smtp_server):
    browser = Client()
    browser.post("/auth/email", {"site": "blog", "lang": "en", "email": "ada@example.com", "name": "Ada"})
    done = browser.get(link_in(smtp_server.wait_for(1)[0]))
    token = json.loads(RESULT.search(done.content.decode()).group(1))["token"]
    window_cookie = done.cookies["cw-window-blog"]
    assert window_cookie["httponly"] and window_cookie["samesite"] == "Lax" and window_cookie["path"] == "/auth/"

    again = browser.get("/auth/", {"site": "blog", "lang": "en"})
    result = json.loads(RESULT.search(again.content.decode()).group(1))
    assert result["token"] == token and result["via"] == "email" and result["via_label"] == "(via email)"
    assert len(smtp_server.wait_for(1)) == 1  # no second e-mail

    # Another site's window knows nobody: the kept sign-in is this site's alone.
    SiteFactory(key="other", name="Other")
    assert "si-result" not in browser.get("/auth/", {"site": "other"}).content.decode()

    services.token_revoke(token=ApiToken.objects.get())
    after = browser.get("/auth/", {"site": "blog"})
    assert "si-result" not in after.content.decode() and 'name="email"' in after.content.decode()
    assert after.cookies["cw-window-blog"]["max-age"] == 0


def test_a_window_cookie_holding_another_sites_token_signs_nobody_in(site):
    SiteFactory(key="other", name="Other")
    browser = Client()
    browser.cookies["cw-window-other"] = f"email.{issued(site)}"
    page = browser.get("/auth/", {"site": "other"})
    assert page.status_code == 200 and "si-result" not in page.content.decode()


def test_the_cookie_names_follow_the_site_key(site):
    assert remembered.SESSION_COOKIE.format(site=site.key) == "cw-session-blog"
    raw, _ = services.token_issue(user=UserFactory(), site=SiteFactory(key="with-dash_1", name="Dashed"))
    browser = Client()
    assert keep(browser, raw, **FRAME).status_code == 204
    assert resume(browser, "with-dash_1", **FRAME).status_code == 200

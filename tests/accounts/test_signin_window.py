"""The sign-in window the widget opens (``/auth/``): first party, under a strict CSP, asking
for an email link whose use in a page is bound to the browser that asked; the page the link
opens carries the bearer token for ``signin-popup.js`` to hand to the widget's frame."""

from __future__ import annotations

import json
import re

import pytest
from django.test import Client

from accounts.models import EmailLink
from accounts.views import BROWSER_COOKIE
from comments.services import site_store

from ..factories import SiteFactory
from ..smtp_server import smtp_server  # noqa: F401  (fixture)
from .test_email_link import link_in

RESULT = re.compile(r'<script id="si-result" type="application/json">(.*?)</script>', re.S)


@pytest.fixture
def site(db):
    return SiteFactory(key="blog", name="The Blog")


def assert_strict(response):
    csp = response["Content-Security-Policy"]
    assert "script-src 'self';" in csp and "style-src 'self';" in csp and "unsafe-inline" not in csp
    assert "frame-ancestors 'none'" in csp
    assert response["Cross-Origin-Opener-Policy"] == "unsafe-none"  # the opener keeps its window
    assert response["Cache-Control"] == "no-store"
    html = response.content.decode()
    assert " style=" not in html and "<style" not in html
    assert re.findall(r"<script(?![^>]*\bsrc=)(?![^>]*application/json)[^>]*>", html) == []


def ask(client, site, email="ada@example.com", name="Ada", lang="en"):
    return client.post("/auth/email", {"site": site.key, "lang": lang, "email": email, "name": name})


def test_the_window_offers_the_email_form_of_the_site(site):
    response = Client().get("/auth/", {"site": "blog", "lang": "zh-hans"})
    assert response.status_code == 200
    assert_strict(response)
    html = response.content.decode()
    assert "登录后在 The Blog 发表评论" in html
    assert 'name="email"' in html and 'name="name"' in html


def test_the_link_signs_in_the_browser_that_asked_once(site, smtp_server):
    browser = Client()
    sent = ask(browser, site)
    assert sent.status_code == 200
    assert_strict(sent)
    assert 'id="si-waiting" data-site="blog"' in sent.content.decode()
    assert sent.cookies[BROWSER_COOKIE]["httponly"] and sent.cookies[BROWSER_COOKIE]["samesite"] == "Lax"
    link = link_in(smtp_server.wait_for(1)[0])

    done = browser.get(link)
    assert done.status_code == 200
    assert_strict(done)
    assert done["Referrer-Policy"] == "no-referrer"
    result = json.loads(RESULT.search(done.content.decode()).group(1))
    assert result["type"] == "comments:signin" and result["site"] == "blog" and result["via"] == "email"
    assert result["user"]["name"] == "Ada" and result["via_label"] == "(via email)"
    me = Client().get("/api/v1/me", HTTP_AUTHORIZATION=f"Bearer {result['token']}")
    assert me.json() == result["user"]

    again = browser.get(link)
    assert again.status_code == 401
    assert "used already" in again.content.decode()
    assert "si-result" not in again.content.decode()


def test_another_browser_cannot_use_the_link_nor_spend_it(site, smtp_server):
    ask(Client(), site)
    link = link_in(smtp_server.wait_for(1)[0])
    elsewhere = Client().get(link)  # a link scanner, or someone the link was sent on to
    assert elsewhere.status_code == 403
    assert "browser where you asked for it" in elsewhere.content.decode()
    assert EmailLink.objects.get().used_at is None


def test_a_forged_or_expired_link_says_so_in_the_readers_language(site, smtp_server):
    browser = Client()
    ask(browser, site, lang="zh-hans")
    link = link_in(smtp_server.wait_for(1)[0])
    forged = browser.get("/auth/email/link", {"token": "forged", "lang": "zh-hans"})
    assert forged.status_code == 401 and "此登录链接无效" in forged.content.decode()
    EmailLink.objects.update(expires_at="2000-01-01T00:00:00Z")
    expired = browser.get(link + "&lang=zh-hans")
    assert expired.status_code == 401 and "此登录链接已过期" in expired.content.decode()


def test_bad_input_is_shown_beside_its_field_and_sends_nothing(site, smtp_server):
    response = ask(Client(), site, email="nope")
    assert response.status_code == 400
    assert_strict(response)
    assert 'class="si-err" role="alert"' in response.content.decode()
    assert smtp_server.messages == []


def test_a_site_that_does_not_allow_email_offers_no_form_and_refuses(site, smtp_server):
    site.signin_email = False
    site_store(site=site)
    assert 'name="email"' not in Client().get("/auth/", {"site": "blog"}).content.decode()
    refused = ask(Client(), site)
    assert refused.status_code == 403
    assert "does not offer sign-in by email" in refused.content.decode()
    assert smtp_server.messages == []


def test_an_unknown_site_is_a_page_not_a_crash(db):
    response = Client().get("/auth/", {"site": "nowhere"})
    assert response.status_code == 404
    assert_strict(response)

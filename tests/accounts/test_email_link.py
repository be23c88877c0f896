"""API.md, "Sign-in by email": a one-time link sent through a real SMTP server on loopback
(``tests/smtp_server.py``), read from the message received and followed; expired, used and
forged links refused in the contract's shape; limits per address and per client; a site that
does not allow email refuses."""

from __future__ import annotations

import re
from datetime import timedelta
from urllib.parse import parse_qs, urlsplit

import pytest
from django.utils import timezone

from accounts.models import EmailAccount, EmailLink
from comments.models import User
from comments.services import site_store

from ..api.conftest import API, assert_error, assert_user_shape
from ..factories import SiteFactory
from ..smtp_server import smtp_server  # noqa: F401  (fixture)

LINK = re.compile(r"https?://\S+/auth/email/link\?token=\S+")


def ask(api, site, email="ada@example.com", name="Ada", **extra):
    return api.post(f"{API}/auth/email", {"site": site.key, "email": email, "name": name, **extra}, format="json")


def link_in(message) -> str:
    """The sign-in link of a received message, as a reader would click it."""
    (link,) = LINK.findall(message.get_content())
    return link


def token_of(link: str) -> str:
    return parse_qs(urlsplit(link).query)["token"][0]


def verify(api, token, verifier):
    return api.post(f"{API}/auth/email/verify", {"token": token, "verifier": verifier}, format="json")


def verifier_of(asked) -> str:
    return asked.json()["verifier"]


@pytest.fixture
def site(db):
    return SiteFactory(key="blog", name="The Blog")


def test_the_link_in_the_email_signs_the_reader_in_once(api, site, smtp_server):
    response = ask(api, site, email="Ada@Example.com")
    assert response.status_code == 202, response.content
    (message,) = smtp_server.wait_for(1)
    assert smtp_server.recipients() == [["ada@example.com"]]
    assert message["Subject"] == "Your sign-in link for The Blog"
    assert "within 15 minutes" in message.get_content()

    body = verify(api, token_of(link_in(message)), verifier_of(response)).json()
    assert body["via"] == "email"
    assert_user_shape(body["user"])
    assert body["user"]["name"] == "Ada"
    api.credentials(HTTP_AUTHORIZATION=f"Bearer {body['token']}")
    assert api.get(f"{API}/me").json() == body["user"]

    account = EmailAccount.objects.get()
    assert (account.email, account.user_id) == ("ada@example.com", body["user"]["id"])
    assert account.verified_at is not None
    assert User.objects.get(pk=body["user"]["id"]).email == "ada@example.com"

    api.credentials()
    assert_error(verify(api, token_of(link_in(message)), verifier_of(response)), 401, "link_used")


def test_the_same_address_is_the_same_reader_who_keeps_their_name(api, site, smtp_server):
    asked = ask(api, site, name="Ada")
    first = verify(api, token_of(link_in(smtp_server.wait_for(1)[0])), verifier_of(asked)).json()
    asked = ask(api, site, name="Someone else")
    second = verify(api, token_of(link_in(smtp_server.wait_for(2)[1])), verifier_of(asked)).json()
    assert second["user"] == first["user"]
    assert second["token"] != first["token"]
    assert User.objects.filter(email="ada@example.com").count() == 1


def test_an_expired_link_is_refused(api, site, smtp_server):
    asked = ask(api, site)
    token = token_of(link_in(smtp_server.wait_for(1)[0]))
    EmailLink.objects.update(expires_at=timezone.now() - timedelta(seconds=1))
    assert_error(verify(api, token, verifier_of(asked)), 401, "link_expired")
    assert not EmailAccount.objects.exists()


def test_a_forged_link_is_refused(api, site, smtp_server):
    asked = ask(api, site)
    real = token_of(link_in(smtp_server.wait_for(1)[0]))
    for forged in (real[:-1] + ("A" if real[-1] != "A" else "B"), "x" * 43, ""):
        error = assert_error(
            verify(api, forged, verifier_of(asked)),
            400 if forged == "" else 401,
            "invalid" if forged == "" else "not_authenticated",
        )
        assert error["code"] in ("invalid", "not_authenticated")
    assert_error(verify(api, 12345, verifier_of(asked)), 400, "invalid")
    assert verify(api, real, verifier_of(asked)).status_code == 200  # not spent by the forgeries


def test_a_site_that_does_not_allow_email_refuses_links(api, site, smtp_server):
    asked = ask(api, site)
    token = token_of(link_in(smtp_server.wait_for(1)[0]))
    site.signin_email = False
    site_store(site=site)

    assert_error(ask(api, site, email="bob@example.com"), 403, "permission_denied")
    assert_error(verify(api, token, verifier_of(asked)), 403, "permission_denied")  # nor one sent before
    assert len(smtp_server.messages) == 1
    assert not EmailAccount.objects.exists()


def test_links_are_limited_per_address_and_per_client(api, site, smtp_server, settings):
    settings.RATE_LIMITS = {"email_link": (2, 3600), "email_link_client": (3, 3600)}
    assert ask(api, site).status_code == 202
    assert ask(api, site).status_code == 202
    assert_error(ask(api, site), 429, "rate_limited")  # a third to the same address
    assert int(ask(api, site)["Retry-After"]) > 0
    assert ask(api, site, email="bob@example.com").status_code == 202  # the client's third
    assert_error(ask(api, site, email="carol@example.com"), 429, "rate_limited")  # its fourth
    assert sorted(r[0] for r in smtp_server.recipients()) == ["ada@example.com", "ada@example.com", "bob@example.com"]


def test_the_email_is_in_the_language_asked_for(api, site, smtp_server):
    assert ask(api, site, lang="zh-hans").status_code == 202
    (message,) = smtp_server.wait_for(1)
    assert message["Subject"] == "The Blog 的登录链接"
    assert "15 分钟内" in message.get_content()
    assert LINK.search(message.get_content())


@pytest.mark.parametrize(
    "body, field",
    [
        ({"email": "not an address"}, "email"),
        ({"email": 7}, "email"),
        ({"name": ""}, "name"),
        ({"name": None}, "name"),
        ({"name": "\u202e\r\n\u202c"}, "name"),  # nothing visible once kept as a display name
        ({"lang": "fr"}, "lang"),
    ],
)
def test_bad_requests_are_invalid_and_send_nothing(api, site, smtp_server, body, field):
    error = assert_error(ask(api, site, **body), 400, "invalid")
    assert field in error["fields"]
    assert smtp_server.messages == []


def test_an_unknown_site_is_not_found(api, db, smtp_server):
    assert_error(
        api.post(f"{API}/auth/email", {"site": "nowhere", "email": "a@example.com", "name": "A"}, format="json"),
        404,
        "not_found",
    )


def test_a_mail_server_that_refuses_is_unavailable_and_leaves_no_link(api, site, smtp_server):
    smtp_server.refuse_next(1)
    assert_error(ask(api, site), 503, "unavailable")
    assert not EmailLink.objects.exists()


def test_erasing_a_user_forgets_their_address_which_may_sign_in_again_as_someone_new(api, site, smtp_server):
    from portability.services import user_erase

    asked = ask(api, site)
    first = verify(api, token_of(link_in(smtp_server.wait_for(1)[0])), verifier_of(asked)).json()["user"]
    report = user_erase(user=User.objects.get(pk=first["id"]), actor=None)

    assert report.identities_removed == 1
    assert not EmailAccount.objects.exists() and not EmailLink.objects.exists()
    asked = ask(api, site, name="Ada again")
    again = verify(api, token_of(link_in(smtp_server.wait_for(2)[1])), verifier_of(asked)).json()["user"]
    assert again["id"] != first["id"] and again["name"] == "Ada again"


def test_a_link_signs_in_only_the_client_that_asked_for_it(api, site, smtp_server):
    """Issue 33, F3: whoever reads the link (a mail scanner, a forwarded message, a log) but did
    not ask for it signs nobody in with it, through the API as in a page, and the link stays
    good for the one who asked."""
    asked = ask(api, site)
    token = token_of(link_in(smtp_server.wait_for(1)[0]))
    assert_error(verify(api, token, "a-guess-of-the-verifier"), 403, "permission_denied")
    assert_error(api.post(f"{API}/auth/email/verify", {"token": token}, format="json"), 400, "invalid")
    assert not EmailAccount.objects.exists() and EmailLink.objects.get().used_at is None
    assert verify(api, token, verifier_of(asked)).status_code == 200


def test_a_link_asked_for_in_the_sign_in_window_is_refused_through_the_api(api, site, smtp_server):
    """The window's links are bound to its browser's secret cookie, which no script and no API
    client reads: the API refuses them whatever verifier it is sent."""
    from django.test import Client

    assert (
        Client().post("/auth/email", {"site": site.key, "email": "ada@example.com", "name": "Ada"}).status_code == 200
    )
    token = token_of(link_in(smtp_server.wait_for(1)[0]))
    assert_error(verify(api, token, ""), 400, "invalid")
    assert_error(verify(api, token, "x" * 43), 403, "permission_denied")
    assert EmailLink.objects.get().used_at is None


def test_tagged_and_upper_case_forms_of_an_address_count_as_that_address(api, site, smtp_server, settings):
    """Issue 33, F10: ``ada+1@`` and ``ADA+2@`` reach ``ada@``'s mailbox, so they share its limit;
    each link still goes to the address as it was given (lower-cased)."""
    settings.RATE_LIMITS = {"email_link": (2, 3600), "email_link_client": (10, 3600)}
    assert ask(api, site, email="ada+1@example.com").status_code == 202
    assert ask(api, site, email="ADA+2@EXAMPLE.COM").status_code == 202
    assert_error(ask(api, site, email="ada+3@example.com"), 429, "rate_limited")
    assert_error(ask(api, site, email="ada@example.com"), 429, "rate_limited")
    assert ask(api, site, email="bob+1@example.com").status_code == 202  # another mailbox
    assert smtp_server.recipients() == [["ada+1@example.com"], ["ada+2@example.com"], ["bob+1@example.com"]]


@pytest.mark.parametrize("asked_in", ["api", "window"])
def test_the_link_is_on_the_public_address_whatever_host_the_request_names(api, site, smtp_server, settings, asked_in):
    """Issue 33, F12: the link was built from the request's Host header, which its client
    writes; a request naming another host (and port) got a link to it mailed to the reader."""
    settings.COMMENTS_PUBLIC_URL = "https://comments.example.com"
    settings.ALLOWED_HOSTS = [*settings.ALLOWED_HOSTS, "evil.example"]
    form = {"site": site.key, "email": "ada@example.com", "name": "Ada"}
    if asked_in == "api":
        asked = api.post(f"{API}/auth/email", form, format="json", HTTP_HOST="evil.example:6666")
        assert asked.status_code == 202, asked.content
    else:
        from django.test import Client

        assert Client().post("/auth/email", form, HTTP_HOST="evil.example:6666").status_code == 200
    (message,) = smtp_server.wait_for(1)
    assert link_in(message).startswith("https://comments.example.com/auth/email/link?token=")
    assert "evil.example" not in message.as_string()


def test_a_site_name_with_a_line_break_makes_a_one_line_subject_and_the_link_goes(api, site, smtp_server):
    site.name = "The Blog\r\nBcc: victim@example.com"
    site_store(site=site, fields=["name"])
    assert ask(api, site).status_code == 202
    (message,) = smtp_server.wait_for(1)
    assert message["Subject"] == "Your sign-in link for The Blog Bcc: victim@example.com"
    assert message["Bcc"] is None and smtp_server.recipients() == [["ada@example.com"]]

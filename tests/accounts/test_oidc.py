"""Signing in with an OpenID Connect provider, over HTTP against a real provider on loopback
(tests/oidc_provider: django-oauth-toolkit, PKCE required): a client that follows redirects
between the service and the provider as a browser does, types the provider's login form and
answers its consent form; the flow ends in the sign-in window's page with the bearer token, or
a page that says why nobody was signed in."""

from __future__ import annotations

import hashlib
import json
import re
import secrets
from html.parser import HTMLParser
from urllib.parse import parse_qs, urlencode, urlsplit

import pytest
import requests
from allauth.socialaccount.models import SocialAccount

from accounts.models import EmailAccount, SignInHandoff
from comments.avatars import avatar_path
from comments.models import ApiToken, Comment, User
from comments.services import site_store
from portability.services import user_erase

from ..factories import SiteFactory, SubjectFactory, UserFactory
from ..oidc_provider.fixtures import PROVIDER_NAME, oidc_provider, oidc_providers  # noqa: F401  (fixtures)
from ..oidc_provider.provider import PASSWORD, PICTURE, USERNAME
from ..servers import free_port
from ..smtp_server import smtp_server  # noqa: F401  (fixture)
from .test_email_link import link_in, token_of

RESULT = re.compile(r'<script id="si-result" type="application/json">(.*?)</script>', re.S)


class Forms(HTMLParser):
    """The forms of a page: ``[{"action", "fields": {name: value}, "submits": {name: value}}]``."""

    def __init__(self, html: str):
        super().__init__()
        self.forms: list[dict] = []
        self.feed(html)

    def handle_starttag(self, tag, attrs):
        attrs = dict(attrs)
        if tag == "form":
            self.forms.append({"action": attrs.get("action") or "", "fields": {}, "submits": {}})
        elif tag in ("input", "button") and self.forms and attrs.get("name"):
            kind = attrs.get("type", "submit" if tag == "button" else "text")
            target = self.forms[-1]["submits" if kind == "submit" else "fields"]
            target[attrs["name"]] = attrs.get("value") or ""


def links(html: str) -> dict[str, str]:
    """The page's links by their text."""
    return {
        text.strip(): href.replace("&amp;", "&")
        for href, text in re.findall(r'<a [^>]*href="([^"]+)"[^>]*>([^<]+)</a>', html)
    }


class Reader:
    """A browser of sorts: one cookie jar, redirects followed, forms submitted as they are."""

    def __init__(self, service: str):
        self.service = service
        self.http = requests.Session()

    def open_window(self, site: str, **query) -> requests.Response:
        return self.http.get(f"{self.service}/auth/", params={"site": site, "lang": "en", **query}, timeout=10)

    def register_handoff(self, window: requests.Response, handoff: str) -> requests.Response:
        """What the window's page does with the name its frame gave it (signin-popup.js): a
        same-origin POST with the page's CSRF token."""
        csrf = re.search(r'data-csrf="([^"]+)"', window.text).group(1)
        return self.http.post(
            f"{self.service}/auth/handoff",
            data={"handoff": handoff},
            headers={"X-CSRFToken": csrf, "Origin": self.service},
            timeout=10,
        )

    def to_provider(self, site: str, *, handoff: str = "", **query) -> requests.Response:
        """Click the provider's button in the window (its page having registered the frame's
        ``handoff``, if given): the provider's login form."""
        window = self.open_window(site, **query)
        if handoff:
            assert self.register_handoff(window, handoff).status_code == 204
        return self.http.get(self.service + links(window.text)[f"Continue with {PROVIDER_NAME}"], timeout=10)

    def submit(self, page: requests.Response, extra: dict, *, follow: bool = True) -> requests.Response:
        (form,) = Forms(page.text).forms
        action = requests.compat.urljoin(page.url, form["action"]) if form["action"] else page.url
        return self.http.post(action, data={**form["fields"], **extra}, allow_redirects=follow, timeout=10)

    def consent_page(self, site: str, **query) -> requests.Response:
        """The provider's consent form, after its login form the first time."""
        return self.logged_in_at_provider(self.to_provider(site, **query))

    def logged_in_at_provider(self, page: requests.Response) -> requests.Response:
        if "Sign in to the test provider" in page.text:
            page = self.submit(page, {"username": USERNAME, "password": PASSWORD})
        assert "Authorize Comment service?" in page.text
        return page

    def callback(self, site: str, *, allow: bool = True, **query) -> str:
        """Consent (or refuse) at the provider; the service's callback address it answers with."""
        answer = self.submit(self.consent_page(site, **query), {"allow": "Authorize"} if allow else {}, follow=False)
        assert answer.status_code == 302
        return answer.headers["Location"]

    def sign_in(self, site: str, **query) -> dict:
        done = self.http.get(self.callback(site, **query), timeout=10)
        assert done.status_code == 200, done.text
        assert done.headers["Referrer-Policy"] == "no-referrer"
        return json.loads(RESULT.search(done.text).group(1))


@pytest.fixture
def site(oidc_providers):
    return SiteFactory(key="blog", name="The Blog", signin_oidc=["test", "wrong-secret"])


@pytest.fixture
def reader(live_server):
    return Reader(live_server.url)


def message_of(page: requests.Response) -> str:
    return re.search(r'<p class="si-err" role="alert">(.*?)</p>', page.text, re.S).group(1)


def test_a_reader_signs_in_with_the_provider_and_comments(reader, site, live_server):
    window = reader.open_window("blog")
    assert "Continue with Test ID" in window.text and "Continue with Wrong secret" in window.text

    result = reader.sign_in("blog")
    assert (result["type"], result["site"], result["via"], result["via_label"]) == (
        "comments:signin",
        "blog",
        "test",
        "(via Test ID)",
    )
    assert result["user"]["name"] == "Ada Lovelace"
    # The provider's picture, served from the service's origin (comments.avatars).
    assert User.objects.get(pk=result["user"]["id"]).avatar_url == PICTURE
    assert result["user"]["avatar"] == avatar_path(result["user"]["id"], PICTURE)

    subject = SubjectFactory(site=site)
    posted = requests.post(
        f"{live_server.url}/api/v1/subjects/{subject.pk}/comments",
        json={"body": "Signed in by OpenID Connect."},
        headers={"Authorization": f"Bearer {result['token']}"},
        timeout=10,
    )
    assert posted.status_code == 201, posted.text
    comment = Comment.objects.select_related("author").get()
    assert comment.author.pk == result["user"]["id"]
    account = SocialAccount.objects.get()
    assert (account.provider, account.user_id) == ("test", comment.author.pk)
    assert comment.author.email == "ada@example.com"  # the provider vouched for it

    # No Django session is logged in by it: the window's cookies alone are nobody.
    me = reader.http.get(f"{live_server.url}/api/v1/me", timeout=10)
    assert me.status_code == 401

    # The window hands the sign-in back at once next time (accounts.remembered), no provider asked.
    again = reader.open_window("blog")
    assert json.loads(RESULT.search(again.text).group(1))["token"] == result["token"]

    # Signed out, the reader goes to the provider again: the same account is the same user.
    signed_out = requests.delete(
        f"{live_server.url}/api/v1/auth/session", headers={"Authorization": f"Bearer {result['token']}"}, timeout=10
    )
    assert signed_out.status_code == 204
    fresh = reader.sign_in("blog")
    assert fresh["user"]["id"] == result["user"]["id"] and fresh["token"] != result["token"]
    assert User.objects.filter(socialaccount__isnull=False).count() == 1


def test_a_refused_consent_signs_nobody_in(reader, site):
    refused = reader.http.get(reader.callback("blog", allow=False), timeout=10)
    assert refused.status_code == 403
    assert "You did not let Test ID sign you in, so nobody was signed in." in message_of(refused)
    assert "si-result" not in refused.text
    assert not ApiToken.objects.exists() and not SocialAccount.objects.exists()


def test_a_forged_or_missing_state_signs_nobody_in(reader, site, live_server):
    callback = reader.callback("blog")
    answer = parse_qs(urlsplit(callback).query)
    base = callback.split("?")[0]
    for query in ({"code": answer["code"][0], "state": "forged-state"}, {"code": answer["code"][0]}):
        forged = reader.http.get(f"{base}?{urlencode(query)}", timeout=10)
        assert forged.status_code == 400
        assert "This sign-in could not be checked" in message_of(forged)
    # The true answer in another browser (another session) is no better.
    elsewhere = Reader(live_server.url).http.get(callback, timeout=10)
    assert elsewhere.status_code == 400
    assert not ApiToken.objects.exists() and not SocialAccount.objects.exists()
    # In the browser that started it, it still works, once.
    assert reader.http.get(callback, timeout=10).status_code == 200
    assert reader.http.get(callback, timeout=10).status_code == 400
    assert ApiToken.objects.count() == 1


def test_a_provider_error_signs_nobody_in(reader, site, live_server):
    # The provider refuses the code's exchange: the service's secret is wrong.
    login = reader.http.get(f"{live_server.url}/auth/with/wrong-secret", params={"site": "blog"}, timeout=10)
    consent = reader.submit(login, {"username": USERNAME, "password": PASSWORD})
    refused = reader.submit(consent, {"allow": "Authorize"})
    assert refused.status_code == 401
    assert "Wrong secret could not sign you in, so nobody was signed in." in message_of(refused)
    # The provider answers with an error of its own.
    callback = reader.callback("blog")
    state = parse_qs(urlsplit(callback).query)["state"][0]
    failed = reader.http.get(callback.split("?")[0], params={"error": "server_error", "state": state}, timeout=10)
    assert failed.status_code == 401
    assert "Test ID could not sign you in" in message_of(failed)
    assert not ApiToken.objects.exists() and not SocialAccount.objects.exists()


def test_an_id_token_minted_for_another_nonce_signs_nobody_in(reader, site):
    """A code injected into this window's sign-in (same PKCE challenge, so the exchange passes)
    whose ID token carries another request's nonce is refused."""
    start = reader.http.get(
        f"{reader.service}/auth/with/test", params={"site": "blog"}, allow_redirects=False, timeout=10
    )
    authorize = start.headers["Location"]
    params = parse_qs(urlsplit(authorize).query)
    assert params["code_challenge_method"] == ["S256"] and params["nonce"][0]
    injected = {key: value[0] for key, value in params.items()} | {"nonce": "the-attackers-nonce"}
    login = reader.http.get(authorize.split("?")[0] + "?" + urlencode(injected), timeout=10)
    consent = reader.submit(login, {"username": USERNAME, "password": PASSWORD})
    refused = reader.submit(consent, {"allow": "Authorize"})
    assert refused.status_code == 401
    assert "Test ID could not sign you in" in message_of(refused)
    assert not ApiToken.objects.exists()


def test_only_the_sites_providers_are_offered_and_accepted(reader, site, oidc_provider):
    SiteFactory(key="other", name="Other", signin_oidc=["wrong-secret"])
    window = reader.open_window("other")
    assert "Continue with Test ID" not in window.text
    refused = reader.http.get(f"{reader.service}/auth/with/test", params={"site": "other"}, timeout=10)
    assert refused.status_code == 403
    assert "This site does not offer sign-in with Test ID." in message_of(refused)
    assert not refused.url.startswith(oidc_provider.issuer)
    unknown = reader.http.get(f"{reader.service}/auth/with/nowhere", params={"site": "blog"}, timeout=10)
    assert unknown.status_code == 404
    # A site that stops offering the provider during a sign-in signs nobody in at its end.
    callback = reader.callback("blog")
    site.signin_oidc = ["wrong-secret"]
    site_store(site=site)
    late = reader.http.get(callback, timeout=10)
    assert late.status_code == 403 and not ApiToken.objects.exists()


@pytest.mark.parametrize("joined", [False, True])
def test_a_verified_email_joins_an_account_only_where_the_site_says_so(reader, site, joined):
    ada = UserFactory(display_name="Ada by email", email="ada@example.com")
    EmailAccount.objects.create(email="ada@example.com", user=ada, verified_at="2026-01-01T00:00:00Z")
    site.signin_link_email = joined
    site_store(site=site)
    result = reader.sign_in("blog")
    assert (result["user"]["id"] == ada.pk) is joined
    assert SocialAccount.objects.get().user_id == result["user"]["id"]


def test_the_window_speaks_the_readers_language(reader, site):
    window = reader.http.get(f"{reader.service}/auth/", params={"site": "blog", "lang": "zh-hans"}, timeout=10)
    assert "使用 Test ID 继续" in window.text
    refused = reader.http.get(
        f"{reader.service}/auth/with/test", params={"site": "nowhere", "lang": "zh-hans"}, timeout=10
    )
    assert refused.status_code == 404


def test_an_erased_users_provider_account_signs_in_as_someone_new(reader, site):
    first = reader.sign_in("blog")
    user_erase(user=User.objects.get(pk=first["user"]["id"]), actor=None)
    assert not SocialAccount.objects.exists()
    again = reader.sign_in("blog")
    assert again["user"]["id"] != first["user"]["id"]


@pytest.mark.parametrize("joined", [False, True])
def test_an_email_link_joins_a_providers_user_only_where_the_site_says_so(
    reader, site, live_server, smtp_server, joined
):
    site.signin_link_email = joined
    site_store(site=site)
    by_provider = reader.sign_in("blog")
    asked = requests.post(
        f"{live_server.url}/api/v1/auth/email",
        json={"site": "blog", "email": "ada@example.com", "name": "Ada"},
        timeout=10,
    )
    assert asked.status_code == 202
    (message,) = smtp_server.wait_for(1)
    by_email = requests.post(
        f"{live_server.url}/api/v1/auth/email/verify",
        json={"token": token_of(link_in(message)), "verifier": asked.json()["verifier"]},
        timeout=10,
    ).json()
    assert (by_email["user"]["id"] == by_provider["user"]["id"]) is joined


def test_a_provider_out_of_reach_ends_in_a_page(reader, site, settings):
    dead = f"http://127.0.0.1:{free_port()}/o"
    settings.ACCOUNTS_OIDC_PROVIDERS["wrong-secret"]["discovery_url"] = dead
    unreachable = reader.http.get(f"{reader.service}/auth/with/wrong-secret", params={"site": "blog"}, timeout=10)
    assert unreachable.status_code == 503
    assert "Wrong secret cannot be reached right now." in message_of(unreachable)
    # It goes away between the start and the answer: the code cannot be exchanged.
    callback = reader.callback("blog")
    settings.ACCOUNTS_OIDC_PROVIDERS["test"]["discovery_url"] = dead
    gone = reader.http.get(callback, timeout=10)
    assert gone.status_code == 503
    assert "Test ID cannot be reached right now." in message_of(gone)
    assert not ApiToken.objects.exists()


def test_a_callback_of_a_provider_the_service_lacks_is_a_page(reader, site):
    for path in ("/auth/github/login/callback/", "/auth/oidc/nowhere/login/callback/"):
        answer = reader.http.get(f"{reader.service}{path}", params={"code": "x", "state": "y"}, timeout=10)
        assert answer.status_code == 404
        assert "This sign-in is not available here." in message_of(answer)


def test_github_is_asked_with_pkce_and_state_for_the_readers_name_and_addresses(reader, site, settings):
    """GitHub speaks OAuth 2 without discovery: the way there is known without asking it (the
    rest of its flow is allauth's GitHub provider, which the tests cannot reach)."""
    settings.ACCOUNTS_OIDC_PROVIDERS["github"] = {
        "kind": "github",
        "name": "GitHub",
        "client_id": "gh-client",
        "secret": "gh-secret",
    }
    site.signin_oidc = ["github"]
    site_store(site=site)
    assert "Continue with GitHub" in reader.open_window("blog").text
    start = reader.http.get(
        f"{reader.service}/auth/with/github", params={"site": "blog"}, allow_redirects=False, timeout=10
    )
    assert start.status_code == 302 and start.headers["Cross-Origin-Opener-Policy"] == "unsafe-none"
    to = urlsplit(start.headers["Location"])
    params = parse_qs(to.query)
    assert f"{to.scheme}://{to.netloc}{to.path}" == "https://github.com/login/oauth/authorize"
    assert params["client_id"] == ["gh-client"] and params["scope"] == ["user:email"]
    assert params["redirect_uri"] == [f"{reader.service}/auth/github/login/callback/"]
    assert params["code_challenge_method"] == ["S256"] and params["state"][0] and "nonce" not in params


def test_the_frame_takes_a_sign_in_its_window_could_not_hand_over_once(reader, site, live_server):
    """A provider's page that sends Cross-Origin-Opener-Policy cuts the window off from the
    frame: the frame takes the sign-in with the secret whose SHA-256 named the hand-off."""
    secret = secrets.token_hex(32)
    window = reader.sign_in("blog", handoff=hashlib.sha256(secret.encode()).hexdigest())
    assert window["handoff"] is True

    def take(secret):
        return take_handoff(live_server.url, secret)

    assert take(secrets.token_hex(32)).status_code == 204
    assert take("short").status_code == 400
    taken = take(secret)
    assert taken.status_code == 200, taken.text
    body = taken.json()
    assert (body["user"], body["via"], body["via_label"]) == (window["user"], "test", "(via Test ID)")

    # One live token comes of the sign-in: the window's, never handed over, is withdrawn.
    def me(token):
        return requests.get(f"{live_server.url}/api/v1/me", headers={"Authorization": f"Bearer {token}"}, timeout=10)

    assert me(body["token"]).status_code == 200 and me(window["token"]).status_code == 401
    assert ApiToken.objects.count() == 1
    assert take(secret).status_code == 204
    # A window without a hand-off keeps none.
    assert reader.sign_in("blog")["handoff"] is False


def take_handoff(service: str, secret: str) -> requests.Response:
    return requests.post(f"{service}/api/v1/auth/handoff", json={"secret": secret}, timeout=10)


@pytest.mark.parametrize("door", ["/auth/with/test", "/auth/"])
def test_a_handoff_named_in_a_link_never_yields_the_victims_sign_in(reader, site, live_server, door):
    """Issue 33, F1: an attacker picks a secret, sends the victim a link naming its SHA-256 as the
    hand-off (straight to the provider's start, or to the window), and waits for the victim's
    one "Authorize" click. The window's address names no hand-off, so nothing is kept for the
    attacker: the victim's sign-in goes to the victim's window alone."""
    secret = secrets.token_hex(32)
    crafted = {"site": "blog", "lang": "en", "handoff": hashlib.sha256(secret.encode()).hexdigest()}
    page = reader.http.get(f"{live_server.url}{door}", params=crafted, timeout=10)
    if door == "/auth/":
        assert crafted["handoff"] not in page.text  # the window's buttons do not carry it on
        page = reader.http.get(live_server.url + links(page.text)[f"Continue with {PROVIDER_NAME}"], timeout=10)
    consent = reader.logged_in_at_provider(page)
    done = reader.http.get(reader.submit(consent, {"allow": "Authorize"}, follow=False).headers["Location"], timeout=10)
    result = json.loads(RESULT.search(done.text).group(1))
    assert result["handoff"] is False  # signed in, in the victim's window, and nothing kept
    assert take_handoff(live_server.url, secret).status_code == 204
    assert not SignInHandoff.objects.exists()


def test_an_outsider_cannot_register_a_handoff_in_the_victims_window(reader, site, live_server):
    """The registration is a POST of the window's own page: a cross-site form (no CSRF token, or
    another origin) is refused, and the sign-in that follows keeps nothing."""
    secret = secrets.token_hex(32)
    name = hashlib.sha256(secret.encode()).hexdigest()
    window = reader.open_window("blog")
    forged = reader.http.post(f"{live_server.url}/auth/handoff", data={"handoff": name}, timeout=10)
    assert forged.status_code == 403
    csrf = re.search(r'data-csrf="([^"]+)"', window.text).group(1)
    elsewhere = reader.http.post(
        f"{live_server.url}/auth/handoff",
        data={"handoff": name},
        headers={"X-CSRFToken": csrf, "Origin": "https://attacker.example"},
        timeout=10,
    )
    assert elsewhere.status_code == 403
    assert reader.sign_in("blog")["handoff"] is False
    assert take_handoff(live_server.url, secret).status_code == 204


def test_a_handoff_name_must_be_a_sha256(reader, site):
    window = reader.open_window("blog")
    assert reader.register_handoff(window, "not-a-hash").status_code == 400
    assert reader.register_handoff(window, "A" * 64).status_code == 400


@pytest.mark.parametrize(
    "full_name, username, kept",
    [
        ("Ada\r\nBcc: victim@example.com", "ada", "Ada Bcc: victim@example.com"),
        ("\u202e\u202c", "ada", "ada"),  # nothing visible: the account's username
        ("\r\n", "\u2066", "Reader"),  # nor there: as a provider that gives no name
    ],
)
def test_a_providers_name_is_one_line_of_visible_text_else_the_username_else_reader(full_name, username, kept):
    """Issue 33, F12: the name a provider gives is outside input like a host's."""
    from types import SimpleNamespace

    from accounts.oidc.views import _name

    assert _name(SimpleNamespace(user=User(first_name=full_name, username=username))) == kept

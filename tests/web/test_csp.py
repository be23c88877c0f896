"""Content-Security-Policy on every HTML page of the service (issue 33, F11): each kind of page,
fetched over HTTP through Django's test client, carries one policy under which no inline script
or style runs but what the page marks with that response's nonce; pages with a policy of their
own (the widget's, the sign-in window's) keep it. The browser's side, that the pages still work
under it, is tests/browser/test_csp.py."""

from __future__ import annotations

import re
from html.parser import HTMLParser

import pytest
from django.test import Client
from django.urls import URLPattern, URLResolver

from accounts.views import CSP as SIGNIN_WINDOW_CSP
from config import urls
from moderation.services import comment_hold, review_task_open
from notifications.unsubscribe import Scope, token_for

from ..factories import CommentFactory, SiteFactory, UserFactory

pytestmark = pytest.mark.django_db

# Script types a browser runs; a data block (type="application/json") is never run.
SCRIPT_TYPES = {"", "text/javascript", "module", "application/javascript"}


def directives(policy: str) -> dict[str, list[str]]:
    parsed: dict[str, list[str]] = {}
    for part in policy.split(";"):
        name, *values = part.split()
        parsed[name.lower()] = values
    return parsed


def effective(policy: dict[str, list[str]], directive: str) -> list[str]:
    """What governs ``directive``: itself, else default-src (CSP's fallback)."""
    return policy.get(directive, policy.get("default-src", []))


class InlineCode(HTMLParser):
    """Inline scripts and styles of a page, with their nonces; inline handlers and style
    attributes, which no nonce can allow."""

    def __init__(self):
        super().__init__()
        self.inline: list[tuple[str, str | None]] = []
        self.attributes: list[str] = []
        self._open: tuple[str, str | None] | None = None
        self._text = ""

    def handle_starttag(self, tag, attrs):
        found = dict(attrs)
        self.attributes += [f"<{tag} {name}>" for name, _ in attrs if name.startswith("on") or name == "style"]
        runs = tag == "script" and "src" not in found and (found.get("type") or "").lower() in SCRIPT_TYPES
        if runs or tag == "style":
            self._open, self._text = (tag, found.get("nonce")), ""

    def handle_data(self, data):
        if self._open is not None:
            self._text += data

    def handle_endtag(self, tag):
        if self._open is not None and tag == self._open[0]:
            if self._text.strip():
                self.inline.append(self._open)
            self._open = None


def assert_strict(response, *, nonce_needed: bool = False) -> dict[str, list[str]]:
    """The response's one policy lets no inline script or style run but the ones it names by
    nonce; returns the policy's directives."""
    assert response["Content-Type"].startswith("text/html"), response["Content-Type"]
    policy = directives(response["Content-Security-Policy"])
    scripts, styles = effective(policy, "script-src"), effective(policy, "style-src")
    for sources in (scripts, styles):
        assert "'self'" in sources or "'none'" in sources
        assert not {"'unsafe-inline'", "'unsafe-eval'", "'unsafe-hashes'", "*", "data:"} & set(sources), policy
    assert policy.get("object-src") == ["'none'"] or effective(policy, "object-src") == ["'none'"]
    assert "frame-ancestors" in policy

    page = InlineCode()
    page.feed(response.content.decode())
    assert page.attributes == [], "inline handlers or style attributes, which the policy blocks"
    for tag, nonce in page.inline:
        allowed = scripts if tag == "script" else styles
        assert nonce is not None and f"'nonce-{nonce}'" in allowed, f"an inline <{tag}> the policy blocks"
    assert bool(page.inline) == nonce_needed
    return policy


def assert_the_services_policy(response, *, nonce_needed: bool = False) -> None:
    policy = assert_strict(response, nonce_needed=nonce_needed)
    assert policy["default-src"] == ["'self'"]
    assert policy["img-src"] == ["'self'", "data:"]
    assert policy["base-uri"] == ["'none'"] and policy["form-action"] == ["'self'"]
    assert policy["frame-ancestors"] == ["'none'"]
    nonces = [v for v in policy["script-src"] if v.startswith("'nonce-")]
    assert bool(nonces) == nonce_needed  # a nonce only where a page uses one


@pytest.fixture
def staff(db):
    return UserFactory(username="root", is_staff=True, is_superuser=True)


@pytest.fixture
def signed_in(staff) -> Client:
    client = Client()
    client.force_login(staff)
    return client


@pytest.fixture
def held(subject):
    comment = CommentFactory(subject=subject, body="Buy now at http://spam.example")
    comment_hold(comment_id=comment.id, site_id=subject.site_id, why="test")
    return review_task_open(comment_id=comment.id, reasons=["spam:links"])


def get(client: Client, path: str, params: dict | None = None, status: int = 200):
    response = client.get(path, params or {})
    assert response.status_code == status, (path, response.status_code)
    return response


def test_the_home_page_has_the_services_policy(db):
    assert_the_services_policy(get(Client(), "/"))


def test_every_console_page_has_the_services_policy(signed_in, site, held):
    assert_the_services_policy(get(Client(), "/console/login/"))
    for path in ["/console/", "/console/dashboard/", "/console/words/", "/console/sanctions/", "/console/log/"]:
        assert_the_services_policy(get(signed_in, path))
    assert_the_services_policy(get(signed_in, f"/console/tasks/{held.pk}/"))
    assert_the_services_policy(get(signed_in, "/console/webhooks/", {"site": site.key}))
    # a console page refused
    outsider = Client()
    outsider.force_login(UserFactory())
    assert_the_services_policy(get(outsider, "/console/", status=403))


def test_the_consoles_and_the_admins_lockout_pages_have_the_services_policy(settings, db):
    UserFactory(username="ada", is_staff=True)
    for path in ("/console/login/", "/admin/login/"):
        tries = [
            Client(REMOTE_ADDR="203.0.113.9").post(path, {"username": "ada", "password": "wrong"})
            for _ in range(settings.AXES_FAILURE_LIMIT)
        ]
        locked = tries[-1]
        assert locked.status_code == 429
        assert_the_services_policy(locked)


def test_the_admin_has_the_services_policy_on_its_login_lists_and_forms(signed_in, staff, subject):
    assert_the_services_policy(get(Client(), "/admin/login/"))
    for path in [
        "/admin/",
        "/admin/comments/comment/",
        "/admin/comments/user/",
        f"/admin/comments/user/{staff.pk}/change/",  # date and time widgets, the permission pickers
        f"/admin/comments/subject/{subject.pk}/change/",
        "/admin/comments/site/add/",
        "/admin/axes/accessattempt/",
    ]:
        assert_the_services_policy(get(signed_in, path))


def test_the_api_docs_run_their_inline_start_up_by_nonce_alone(db):
    response = get(Client(), "/api/v1/docs/")
    assert_the_services_policy(response, nonce_needed=True)
    assert "SwaggerUIBundle(" in response.content.decode()
    # a fresh nonce each time
    again = Client().get("/api/v1/docs/")
    assert again["Content-Security-Policy"] != response["Content-Security-Policy"]


def test_pages_with_a_policy_of_their_own_keep_it_and_the_others_get_the_services(subject, user):
    """The widget's page is framed by its site's origins, the sign-in window and the unsubscribe
    page keep their stricter policies: the service's policy fills in, it never replaces one."""
    widget = get(Client(), "/embed/", {"site": subject.site.key, "key": subject.key})
    policy = assert_strict(widget)
    assert policy["frame-ancestors"] == ["https://host.example"]  # not the service's 'none'
    assert policy["script-src"] == ["'self'"] and policy["style-src"] == ["'self'"]

    window = get(Client(), "/auth/", {"site": subject.site.key})
    assert window["Content-Security-Policy"] == SIGNIN_WINDOW_CSP
    assert_strict(window)

    token = token_for(Scope(user_id=user.pk, kinds=("reply",)))
    unsubscribe = get(Client(), "/notifications/unsubscribe", {"token": token})
    assert unsubscribe["Content-Security-Policy"] == "default-src 'none'; form-action 'self'; frame-ancestors 'none'"
    assert_strict(unsubscribe)

    # a page of the widget's that is not found is still the widget's; one elsewhere the service's
    assert "frame-ancestors *" in get(Client(), "/embed/", {"site": "nope", "key": "x"}, 404)["Content-Security-Policy"]
    assert_the_services_policy(get(Client(), "/no-such-page/", status=404))


# Each part of the URL configuration (config/urls.py), a path in it, and what answers there.
PARTS = {
    "/": ("/", "text/html"),
    "/console/": ("/console/login/", "text/html"),
    "/console/webhooks/": ("/console/webhooks/", "text/html"),  # the console's login, redirected to
    "/admin/": ("/admin/login/", "text/html"),
    "/api/v1/": ("/api/v1/counts?site=blog", "application/json"),
    "/embed/": ("/embed/?site=blog&key=k", "text/html"),
    "/auth/": ("/auth/?site=blog", "text/html"),
    "/notifications/": ("/notifications/unsubscribe?token=forged", "application/json"),
    "/feeds/": ("/feeds/sites/blog/comments.atom", "application/atom+xml"),
    "/healthz": ("/healthz", "application/json"),
    "/readyz": ("/readyz", "application/json"),
    "/avatars/": ("/avatars/1/0", "text/plain"),
}


def test_every_part_of_the_site_answers_under_a_policy_but_json(db):
    """A new include in config/urls.py is a part this file must walk too. Feeds and plain text
    carry the service's policy as pages do (a browser may open XML as a document); JSON, which a
    browser never runs as one (nosniff), goes without (config/csp.py)."""
    SiteFactory(key="blog")
    parts = set()
    for pattern in urls.urlpatterns:
        assert isinstance(pattern, URLPattern | URLResolver)
        parts.add("/" + re.sub(r"<.*", "", str(pattern.pattern)))
    assert parts == set(PARTS)
    for path, kind in PARTS.values():
        response = Client().get(path, follow=True)
        assert response["Content-Type"].startswith(kind), (path, response["Content-Type"])
        assert response["X-Content-Type-Options"] == "nosniff", path
        if kind == "application/json":
            assert "Content-Security-Policy" not in response, path
        else:
            assert "default-src" in response["Content-Security-Policy"], path
    feed = Client().get(PARTS["/feeds/"][0])
    assert directives(feed["Content-Security-Policy"])["script-src"] == ["'self'"]

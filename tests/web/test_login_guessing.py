"""Password guessing on the service's password logins (issue 33, F4): the moderation console's,
the Django admin's and the API's. A username that fails ``AXES_FAILURE_LIMIT`` times from one
client address is refused there, even with its right password, until its cool-off has passed;
the same username from another address and other usernames from that address still sign in.
Over HTTP through Django's test client, the failures kept by django-axes in the real database."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import pytest
from axes.models import AccessAttempt
from django.conf import settings
from django.test import Client
from django.utils import timezone
from rest_framework.test import APIClient

from ..factories import UserFactory

PASSWORD = "pw-123456"
X = "203.0.113.7"
Y = "198.51.100.20"


@pytest.fixture
def limit() -> int:
    return settings.AXES_FAILURE_LIMIT


def console_login(username: str, password: str, address: str, **headers) -> tuple[Client, Any]:
    client = Client(REMOTE_ADDR=address)
    response = client.post(
        "/console/login/", {"username": username, "password": password, "next": "/console/"}, **headers
    )
    return client, response


def admin_login(username: str, password: str, address: str) -> tuple[Client, Any]:
    client = Client(REMOTE_ADDR=address)
    response = client.post(
        "/admin/login/?next=/admin/", {"username": username, "password": password, "next": "/admin/"}
    )
    return client, response


def api_login(username: str, password: str, address: str):
    return APIClient(REMOTE_ADDR=address).post(
        "/api/v1/auth/token", {"username": username, "password": password}, format="json"
    )


def signed_in(client: Client) -> bool:
    return "_auth_user_id" in client.session


def assert_console_lockout_page(response) -> None:
    assert response.status_code == 429
    assert response["Content-Type"].startswith("text/html")
    page = response.content.decode()
    # the console's own page, not axes' bare text
    assert "moderation/console.css" in page and "Sign-in paused" in page
    assert "Too many failed sign-ins for this username from your address." in page
    assert 'href="/console/login/"' in page
    assert int(response["Retry-After"]) == settings.AXES_COOLOFF_TIME.total_seconds()


# --- the console ----------------------------------------------------------------------------


def test_a_username_guessed_at_from_one_address_is_locked_there_even_with_the_right_password(site, moderator, limit):
    for _ in range(limit - 1):
        client, response = console_login("mod", "wrong", X)
        assert response.status_code == 200 and not signed_in(client)
        assert "Please enter a correct username and password" in response.content.decode()
    client, response = console_login("mod", "wrong", X)
    assert_console_lockout_page(response)

    client, response = console_login("mod", PASSWORD, X)
    assert_console_lockout_page(response)
    assert not signed_in(client)


def test_another_username_from_that_address_and_that_username_from_another_still_sign_in(site, moderator, limit):
    colleague = UserFactory(username="colleague")
    site.moderators.add(colleague)
    for _ in range(limit):
        console_login("mod", "wrong", X)
    assert console_login("mod", PASSWORD, X)[1].status_code == 429

    client, response = console_login("colleague", PASSWORD, X)
    assert response.status_code == 302 and response["Location"] == "/console/"
    assert signed_in(client)

    client, response = console_login("mod", PASSWORD, Y)
    assert response.status_code == 302 and response["Location"] == "/console/"
    assert signed_in(client)


def test_failures_below_the_limit_are_forgotten_once_the_owner_signs_in(site, moderator, limit):
    for _ in range(limit - 1):
        console_login("mod", "wrong", X)
    assert signed_in(console_login("mod", PASSWORD, X)[0])
    # a fresh budget: as many typos again, then the owner signs in once more
    for _ in range(limit - 1):
        assert console_login("mod", "wrong", X)[1].status_code == 200
    assert signed_in(console_login("mod", PASSWORD, X)[0])
    # and counting starts again from there
    assert [console_login("mod", "wrong", X)[1].status_code for _ in range(limit)] == [200] * (limit - 1) + [429]


def test_the_lock_lifts_a_cool_off_after_the_failure_that_made_it(site, moderator, limit):
    for _ in range(limit):
        console_login("mod", "wrong", X)
    # attempts while locked are refused unchecked, and neither counted nor extending the lock
    for password in ("wrong", PASSWORD, "wrong"):
        assert console_login("mod", password, X)[1].status_code == 429
    assert AccessAttempt.objects.get().failures_since_start == limit
    # the failure that made the lock, moved back beyond the cool-off
    AccessAttempt.objects.update(attempt_time=timezone.now() - settings.AXES_COOLOFF_TIME - timedelta(seconds=1))

    client, response = console_login("mod", PASSWORD, X)
    assert response.status_code == 302 and signed_in(client)


def test_a_guesser_cannot_escape_the_lock_by_writing_x_forwarded_for(site, moderator, limit):
    """With no proxy of ours in front (COMMENTS_TRUSTED_PROXIES=0) the header is the client's own
    writing: a fresh value per attempt is still the one address that sent them all."""
    for n in range(limit):
        console_login("mod", "wrong", X, HTTP_X_FORWARDED_FOR=f"10.0.0.{n}")
    client, response = console_login("mod", PASSWORD, X, HTTP_X_FORWARDED_FOR="10.0.0.99")
    assert response.status_code == 429 and not signed_in(client)


def test_behind_our_proxy_the_lock_is_at_the_address_the_proxy_saw(settings, site, moderator, limit):
    """nginx in front (COMMENTS_TRUSTED_PROXIES=1): every request comes from nginx's address, and
    the client is the right-most X-Forwarded-For entry, as the API's rate limits read it."""
    settings.REST_FRAMEWORK = {**settings.REST_FRAMEWORK, "NUM_PROXIES": 1}
    nginx = "127.0.0.1"
    for n in range(limit):
        console_login("mod", "wrong", nginx, HTTP_X_FORWARDED_FOR=f"10.0.0.{n}, {X}")
    assert console_login("mod", PASSWORD, nginx, HTTP_X_FORWARDED_FOR=f"10.9.9.9, {X}")[1].status_code == 429
    assert set(AccessAttempt.objects.values_list("ip_address", flat=True)) == {X}

    client, response = console_login("mod", PASSWORD, nginx, HTTP_X_FORWARDED_FOR=Y)
    assert response.status_code == 302 and signed_in(client)


# --- the admin ------------------------------------------------------------------------------


def test_the_admin_locks_a_username_at_one_address_and_no_one_else(db, limit):
    UserFactory(username="ada", is_staff=True, is_superuser=True)
    UserFactory(username="grace", is_staff=True, is_superuser=True)
    for _ in range(limit - 1):
        client, response = admin_login("ada", "wrong", X)
        assert response.status_code == 200 and not signed_in(client)
    client, response = admin_login("ada", "wrong", X)
    assert response.status_code == 429

    client, response = admin_login("ada", PASSWORD, X)
    assert response.status_code == 429 and not signed_in(client)
    page = response.content.decode()
    assert response["Content-Type"].startswith("text/html")
    # the admin's login look, not axes' bare text
    assert "admin/css/login.css" in page and "Too many failed sign-ins for this username" in page
    assert 'href="/admin/login/"' in page

    client, response = admin_login("grace", PASSWORD, X)
    assert response.status_code == 302 and response["Location"] == "/admin/" and signed_in(client)
    client, response = admin_login("ada", PASSWORD, Y)
    assert response.status_code == 302 and signed_in(client)
    assert client.get("/admin/").status_code == 200


def test_failures_at_the_console_and_the_admin_count_together(site, limit):
    """One username, one address: guessing on both forms is no way to double the attempts."""
    staff = UserFactory(username="ada", is_staff=True)
    site.moderators.add(staff)
    for n in range(limit):
        (console_login if n % 2 else admin_login)("ada", "wrong", X)
    assert admin_login("ada", PASSWORD, X)[1].status_code == 429
    assert console_login("ada", PASSWORD, X)[1].status_code == 429


# --- the API's password login -----------------------------------------------------------------


def test_the_api_login_locks_alike_and_answers_in_the_apis_json(db, limit):
    UserFactory(username="alice")
    UserFactory(username="bob")
    codes = [api_login("alice", "wrong", X).status_code for _ in range(limit)]
    assert codes == [401] * (limit - 1) + [429]

    refused = api_login("alice", PASSWORD, X)
    assert refused.status_code == 429
    assert refused["Content-Type"] == "application/json"
    assert refused.json() == {
        "error": {"code": "rate_limited", "message": "Too many failed sign-ins from your address; try again later."}
    }
    assert int(refused["Retry-After"]) == settings.AXES_COOLOFF_TIME.total_seconds()

    assert api_login("bob", PASSWORD, X).status_code == 200
    assert api_login("alice", PASSWORD, Y).status_code == 200

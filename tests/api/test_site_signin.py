"""API.md, "Sign-in methods": which ways a site lets its readers sign in, read by anyone and
changed by the site's moderators; a method the site turned off is refused."""

from __future__ import annotations

import time

from comments.models import Site
from comments.sso import sign_payload

from ..factories import SiteFactory, UserFactory
from .conftest import API, assert_error


def signin_url(site) -> str:
    return f"{API}/sites/{site.key}/signin"


def test_a_new_site_allows_sso_and_email_but_not_guests(api, db):
    site = Site.objects.create(key="fresh", name="Fresh")
    response = api.get(signin_url(site))
    assert response.status_code == 200
    assert response.json() == {
        "site": "fresh",
        "sso": True,
        "email": True,
        "oidc": [],
        "guests": False,
        "link_email": False,
        "guest_moderation": "pre",
    }


def test_an_unknown_site_is_not_found(api, db):
    assert_error(api.get(f"{API}/sites/nowhere/signin"), 404, "not_found")


def test_a_moderator_changes_only_what_they_send(api, db):
    moderator = UserFactory()
    site = SiteFactory()
    site.moderators.add(moderator)
    api.force_authenticate(moderator)

    response = api.patch(signin_url(site), {"email": False, "guests": True, "link_email": True}, format="json")

    assert response.status_code == 200, response.content
    assert response.json() == {
        "site": site.key,
        "sso": True,
        "email": False,
        "oidc": [],
        "guests": True,
        "link_email": True,
        "guest_moderation": "pre",
    }
    site.refresh_from_db()
    assert (site.signin_sso, site.signin_email, site.signin_guests, site.signin_link_email) == (True, False, True, True)
    assert api.get(signin_url(site)).json()["email"] is False


def test_others_may_not_change_it(api, db):
    site = SiteFactory()
    assert_error(api.patch(signin_url(site), {"email": False}, format="json"), 401, "not_authenticated")
    api.force_authenticate(UserFactory())
    assert_error(api.patch(signin_url(site), {"email": False}, format="json"), 403, "permission_denied")
    site.refresh_from_db()
    assert site.signin_email is True


def test_bad_values_are_invalid_and_change_nothing(api, db):
    moderator = UserFactory(is_staff=True)
    site = SiteFactory()
    api.force_authenticate(moderator)
    for body in (
        {"email": "no"},
        {"guests": 0},
        {"link_email": "yes"},
        {"oidc": "github"},
        {"oidc": [1]},
        {"sso": False, "oidc": ["nowhere"]},
    ):
        error = assert_error(api.patch(signin_url(site), body, format="json"), 400, "invalid")
        assert {name.split(".")[0] for name in error["fields"]} <= set(body), (body, error)
    site.refresh_from_db()
    assert (site.signin_sso, site.signin_email, site.signin_oidc) == (True, True, [])


def test_a_site_without_sso_refuses_its_payloads(api, db):
    site = SiteFactory(signin_sso=False)
    payload = sign_payload(site.sso_secret, {"id": "7", "name": "Ada", "exp": int(time.time()) + 600})
    response = api.post(f"{API}/auth/sso", {"site": site.key, "payload": payload}, format="json")
    assert_error(response, 403, "permission_denied")

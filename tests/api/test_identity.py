"""API.md, Identity: password tokens, host-site SSO, the current user."""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
import time

import pytest

from comments.avatars import avatar_path
from comments.models import ExternalIdentity, User
from comments.sso import sign_payload

from ..factories import SiteFactory, UserFactory
from .conftest import API, assert_error, assert_iso_time, assert_user_shape

SECRET = "test-sso-secret"  # SiteFactory's


def claims(**overrides):
    data = {
        "id": "host-42",
        "name": "Ada",
        "email": "ada@host.example",
        "avatar": "https://host.example/a.png",
        "exp": int(time.time()) + 600,
    }
    data.update(overrides)
    return {k: v for k, v in data.items() if v is not None}


def sso(api, site_key, payload):
    return api.post(f"{API}/auth/sso", {"site": site_key, "payload": payload}, format="json")


def sign_raw(secret: str, raw: bytes) -> str:
    body = base64.urlsafe_b64encode(raw).rstrip(b"=").decode()
    return f"{body}.{hmac.new(secret.encode(), body.encode(), hashlib.sha256).hexdigest()}"


def assert_token_response(response):
    assert response.status_code == 200, response.content
    body = response.json()
    assert {"token", "expires_at", "user"} <= set(body)
    assert isinstance(body["token"], str) and len(body["token"]) >= 20
    assert_iso_time(body["expires_at"])
    assert_user_shape(body["user"])
    return body


# --- password tokens -----------------------------------------------------------------------


def test_a_password_login_returns_a_token_that_authenticates_the_user(api, db):
    user = UserFactory(username="alice", display_name="Alice A.")
    body = assert_token_response(
        api.post(f"{API}/auth/token", {"username": "alice", "password": "pw-123456"}, format="json")
    )
    assert body["user"] == {"id": user.pk, "name": "Alice A.", "avatar": None}

    api.credentials(HTTP_AUTHORIZATION=f"Bearer {body['token']}")
    me = api.get(f"{API}/me")
    assert me.status_code == 200
    assert me.json()["id"] == user.pk


@pytest.mark.parametrize(
    "username, password",
    [("alice", "wrong-password"), ("nobody", "pw-123456"), ("alice", ""), ("ALICE", "pw-123456")],
)
def test_wrong_credentials_are_not_authenticated(api, db, username, password):
    UserFactory(username="alice")
    response = api.post(f"{API}/auth/token", {"username": username, "password": password}, format="json")
    assert response.status_code in (400, 401)
    if password:
        assert_error(response, 401, "not_authenticated")


def test_an_inactive_users_password_login_is_not_authenticated(api, db):
    UserFactory(username="gone", is_active=False)
    response = api.post(f"{API}/auth/token", {"username": "gone", "password": "pw-123456"}, format="json")
    assert_error(response, 401, "not_authenticated")


@pytest.mark.parametrize(
    "payload",
    [
        {},
        {"username": "alice"},
        {"password": "pw-123456"},
        {"username": 12, "password": "pw-123456"},
        {"username": "alice", "password": ["pw-123456"]},
        {"username": None, "password": None},
    ],
)
def test_a_token_request_with_missing_or_mistyped_fields_is_invalid(api, db, payload):
    UserFactory(username="alice")
    assert_error(api.post(f"{API}/auth/token", payload, format="json"), 400, "invalid")


# --- SSO -----------------------------------------------------------------------------------


def test_a_valid_sso_payload_returns_a_token_and_the_user(api, site):
    body = assert_token_response(sso(api, site.key, sign_payload(SECRET, claims())))
    assert body["user"]["name"] == "Ada"
    # the picture is shown from the service's origin, never from the host's (comments.avatars)
    assert body["user"]["avatar"] == avatar_path(body["user"]["id"], "https://host.example/a.png")
    assert "host.example" not in json.dumps(body["user"]) and "email" not in json.dumps(body["user"])

    api.credentials(HTTP_AUTHORIZATION=f"Bearer {body['token']}")
    me = api.get(f"{API}/me")
    assert me.status_code == 200
    assert me.json() == body["user"]


def test_the_same_site_and_host_id_maps_to_the_same_user_and_updates_name_and_avatar(api, site):
    first = assert_token_response(sso(api, site.key, sign_payload(SECRET, claims())))
    second = assert_token_response(
        sso(api, site.key, sign_payload(SECRET, claims(name="Ada Lovelace", avatar="https://host.example/b.png")))
    )
    assert second["user"]["id"] == first["user"]["id"]
    assert second["user"]["name"] == "Ada Lovelace"
    assert User.objects.get(pk=second["user"]["id"]).avatar_url == "https://host.example/b.png"
    assert (
        second["user"]["avatar"]
        == avatar_path(second["user"]["id"], "https://host.example/b.png")
        != first["user"]["avatar"]
    )
    assert second["token"] != first["token"]
    assert ExternalIdentity.objects.filter(site=site, external_id="host-42").count() == 1

    api.credentials(HTTP_AUTHORIZATION=f"Bearer {first['token']}")
    assert api.get(f"{API}/me").json()["name"] == "Ada Lovelace"


def test_the_same_host_id_on_another_site_is_another_user(api, site):
    other_site = SiteFactory(key="othersite")
    a = assert_token_response(sso(api, site.key, sign_payload(SECRET, claims())))
    b = assert_token_response(sso(api, other_site.key, sign_payload(SECRET, claims())))
    assert a["user"]["id"] != b["user"]["id"]


def test_an_sso_payload_with_a_bad_signature_is_not_authenticated(api, site):
    good = sign_payload(SECRET, claims())
    body, sig = good.split(".")
    flipped = sig[:-1] + ("0" if sig[-1] != "0" else "1")
    assert_error(sso(api, site.key, f"{body}.{flipped}"), 401, "not_authenticated")
    assert_error(sso(api, site.key, sign_payload("another-secret", claims())), 401, "not_authenticated")
    assert_error(sso(api, site.key, f"{body}.{sig.upper()}"), 401, "not_authenticated")


def test_an_sso_payload_for_an_unknown_site_is_not_authenticated(api, site):
    assert_error(sso(api, "no-such-site", sign_payload(SECRET, claims())), 401, "not_authenticated")


def test_an_expired_sso_payload_is_not_authenticated(api, site):
    assert_error(sso(api, site.key, sign_payload(SECRET, claims(exp=int(time.time()) - 5))), 401, "not_authenticated")


@pytest.mark.parametrize("ahead", [10**12, 2 * 3600 + 60])
def test_an_sso_payload_that_claims_a_life_beyond_the_window_is_not_authenticated(api, site, ahead):
    """Issue 33, F8: a payload signs its reader in as often as it is sent until its exp, so a
    host's payload may live COMMENTS_SSO_MAX_TTL seconds (two hours) at most."""
    answer = sso(api, site.key, sign_payload(SECRET, claims(exp=int(time.time()) + ahead)))
    assert_error(answer, 401, "not_authenticated")
    assert "too far ahead" in answer.json()["error"]["message"]
    assert sso(api, site.key, sign_payload(SECRET, claims(exp=int(time.time()) + 2 * 3600 - 60))).status_code == 200


def test_a_site_without_an_sso_secret_accepts_no_sso_payload(api, db):
    site = SiteFactory(key="nosecret", sso_secret="")
    assert_error(sso(api, site.key, sign_payload("", claims())), 401, "not_authenticated")


@pytest.mark.parametrize(
    "make_payload",
    [
        lambda: "",
        lambda: "no-dot-at-all",
        lambda: "a.b.c",
        lambda: ".",
        lambda: sign_raw(SECRET, b"\xff\xfe not utf-8"),
        lambda: sign_raw(SECRET, b"not json"),
        lambda: sign_raw(SECRET, b'["a list"]'),
        lambda: sign_raw(SECRET, b'"a string"'),
        lambda: sign_payload(SECRET, claims(id=None)),
        lambda: sign_payload(SECRET, claims(id="")),
        lambda: sign_payload(SECRET, claims(id=["x"])),
        lambda: sign_payload(SECRET, claims(id="x" * 256)),
        lambda: sign_payload(SECRET, claims(id="a\x00b")),
        lambda: sign_payload(SECRET, claims(name=None)),
        lambda: sign_payload(SECRET, claims(name=5)),
        lambda: sign_payload(SECRET, claims(exp=None)),
        lambda: sign_payload(SECRET, claims(exp="tomorrow")),
        lambda: sign_payload(SECRET, claims(exp=True)),
        lambda: sign_payload(SECRET, claims(email=7)),
        lambda: sign_payload(SECRET, claims(avatar={"url": "x"})),
        lambda: sign_payload(SECRET, claims()) + "\x00",
        lambda: "\x00." + "0" * 64,
    ],
)
def test_a_malformed_sso_payload_is_not_authenticated(api, site, make_payload):
    response = sso(api, site.key, make_payload())
    if response.status_code == 400:  # an empty or NUL-bearing string may be refused as input
        assert_error(response, 400, "invalid")
    else:
        assert_error(response, 401, "not_authenticated")


@pytest.mark.parametrize("payload", [12, None, ["a.b"], {"a": "b"}, True])
def test_an_sso_payload_of_the_wrong_type_is_invalid(api, site, payload):
    assert_error(api.post(f"{API}/auth/sso", {"site": site.key, "payload": payload}, format="json"), 400, "invalid")


def test_a_non_http_avatar_from_sso_is_not_published(api, site):
    body = assert_token_response(sso(api, site.key, sign_payload(SECRET, claims(avatar="javascript:alert(1)"))))
    assert body["user"]["avatar"] in (None, "")


# --- me ------------------------------------------------------------------------------------


def test_me_returns_the_current_user_without_private_fields(client_for, db):
    user = UserFactory(username="bob", display_name="Bobby", email="bob@example.com")
    response = client_for(user).get(f"{API}/me")
    assert response.status_code == 200
    assert response.json() == {"id": user.pk, "name": "Bobby", "avatar": None}
    assert "bob@example.com" not in response.content.decode()


def test_me_is_not_authenticated_for_an_anonymous_client(api, db):
    assert_error(api.get(f"{API}/me"), 401, "not_authenticated")


@pytest.mark.parametrize(
    "header", ["Bearer not-a-token", "Bearer", "Bearer a b", "Bearer " + "x" * 5000, "Bearer \u00e9t\u00e9"]
)
def test_me_with_a_bad_bearer_token_is_not_authenticated(api, db, header):
    api.credentials(HTTP_AUTHORIZATION=header)
    assert_error(api.get(f"{API}/me"), 401, "not_authenticated")


def test_an_expired_token_is_not_authenticated(api, user):
    from django.utils import timezone

    from comments import services

    raw, token = services.token_issue(user=user)
    type(token).objects.filter(pk=token.pk).update(expires_at=timezone.now())
    api.credentials(HTTP_AUTHORIZATION=f"Bearer {raw}")
    assert_error(api.get(f"{API}/me"), 401, "not_authenticated")


@pytest.mark.parametrize("field", ["id", "name", "email", "avatar"])
def test_an_sso_payload_with_a_lone_surrogate_is_refused_not_a_server_error(api, site, field):
    value = {
        "id": "host-\ud800",
        "name": "Ada \ud800",
        "email": "a\ud800@host.example",
        "avatar": "https://host.example/\ud800.png",
    }[field]
    response = sso(api, site.key, sign_payload(SECRET, claims(**{field: value})))
    assert response.status_code in (200, 401), (response.status_code, response.content[:300])
    if response.status_code == 401:
        assert_error(response, 401, "not_authenticated")
    else:
        response.json()["user"]["name"].encode("utf-8")  # whatever was kept is valid text


# --- session authentication ----------------------------------------------------------------


def test_a_session_user_is_authenticated_and_writes_need_the_csrf_token(user, subject):
    from rest_framework.test import APIClient

    client = APIClient(enforce_csrf_checks=True)
    client.force_login(user)
    me = client.get(f"{API}/me")
    assert me.status_code == 200 and me.json()["id"] == user.pk
    refused = client.post(f"{API}/subjects/{subject.pk}/comments", {"body": "x"}, format="json")
    assert_error(refused, 403, "permission_denied")
    from django.middleware.csrf import get_token
    from django.test import RequestFactory

    request = RequestFactory().get("/")
    token = get_token(request)
    client.cookies["csrftoken"] = request.META["CSRF_COOKIE"]
    accepted = client.post(
        f"{API}/subjects/{subject.pk}/comments", {"body": "x"}, format="json", HTTP_X_CSRFTOKEN=token
    )
    assert accepted.status_code == 201, accepted.content

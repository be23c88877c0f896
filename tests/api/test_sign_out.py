"""Signing out: ``DELETE /api/v1/auth/token`` revokes the bearer token that authenticates the
request, and the token is refused from then on, by every process of the service."""

from __future__ import annotations

import json
import os

import pytest
from rest_framework.test import APIClient

from comments.models import ApiToken
from comments.services import token_issue

from ..factories import SiteFactory, UserFactory
from ..servers import Service
from ..workers import test_database_url
from .conftest import API, assert_error


def bearer(raw: str) -> APIClient:
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Bearer {raw}")
    return client


def test_signing_out_revokes_that_token_alone(db):
    reader = UserFactory()
    raw, _ = token_issue(user=reader, site=SiteFactory())
    other, _ = token_issue(user=reader)  # the same reader, signed in elsewhere too
    assert bearer(raw).get(f"{API}/me").status_code == 200

    assert bearer(raw).delete(f"{API}/auth/token").status_code == 204
    assert_error(bearer(raw).get(f"{API}/me"), 401, "not_authenticated")
    assert_error(bearer(raw).delete(f"{API}/auth/token"), 401, "not_authenticated")
    assert bearer(other).get(f"{API}/me").status_code == 200
    assert ApiToken.objects.filter(user=reader).count() == 1


def test_signing_out_needs_the_token_it_revokes(db):
    assert_error(APIClient().delete(f"{API}/auth/token"), 401, "not_authenticated")
    assert_error(bearer("never-issued").delete(f"{API}/auth/token"), 401, "not_authenticated")
    # A session is not a token: a console's signed-in browser revokes nothing here.
    staff = UserFactory(is_staff=True)
    raw, _ = token_issue(user=staff)
    session = APIClient()
    session.force_login(staff)
    assert_error(session.delete(f"{API}/auth/token"), 401, "not_authenticated")
    assert ApiToken.objects.count() == 1 and bearer(raw).get(f"{API}/me").status_code == 200


def test_a_stale_token_sent_along_does_not_refuse_a_password_login(db):
    UserFactory(username="ada", password="correct horse battery")
    answer = bearer("revoked-long-ago").post(
        f"{API}/auth/token", {"username": "ada", "password": "correct horse battery"}, format="json"
    )
    assert answer.status_code == 200, answer.content


@pytest.mark.django_db(transaction=True)
def test_a_revoked_token_is_refused_by_every_process_at_once(redis_url):
    """Two gunicorn workers on one port: the sign-out reaches one of them; every request after
    it, whichever worker takes it, is refused, with no wait."""
    reader = UserFactory()
    raw, _ = token_issue(user=reader, site=SiteFactory())
    env = {
        **os.environ,
        "DJANGO_SETTINGS_MODULE": "config.settings",
        "DATABASE_URL": test_database_url(),
        "REDIS_URL": redis_url,
        "DJANGO_SECRET_KEY": os.environ.get("DJANGO_SECRET_KEY") or "sign-out",
        "RATE_LIMITS": "off",
    }
    service = Service(env, workers=2)
    service.start()
    try:
        for _ in range(40):  # both workers have met the token
            status, headers, body = service.request("GET", "/api/v1/me", token=raw)
            assert status == 200, body
        status, _, body = service.request("DELETE", "/api/v1/auth/token", token=raw)
        assert status == 204, body
        answers = [service.request("GET", "/api/v1/me", token=raw) for _ in range(40)]
        assert {status for status, _, _ in answers} == {401}
        assert {json.loads(body)["error"]["code"] for _, _, body in answers} == {"not_authenticated"}
    finally:
        service.stop()

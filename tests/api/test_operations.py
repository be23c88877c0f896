"""API.md, Operations: /healthz."""

from __future__ import annotations

from django.conf import settings


def test_healthz_reports_database_cache_and_broker(api, db):
    response = api.get("/healthz")
    assert response.status_code == 200
    assert response["Content-Type"].startswith("application/json")
    body = response.json()
    assert set(body) >= {"database", "cache", "broker"}
    assert body["database"] == "ok"
    assert body["cache"] == ("ok" if settings.REDIS_URL else "absent")
    if settings.CELERY_TASK_ALWAYS_EAGER:
        assert body["broker"] == "eager"
    else:
        assert body["broker"] in ("ok", "down")


def test_healthz_needs_no_authentication_and_ignores_a_bad_token(api, db):
    api.credentials(HTTP_AUTHORIZATION="Bearer nonsense")
    assert api.get("/healthz").status_code == 200


def test_the_openapi_schema_is_served(api, db):
    response = api.get("/api/v1/schema/", HTTP_ACCEPT="application/vnd.oai.openapi+json")
    assert response.status_code == 200
    text = response.content.decode()
    for path in ("/api/v1/subjects/{subject_id}/comments", "/api/v1/comments/{comment_id}/chain", "/api/v1/auth/sso"):
        assert path in text

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


def test_every_operation_in_the_api_docs_says_what_it_does(db):
    """The docs read "Base: JSON only, errors in the contract's shape." under 33 of 35
    operations: the base view's docstring, inherited by every view without one of its own."""
    from drf_spectacular.generators import SchemaGenerator

    from comments.api.views import ApiView

    operations = {
        f"{method.upper()} {path}": operation
        for path, methods in SchemaGenerator().get_schema(request=None, public=True)["paths"].items()
        for method, operation in methods.items()
    }
    assert len(operations) >= 34
    base = ApiView.__doc__.strip()
    descriptions = {name: (operation.get("description") or "").strip() for name, operation in operations.items()}
    assert not [name for name, operation in operations.items() if not operation.get("summary")]
    assert not [name for name, text in descriptions.items() if not text or base in text], descriptions
    shared = {text for text in descriptions.values() if list(descriptions.values()).count(text) > 1}
    assert not shared, shared


def test_a_view_without_a_docstring_of_its_own_is_not_described_by_its_base_class():
    from drf_spectacular.plumbing import get_doc

    from comments.api.views import ApiView

    class Undocumented(ApiView):
        pass

    class Documented(ApiView):
        """What it does."""

    assert get_doc(Undocumented) == ""
    assert get_doc(Documented) == "What it does."

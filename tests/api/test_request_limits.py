"""Requests past the service's limits get the contract's error shape, never an HTML page: a URL
longer than ``MAX_URL_BYTES`` (414), a body larger than ``DATA_UPLOAD_MAX_MEMORY_SIZE`` (413),
a body that is not JSON (415). gunicorn (``config/gunicorn.py``) hands URLs up to its own,
higher, limit to the service, which answers them."""

from __future__ import annotations

import json
import os

import pytest
from django.conf import settings

from comments.middleware import MAX_URL_BYTES

from ..servers import Service
from .conftest import API, assert_error


def _padded(path: str, length: int) -> str:
    """``path`` with a query parameter ``pad`` that makes the URL exactly ``length`` bytes."""
    head = f"{path}?pad="
    return head + "a" * (length - len(head))


def test_a_url_longer_than_the_limit_is_414_in_the_error_shape_and_one_of_the_limit_is_read(api, subject):
    url = _padded(f"{API}/subjects/{subject.pk}/comments", MAX_URL_BYTES + 1)
    error = assert_error(api.get(url), 414, "uri_too_long")
    assert str(MAX_URL_BYTES) in error["message"]
    response = api.get(_padded(f"{API}/subjects/{subject.pk}/comments", MAX_URL_BYTES))
    assert response.status_code == 200, response.content[:300]
    # The limit is the API's: other pages answer as they did.
    assert api.get(_padded("/embed/", MAX_URL_BYTES + 100)).status_code != 414


@pytest.mark.parametrize("method", ["get", "post", "put", "patch", "delete"])
def test_every_method_and_unknown_paths_under_the_api_get_the_json_414(api, db, method):
    for path in (f"{API}/subjects", f"{API}/no/such/thing", "/api/"):
        response = getattr(api, method)(_padded(path, MAX_URL_BYTES + 100))
        assert_error(response, 414, "uri_too_long")


def test_a_path_of_many_non_ascii_characters_is_measured_as_sent(api, db):
    # 700 characters of 3 bytes each, percent-encoded: 6,300 bytes of path, over the limit with
    # the query; by characters alone it would look short.
    path = f"{API}/subjects/lookup/" + "中" * 700
    response = api.get(path + "?pad=" + "a" * (MAX_URL_BYTES - 6300))
    assert_error(response, 414, "uri_too_long")


def test_a_body_over_the_upload_limit_is_413_in_the_error_shape(client_for, user, subject):
    raw = json.dumps({"body": "a" * (settings.DATA_UPLOAD_MAX_MEMORY_SIZE + 1)})
    response = client_for(user).generic(
        "POST", f"{API}/subjects/{subject.pk}/comments", raw, content_type="application/json"
    )
    assert_error(response, 413, "payload_too_large")


def test_a_body_over_the_upload_limit_is_413_before_authentication_too(api, db):
    raw = json.dumps({"username": "u", "password": "p" * (settings.DATA_UPLOAD_MAX_MEMORY_SIZE + 1)})
    assert_error(
        api.generic("POST", f"{API}/auth/token", raw, content_type="application/json"), 413, "payload_too_large"
    )


@pytest.mark.parametrize(
    "content_type",
    ["text/plain", "application/x-www-form-urlencoded", "multipart/form-data; boundary=x", "application/xml"],
)
def test_a_body_that_is_not_json_is_415_in_the_error_shape(client_for, user, subject, content_type):
    response = client_for(user).generic(
        "POST", f"{API}/subjects/{subject.pk}/comments", "body=hello", content_type=content_type
    )
    error = assert_error(response, 415, "unsupported_media_type")
    assert content_type.split(";")[0] in error["message"]


# --- behind gunicorn -----------------------------------------------------------------------


@pytest.fixture(scope="module")
def gunicorn(tmp_path_factory):
    """The service under gunicorn with config/gunicorn.py, on an empty embedded default of its
    own (the requests below are refused before any table is read)."""
    env = {
        key: value
        for key, value in os.environ.items()
        if key not in ("DATABASE_URL", "DATABASE_REPLICA_URLS", "REDIS_URL", "LIKES_REDIS_URL", "CELERY_BROKER_URL")
    }
    env.update(
        DJANGO_SETTINGS_MODULE="config.settings",
        COMMENTS_VAR_DIR=str(tmp_path_factory.mktemp("var")),
        DJANGO_SECRET_KEY=os.environ.get("DJANGO_SECRET_KEY") or "request-limits",
    )
    service = Service(env)
    try:
        service.start()
        yield service
    finally:
        service.stop()


def test_gunicorn_hands_urls_past_its_old_default_limit_to_the_service(gunicorn):
    # 6,000 bytes: past gunicorn's default (4,094), which answered with an HTML page of its own.
    path = f"{API}/subjects/lookup?site=x&key=" + "k" * (6000 - len(f"{API}/subjects/lookup?site=x&key="))
    status, headers, body = gunicorn.request("GET", path)
    assert status == 400, (status, body[:300])
    assert headers["Content-Type"].startswith("application/json")
    assert json.loads(body)["error"]["code"] == "invalid"


def test_behind_gunicorn_a_url_past_the_services_limit_is_414_in_json(gunicorn):
    status, headers, body = gunicorn.request("GET", _padded(f"{API}/subjects/lookup", MAX_URL_BYTES + 150))
    assert status == 414, (status, body[:300])
    assert headers["Content-Type"].startswith("application/json"), (headers, body[:300])
    assert json.loads(body)["error"]["code"] == "uri_too_long"

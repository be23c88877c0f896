"""Shared helpers for the API suite: the contract's error shape, the comment shape, and a
cursor walker that follows ``next_cursor`` to the end."""

from __future__ import annotations

from datetime import datetime

import pytest

from ..factories import SubjectFactory, UserFactory, set_likes  # noqa: F401 (the API tests' helper)

API = "/api/v1"

COMMENT_KEYS = {
    "id",
    "subject_id",
    "reply_to_id",
    "root_id",
    "depth",
    "floor",
    "author",
    "reply_to",
    "body",
    "html",
    "status",
    "visibility",
    "pinned",
    "featured",
    "like_count",
    "liked",
    "reply_count",
    "created_at",
    "edited_at",
}
SUBJECT_KEYS = {
    "id",
    "site",
    "key",
    "title",
    "url",
    "mode",
    "state",
    "comment_count",
    "root_count",
    "created_at",
}
USER_KEYS = {"id", "name", "avatar"}
PRIVATE_KEYS = {"email", "ip", "author_ip", "user_agent", "password"}


def assert_error(response, status: int, code: str) -> dict:
    """The response is the contract's error: that status, a JSON body of exactly
    ``{"error": {"code", "message", "fields"?}}`` with that code."""
    assert response.status_code == status, (response.status_code, response.content[:500])
    assert response["Content-Type"].startswith("application/json"), response["Content-Type"]
    body = response.json()
    assert set(body) == {"error"}, body
    error = body["error"]
    assert set(error) <= {"code", "message", "fields"}, error
    assert error["code"] == code, error
    assert isinstance(error["message"], str) and error["message"], error
    if "fields" in error:
        assert error["code"] in ("invalid", "content_blocked"), error
        assert isinstance(error["fields"], dict) and error["fields"], error
        for name, messages in error["fields"].items():
            assert isinstance(name, str)
            assert isinstance(messages, list) and messages and all(isinstance(m, str) for m in messages)
    return error


def assert_iso_time(value) -> datetime:
    assert isinstance(value, str), value
    parsed = datetime.fromisoformat(value.replace("Z", "+00:00"))
    assert parsed.tzinfo is not None, value
    return parsed


def assert_user_shape(user) -> None:
    assert isinstance(user, dict)
    assert set(user) >= USER_KEYS, user
    assert not PRIVATE_KEYS & set(user), user
    assert isinstance(user["id"], int) and not isinstance(user["id"], bool)
    assert isinstance(user["name"], str)
    assert user["avatar"] is None or isinstance(user["avatar"], str)


def assert_comment_shape(item) -> None:
    assert set(item) >= COMMENT_KEYS, set(item) ^ COMMENT_KEYS
    assert not PRIVATE_KEYS & set(item), item
    for key in ("id", "subject_id", "depth", "floor", "like_count", "reply_count"):
        assert isinstance(item[key], int) and not isinstance(item[key], bool), (key, item[key])
    assert 0 < item["id"] < 2**53
    for key in ("reply_to_id", "root_id"):
        assert item[key] is None or (isinstance(item[key], int) and 0 < item[key] < 2**53)
    for key in ("pinned", "featured", "liked"):
        assert isinstance(item[key], bool), (key, item[key])
    assert item["status"] in {"published", "pending", "shadow", "deleted", "rejected"}
    assert item["visibility"] in {"public", "friends"}
    assert isinstance(item["body"], str) and isinstance(item["html"], str)
    assert item["author"] is None or assert_user_shape(item["author"]) is None
    if item["reply_to"] is not None:
        assert set(item["reply_to"]) >= {"id", "author"}
        assert item["reply_to"]["id"] == item["reply_to_id"]
        if item["reply_to"]["author"] is not None:
            assert_user_shape(item["reply_to"]["author"])
    else:
        assert item["reply_to_id"] is None
    assert_iso_time(item["created_at"])
    if item["edited_at"] is not None:
        assert_iso_time(item["edited_at"])


def ids(items) -> list[int]:
    return [item["id"] for item in items]


def walk(client, url: str, params: dict | None = None, *, between=None, max_pages: int = 1000) -> list[list[dict]]:
    """Follow ``next_cursor`` from the first page to the end; the pages' items. ``between(n)``
    runs after page ``n`` when there is a next page."""
    params = dict(params or {})
    pages: list[list[dict]] = []
    cursor = None
    for n in range(max_pages):
        query = dict(params)
        if cursor is not None:
            query["cursor"] = cursor
        response = client.get(url, query)
        assert response.status_code == 200, (n, response.status_code, response.content[:500])
        body = response.json()
        assert {"items", "next_cursor"} <= set(body), body
        assert len(body["items"]) <= int(params.get("limit", 20))
        pages.append(body["items"])
        cursor = body["next_cursor"]
        if cursor is None:
            return pages
        assert isinstance(cursor, str) and cursor
        if between is not None:
            between(n)
    raise AssertionError(f"pagination of {url} did not end after {max_pages} pages")


def walk_ids(client, url, params=None, *, between=None) -> list[int]:
    return [item["id"] for page in walk(client, url, params, between=between) for item in page]


def first_page(client, url, params=None) -> dict:
    response = client.get(url, params or {})
    assert response.status_code == 200, (response.status_code, response.content[:500])
    return response.json()


def set_pinned(comment_or_id, pinned: bool = True) -> None:
    """Pin through the service, which keeps the per-subject limit and tells the cached pages."""
    from comments.services import comment_set_flags

    comment_set_flags(comment_id=getattr(comment_or_id, "pk", comment_or_id), pinned=pinned)


@pytest.fixture
def other_user(db):
    return UserFactory(username="other")


@pytest.fixture
def third_user(db):
    return UserFactory(username="third")


@pytest.fixture
def staff(db):
    return UserFactory(username="staff", is_staff=True)


@pytest.fixture
def flat_subject(site):
    return SubjectFactory(site=site, mode="flat")


@pytest.fixture
def stacked_subject(site):
    return SubjectFactory(site=site, mode="stacked")

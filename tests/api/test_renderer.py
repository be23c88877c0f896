"""The API's orjson renderer writes the bytes DRF's own JSON renderer writes."""

from __future__ import annotations

import datetime
import decimal
import json
import uuid

import pytest
from django.utils.translation import gettext_lazy
from rest_framework.renderers import JSONRenderer

from comments.api.renderers import ApiJSONRenderer

from ..factories import CommentFactory

UTC = datetime.UTC


@pytest.mark.parametrize(
    "data",
    [
        {"created_at": datetime.datetime(2026, 11, 24, 3, 14, 25, 123456, tzinfo=UTC)},
        {"created_at": datetime.datetime(2026, 11, 24, 3, 14, 25, tzinfo=UTC), "edited_at": None},
        {"at": datetime.datetime(2026, 1, 2, 3, 4, 5, tzinfo=datetime.timezone(datetime.timedelta(hours=8)))},
        {"day": datetime.date(2026, 11, 24), "id": uuid.UUID(int=7), "n": 2**53 - 1, "neg": -1, "f": 0.5},
        {
            "message": gettext_lazy("Not found."),
            "amount": decimal.Decimal("1.25"),
            "wait": datetime.timedelta(seconds=90),
        },
        {"body": 'line\u2028next\u2029para, 盖楼 "quoted" \\ </script>', "empty": [], "nested": {"a": [{"b": True}]}},
        {1: "non-string key"},
        [],
    ],
)
def test_the_same_bytes_as_drf(data):
    assert ApiJSONRenderer().render(data) == JSONRenderer().render(data)


def test_pretty_printing_is_left_to_drf():
    data = {"a": [1, 2]}
    rendered = ApiJSONRenderer().render(data, "application/json; indent=2")
    assert rendered == JSONRenderer().render(data, "application/json; indent=2")
    assert b"\n  " in rendered


def test_nothing_renders_as_nothing():
    assert ApiJSONRenderer().render(None) == b""


@pytest.mark.django_db
def test_a_comment_page_renders_as_drf_renders_it(api):
    comment = CommentFactory(body="Hello\u2028world")
    response = api.get(f"/api/v1/subjects/{comment.subject_id}/comments")
    assert response.status_code == 200
    assert response.content == JSONRenderer().render(json.loads(response.content))
    assert b"\\u2028" in response.content

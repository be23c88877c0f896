"""Booleans are strict across the API: a JSON ``true`` or ``false`` in a body (``"yes"``,
``"off"``, ``1``, ``"true"`` are ``400 invalid`` with the field named), ``true`` or ``false`` in a
query string. Every boolean input field of every serializer is one of the two strict fields."""

from __future__ import annotations

import pytest
from rest_framework import serializers

from comments.api.fields import QueryBooleanField, StrictBooleanField
from moderation.models import WordEntry

from .conftest import API, assert_error

# What DRF's BooleanField took for one (null, "" and the like it refused already).
NOT_A_JSON_BOOLEAN = ["yes", "no", "off", "on", "true", "false", 1, 0, "1"]


@pytest.mark.parametrize("value", NOT_A_JSON_BOOLEAN, ids=repr)
def test_a_boolean_in_a_body_is_a_json_boolean_or_400(client_for, moderator, site, value):
    client = client_for(moderator)
    words = f"{API}/moderation/words"
    error = assert_error(
        client.post(words, {"site": site.key, "word": "spam", "action": "block", "inside_words": value}, format="json"),
        400,
        "invalid",
    )
    assert set(error["fields"]) == {"inside_words"}, error
    assert not WordEntry.objects.exists()
    for url, field in (
        (f"{API}/sites/{site.key}/signin", "sso"),
        (f"{API}/notifications/preferences", "like_milestones"),
    ):
        error = assert_error(client.patch(url, {field: value}, format="json"), 400, "invalid")
        assert set(error["fields"]) == {field}, (url, error)
    for flag in (True, False):
        entry = {"site": site.key, "word": f"spam{flag}", "action": "block", "inside_words": flag}
        answer = client.post(words, entry, format="json")
        assert answer.status_code == 201, answer.content
        assert answer.json()["inside_words"] is flag


@pytest.mark.parametrize("value", ["1", "0", "yes", "no", "on", "off", "True", "FALSE"])
def test_a_boolean_in_a_query_string_is_true_or_false_or_400(client_for, user, value):
    client = client_for(user)
    error = assert_error(client.get(f"{API}/notifications", {"unread": value}), 400, "invalid")
    assert set(error["fields"]) == {"unread"}, error
    for flag in ("true", "false"):
        assert client.get(f"{API}/notifications", {"unread": flag}).status_code == 200


def _input_serializers():
    """Every serializer of the API's inputs (bodies and query strings), by the schema's
    generator: what each operation validates its request with."""
    from drf_spectacular.generators import SchemaGenerator

    generator = SchemaGenerator()
    generator.get_schema(request=None, public=True)
    return [
        component.object
        for component in generator.registry._components.values()
        if isinstance(component.object, serializers.Serializer) and component.name.endswith("Request")
    ]


def _boolean_fields(serializer, prefix=""):
    for name, field in serializer.fields.items():
        if isinstance(field, serializers.BooleanField):
            yield f"{prefix}{name}", field
        elif isinstance(field, serializers.Serializer):
            yield from _boolean_fields(field, f"{prefix}{name}.")


def test_every_boolean_in_a_request_body_is_strict(db):
    found = {
        f"{type(serializer).__name__}.{name}": type(field).__name__
        for serializer in _input_serializers()
        for name, field in _boolean_fields(serializer)
    }
    assert found, "the API takes booleans (WordIn.inside_words, SiteSigninIn.sso, ...)"
    assert {name: kind for name, kind in found.items() if kind != StrictBooleanField.__name__} == {}, found


def test_every_boolean_in_a_query_string_is_strict():
    from comments.api import serializers as core
    from feeds import api as feeds
    from moderation import api as moderation
    from notifications import api as notifications

    params = [
        cls
        for module in (core, feeds, moderation, notifications)
        for cls in vars(module).values()
        if isinstance(cls, type) and issubclass(cls, serializers.Serializer) and cls.__name__.endswith("Params")
    ]
    assert params
    loose = [
        f"{cls.__name__}.{name}"
        for cls in params
        for name, field in cls().fields.items()
        if isinstance(field, serializers.BooleanField) and not isinstance(field, QueryBooleanField)
    ]
    assert loose == []

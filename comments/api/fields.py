"""Strict JSON fields: the contract says a known field of the wrong type is ``400 invalid``,
while DRF's stock fields quietly turn ``123`` into ``"123"`` and ``"12"`` into ``12``."""

from __future__ import annotations

from django.conf import settings
from rest_framework import serializers

from ..ids import MAX_ID


class StrictCharField(serializers.CharField):
    def to_internal_value(self, data):
        if not isinstance(data, str):
            self.fail("invalid")
        return super().to_internal_value(data)


class StrictIntegerField(serializers.IntegerField):
    def to_internal_value(self, data):
        if isinstance(data, bool) or not isinstance(data, int):
            self.fail("invalid")
        return super().to_internal_value(data)


class IdField(StrictIntegerField):
    def __init__(self, **kwargs):
        kwargs.setdefault("min_value", 1)
        kwargs.setdefault("max_value", MAX_ID)
        super().__init__(**kwargs)


class StrictBooleanField(serializers.BooleanField):
    """JSON ``true`` or ``false`` only (DRF's takes ``"yes"``, ``1`` and ``"on"`` too)."""

    def to_internal_value(self, data):
        if not isinstance(data, bool):
            self.fail("invalid")
        return data


class QueryBooleanField(serializers.BooleanField):
    """A boolean of the query string: ``true`` or ``false`` only, as OpenAPI writes a boolean
    parameter (DRF's takes ``1``, ``yes``, ``on``, ``True``... too)."""

    def to_internal_value(self, data):
        if data == "true":
            return True
        if data == "false":
            return False
        self.fail("invalid")


class CommentBodyField(StrictCharField):
    """A comment's Markdown body. Whether it is blank, only invisible characters or too long is
    the service's rule (``comments.services.check_body``, one for every surface: posts, edits,
    guests), checked on the text as stored; here only its type, and a bound on what is read at
    all. The schema states the service's rule (``comments.api.schema``)."""

    def __init__(self, **kwargs):
        kwargs.setdefault("trim_whitespace", False)  # "  " is the service's to refuse
        kwargs.setdefault("allow_blank", False)
        kwargs.setdefault("max_length", settings.COMMENTS_MAX_BODY * 4)
        super().__init__(**kwargs)


class ProviderKeysField(serializers.ListField):
    """Keys of OpenID Connect providers. Which ones the service has (``ACCOUNTS_OIDC_PROVIDERS``)
    is the service's check (``site_signin_update``); the schema names them
    (``comments.api.schema``)."""

    def __init__(self, **kwargs):
        kwargs.setdefault("child", StrictCharField(max_length=64))
        kwargs.setdefault("max_length", 20)
        super().__init__(**kwargs)

"""Strict JSON fields: the contract says a known field of the wrong type is ``400 invalid``,
while DRF's stock fields quietly turn ``123`` into ``"123"`` and ``"12"`` into ``12``."""

from __future__ import annotations

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

"""Webhooks: a site's endpoints (a URL, a secret, the events it wants) and the delivery of each
event to each endpoint that wants it (one row per event and endpoint: its chain of attempts)."""

from __future__ import annotations

from django.db import models
from django.db.models import F, Q


class EventType(models.TextChoices):
    COMMENT_CREATED = "comment.created"
    COMMENT_UPDATED = "comment.updated"
    COMMENT_STATUS_CHANGED = "comment.status_changed"
    REPORT_CREATED = "report.created"


class Endpoint(models.Model):
    """Where a site wants its events posted. ``secret`` is ``whsec_<base64 key>`` (Standard
    Webhooks): the receiver verifies each request's signature with it."""

    site = models.ForeignKey("comments.Site", on_delete=models.CASCADE, related_name="webhook_endpoints")
    url = models.URLField(max_length=2000)
    secret = models.CharField(max_length=100)
    events = models.JSONField(default=list)  # EventType values, at least one
    active = models.BooleanField(default=True)
    description = models.CharField(max_length=200, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        db_table = "webhooks_endpoint"
        indexes = [models.Index(fields=["site", "active"], name="webhook_endpoints_of_site")]

    def __str__(self) -> str:
        return self.url

    def wants(self, event_type: str) -> bool:
        return self.active and event_type in self.events


class DeliveryState(models.TextChoices):
    PENDING = "pending"  # waiting for its first attempt or a retry (``next_attempt_at``)
    DELIVERED = "delivered"  # the endpoint answered 2xx
    FAILED = "failed"  # no 2xx within ``WEBHOOKS_RETRY_FOR`` of the chain's start


class Delivery(models.Model):
    """One event for one endpoint and every attempt at it. ``body`` is the JSON sent, kept as
    sent: a retry or a redelivery posts the same bytes under the same ``webhook-id``
    (``event_id``), signed anew with the time of the attempt."""

    endpoint = models.ForeignKey(Endpoint, on_delete=models.CASCADE, related_name="deliveries")
    event_id = models.CharField(max_length=64)
    event_type = models.CharField(max_length=32, choices=EventType.choices)
    body = models.TextField()
    state = models.CharField(max_length=10, choices=DeliveryState.choices, default=DeliveryState.PENDING)
    attempts = models.PositiveIntegerField(default=0)
    # Retries stop WEBHOOKS_RETRY_FOR seconds after this (the first attempt, or a redelivery).
    chain_started_at = models.DateTimeField()
    # When the next attempt is due (pending); while an attempt runs, when its claim lapses.
    next_attempt_at = models.DateTimeField(null=True, blank=True)
    last_attempt_at = models.DateTimeField(null=True, blank=True)
    response_code = models.PositiveSmallIntegerField(null=True, blank=True)
    response_excerpt = models.CharField(max_length=500, blank=True)
    error = models.CharField(max_length=200, blank=True)  # timeout, refused, ...: no response
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        db_table = "webhooks_delivery"
        verbose_name_plural = "deliveries"
        constraints = [
            # A retried task or a replayed stream entry is the same event again: one delivery.
            models.UniqueConstraint(fields=["endpoint", "event_id"], name="webhook_delivery_once_per_event"),
        ]
        indexes = [
            # the retry beat: pending deliveries that are due
            models.Index(fields=["next_attempt_at"], condition=Q(state="pending"), name="webhook_deliveries_due"),
            # an endpoint's recent deliveries (console, admin)
            models.Index(F("endpoint"), F("id").desc(), name="webhook_deliveries_recent"),
        ]

    def __str__(self) -> str:
        return f"{self.event_type} {self.event_id} -> {self.endpoint_id}"

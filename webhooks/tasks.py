"""Celery tasks of webhooks (queue ``webhooks``): thin, idempotent, acknowledged late. Each
delivery is a task of its own, so one slow endpoint holds up no other; an attempt is claimed in
the database first (``services.delivery_attempt``), so a retried task posts nothing twice."""

from __future__ import annotations

from functools import partial

from celery import shared_task
from django.db import transaction

from . import jobs, queries, services
from .events import Event


def _deliver_each(delivery_ids: list[int]) -> int:
    for delivery_id in delivery_ids:
        deliver.delay(delivery_id)
    return len(delivery_ids)


@shared_task(name="webhooks.handle_event", acks_late=True, ignore_result=True)
def handle_event(text: str) -> int:
    """One event handed on from a request (``jobs.event_enqueue``)."""
    event = Event.parse(text)
    return _deliver_each(jobs.events_handle([event])) if event is not None else 0


@shared_task(name="webhooks.drain_events", acks_late=True, ignore_result=True)
def drain_events() -> int:
    """The events queued in Redis, in batches (beat, every ``WEBHOOKS_EVENTS_INTERVAL``)."""
    return _deliver_each(jobs.events_drain())


@shared_task(name="webhooks.deliver", acks_late=True, ignore_result=True)
def deliver(delivery_id: int) -> str | None:
    """One attempt at a delivery, if it is due."""
    return services.delivery_attempt(delivery_id=delivery_id)


@shared_task(name="webhooks.retry_due", acks_late=True, ignore_result=True)
def retry_due() -> int:
    """The deliveries whose retry is due, and any whose first task was lost (beat, every
    ``WEBHOOKS_RETRY_INTERVAL``)."""
    return _deliver_each(queries.deliveries_due())


def redeliver(deliveries) -> int:
    """Start each delivery's chain again (``services.delivery_redeliver``) and send it now,
    after the commit: the admin's and the console's redeliver button."""
    for delivery in deliveries:
        services.delivery_redeliver(delivery=delivery)
        transaction.on_commit(partial(deliver.delay, delivery.pk))
    return len(deliveries)

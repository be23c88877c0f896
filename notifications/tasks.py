"""Celery tasks of notifications (queue ``notifications``): thin, idempotent, acknowledged late;
``jobs`` and the services do the work."""

from __future__ import annotations

from celery import shared_task

from . import fanout, jobs, mail
from .events import Event


@shared_task(name="notifications.handle_event", acks_late=True, ignore_result=True)
def handle_event(text: str) -> int:
    """One event handed on from a request (``jobs.event_enqueue``)."""
    event = Event.parse(text)
    return jobs.events_handle([event]) if event is not None else 0


@shared_task(name="notifications.drain_events", acks_late=True, ignore_result=True)
def drain_events() -> int:
    """The events queued in Redis, in batches (beat, every ``NOTIFICATIONS_EVENTS_INTERVAL``)."""
    return jobs.events_drain()


@shared_task(name="notifications.like_milestones", acks_late=True, ignore_result=True)
def like_milestones() -> int:
    """Authors who asked for it are told their comments' like milestones (beat)."""
    return fanout.like_milestones_notify()


@shared_task(name="notifications.send_emails", acks_late=True, ignore_result=True)
def send_emails() -> int:
    """The queued emails, claimed and sent in batches (beat, every
    ``NOTIFICATIONS_EMAIL_INTERVAL``)."""
    return mail.emails_send()


@shared_task(name="notifications.send_digests", acks_late=True, ignore_result=True)
def send_digests() -> int:
    """Each reader's daily digest (beat, every ``NOTIFICATIONS_DIGEST_INTERVAL``)."""
    return mail.digests_send()


@shared_task(name="notifications.review_queues", acks_late=True, ignore_result=True)
def review_queues() -> int:
    """Moderators of sites whose review queue is past the threshold are told (beat)."""
    return fanout.review_queues_notify()

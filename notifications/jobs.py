"""The background work of notifications (run by ``tasks.py``): the events handed on from
requests, turned into notifications (in batches, from a Redis stream); like milestones. Each is
idempotent: running it twice leaves what running it once did.

The request's share of a post is one ``XADD`` (``event_enqueue``), the least a request can do to
hand work on: no query, no broker publish. A beat task (``notifications.drain_events``, every
``NOTIFICATIONS_EVENTS_INTERVAL`` seconds) reads the stream in batches through a consumer group
and acknowledges a batch once everything it causes is committed, so a worker killed midway
leaves its batch to the next one, which finds the notifications already written and writes
nothing twice. Without that Redis (the embedded default), or while it fails, each event is a
task of its own, eager in the embedded default."""

from __future__ import annotations

from collections.abc import Callable

from django.conf import settings

from infra import streams

from . import fanout
from .events import Event

EVENTS_STREAM = "nt:events"  # in the Redis of like state (LIKES_REDIS_URL), beside moderation's md:recheck
EVENTS_BATCH = 500  # events read, handled and acknowledged together
EVENTS_MAX_SECONDS = 30.0  # a drain stops taking batches after this long; the next run goes on


def event_enqueue(event: Event, *, otherwise: Callable[[], object] | None = None) -> bool:
    """Hand an event to the workers: one entry on the events stream. Without that Redis,
    ``otherwise`` runs (the caller's task of its own, ``tasks.handle_event`` on the
    ``notifications`` queue) and the answer is False."""
    return streams.stream_add(EVENTS_STREAM, {"e": event.text()}, otherwise=otherwise)


def events_handle(events: list[Event]) -> int:
    """Everything a batch of events causes; returns the notifications written."""
    return fanout.events_notify(events)


def events_drain() -> int:
    """Handle the events waiting in the stream, a batch at a time, until it is empty or
    ``EVENTS_MAX_SECONDS`` have passed; returns how many events were handled. Entries read by a
    worker that died are taken over after ``NOTIFICATIONS_EVENTS_RECLAIM`` seconds."""
    return streams.stream_drain(
        EVENTS_STREAM,
        _handle_entries,
        batch=EVENTS_BATCH,
        reclaim_seconds=settings.NOTIFICATIONS_EVENTS_RECLAIM,
        max_seconds=EVENTS_MAX_SECONDS,
    )


def _handle_entries(entries: list[tuple[str, list]]) -> int:
    parsed = [Event.parse(fields[1]) for _, fields in entries if len(fields) == 2 and fields[0] == "e"]
    events = [e for e in parsed if e is not None]
    events_handle(events)
    return len(events)

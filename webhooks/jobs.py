"""The background work of webhooks (run by ``tasks.py``): the events handed on from requests,
turned into deliveries (in batches, from a Redis stream), and the deliveries that are due.

The request's share of a post is one ``XADD`` (``event_enqueue``), as for notifications: no
query, no broker publish. A beat task (``webhooks.drain_events``, every
``WEBHOOKS_EVENTS_INTERVAL`` seconds) reads the stream in batches through a consumer group and
acknowledges a batch once its deliveries are committed; a worker killed midway leaves the batch
to the next drain, which finds the deliveries written (one per endpoint and event) and writes
none twice. Without that Redis (the embedded default), or while it fails, each event is a task
of its own."""

from __future__ import annotations

from collections.abc import Callable

from django.conf import settings

from infra import streams

from . import queries, services
from .events import Event

EVENTS_STREAM = "wh:events"  # in the Redis of like state (LIKES_REDIS_URL), beside nt:events
EVENTS_BATCH = 200
EVENTS_MAX_SECONDS = 30.0


def event_enqueue(event: Event, *, otherwise: Callable[[], object] | None = None) -> bool:
    """One entry on the events stream, travelling with the request's other hand-offs. Without
    that Redis, ``otherwise`` runs (the caller's task of its own, ``tasks.handle_event``) and the
    answer is False."""
    return streams.stream_add(EVENTS_STREAM, {"e": event.text()}, otherwise=otherwise)


def events_handle(events: list[Event]) -> list[int]:
    """The deliveries a batch of events causes; returns the ids of those written now."""
    created: list[int] = []
    if not events or not queries.any_endpoint_active():
        return created
    for event in events:
        created += services.deliveries_create(event=event)
    return created


def events_drain() -> list[int]:
    """Hand on the events waiting in the stream, a batch at a time; returns the ids of the
    deliveries written. Entries of a worker that died are taken over after
    ``WEBHOOKS_EVENTS_RECLAIM`` seconds."""
    created: list[int] = []

    def handle(entries: list[tuple[str, list]]) -> int:
        events = [Event.parse(fields[1]) for _, fields in entries if len(fields) == 2 and fields[0] == "e"]
        created.extend(events_handle([e for e in events if e is not None]))
        return len(entries)

    streams.stream_drain(
        EVENTS_STREAM,
        handle,
        batch=EVENTS_BATCH,
        reclaim_seconds=settings.WEBHOOKS_EVENTS_RECLAIM,
        max_seconds=EVENTS_MAX_SECONDS,
    )
    return created

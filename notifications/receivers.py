"""What the notifications app does when the core or moderation reports a change (after its
commit): hand the event on, and nothing else on the request's path."""

from __future__ import annotations

from comments.outbox import task_send

from . import events, jobs, tasks


def _hand_on(event: events.Event) -> None:
    """On the events stream, or without its Redis a task of its own (kept in the database while
    the broker is down too)."""
    jobs.event_enqueue(event, otherwise=lambda: task_send(tasks.handle_event, event.text()))


def comment_posted(sender, *, comment_id: int, **kwargs) -> None:
    _hand_on(events.Event.new(events.POSTED, comment_id))


def comment_edited(sender, *, comment_id: int, **kwargs) -> None:
    _hand_on(events.Event.new(events.EDITED, comment_id))


def comment_status_changed(
    sender, *, comment_id: int, from_status: str, to_status: str, actor_id: int | None = None, **kwargs
) -> None:
    _hand_on(events.Event.new(events.STATUS, comment_id, from_status, to_status, actor_id))

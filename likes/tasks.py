"""Celery tasks of the likes app: thin, idempotent, the services do the work."""

from __future__ import annotations

from dataclasses import asdict

from celery import shared_task

from . import services


@shared_task(name="likes.flush", acks_late=True, ignore_result=True)
def flush() -> dict:
    """Drain queued like actions into the database (beat, every ``LIKES_FLUSH_INTERVAL``)."""
    return asdict(services.likes_flush())


@shared_task(name="likes.rebuild", acks_late=True, ignore_result=True)
def rebuild(subject_id: int | None = None) -> int | None:
    return services.like_state_rebuild(subject_id=subject_id)

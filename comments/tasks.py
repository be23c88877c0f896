"""Celery tasks of the comment core: thin, idempotent, ids in, services do the work."""

from __future__ import annotations

from datetime import timedelta

from celery import shared_task
from django.utils import timezone

from . import idempotency, outbox, services
from .ids import id_floor_at
from .models import Comment


@shared_task(name="comments.reconcile_subject", acks_late=True)
def reconcile_subject(subject_id: int) -> dict:
    report = services.subject_reconcile_counters(subject_id=subject_id)
    return {
        "subject_id": report.subject_id,
        "fixed_subject": report.fixed_subject,
        "fixed_comments": report.fixed_comments,
    }


@shared_task(name="comments.reconcile_recent", acks_late=True)
def reconcile_recent(hours: int = 24) -> int:
    """Queue a reconcile of every subject that got a comment in the last ``hours`` (ids are
    time-ordered, so the primary key finds them)."""
    since = id_floor_at(timezone.now() - timedelta(hours=hours))
    subject_ids = list(Comment.objects.filter(pk__gte=since).values_list("subject_id", flat=True).distinct())
    for subject_id in subject_ids:
        reconcile_subject.delay(subject_id)
    return len(subject_ids)


@shared_task(name="comments.send_deferred", acks_late=True)
def send_deferred() -> int:
    """Queue the tasks kept in the database while the broker was down (``comments.outbox``)."""
    return outbox.deferred_tasks_send()


@shared_task(name="comments.forget_idempotent_requests", acks_late=True)
def forget_idempotent_requests() -> int:
    """Forget the answers kept for Idempotency-Keys past their time."""
    return idempotency.idempotent_requests_forget()

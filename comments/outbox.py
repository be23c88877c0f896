"""Celery tasks handed on durably. A request that has committed its change hands work on to other
processes after the commit (a post's second check, its notifications' and webhooks' events):
on a Redis stream, or without it a Celery task. ``task_send`` queues such a task, and while the
broker cannot take it (Redis or RabbitMQ down) keeps it in the database instead
(``DeferredTask``), where ``deferred_tasks_send`` (a beat task) queues it once the broker is
back. So a change that was stored is answered as stored, never with a 500 for a hand-off that
can wait, and the hand-off is not lost (issue 33, F6).

A task kept here runs later than it would have, and at least once: tasks handed on this way are
idempotent (STYLE.md, habit 7)."""

from __future__ import annotations

import logging

from celery import current_app
from django.db import transaction
from kombu.exceptions import OperationalError

from .models import DeferredTask

logger = logging.getLogger(__name__)

# What a publish raises when the broker cannot be reached (kombu wraps the transport's errors).
BROKER_DOWN = (OperationalError, ConnectionError, TimeoutError)
# A publish tries once more before the task is kept: a broker that is down refuses at once.
_RETRY_POLICY = {"max_retries": 1, "interval_start": 0, "interval_step": 0.1, "interval_max": 0.1}
SEND_BATCH = 200  # kept tasks queued per run of the beat task


def task_send(task, *args) -> bool:
    """Queue ``task`` with ``args`` (JSON values: ids, text); True when the broker took it, False
    when it is kept in the database for ``deferred_tasks_send``."""
    try:
        task.apply_async(args=args, retry=True, retry_policy=_RETRY_POLICY)
        return True
    except BROKER_DOWN as exc:
        logger.warning("broker unavailable (%s): task %s kept in the database", exc, task.name)
        DeferredTask.objects.create(task=task.name, args=list(args))
        return False


def deferred_tasks_send(*, batch: int = SEND_BATCH) -> int:
    """Queue the tasks kept while the broker was down, oldest first, and forget each once the
    broker took it; how many went. Rows another sender holds are skipped, so two beats never
    queue one twice; a broker that fails again leaves the rest for the next run."""
    sent = 0
    with transaction.atomic():
        rows = list(DeferredTask.objects.select_for_update(skip_locked=True).order_by("pk")[:batch])
        done = []
        for row in rows:
            task = current_app.tasks.get(row.task)
            if task is None:  # a task renamed or removed since: nothing would run it
                logger.error("kept task %s is unknown; dropped (args %s)", row.task, row.args)
                done.append(row.pk)
                continue
            try:
                task.apply_async(args=row.args, retry=True, retry_policy=_RETRY_POLICY)
            except BROKER_DOWN:
                break
            done.append(row.pk)
            sent += 1
        DeferredTask.objects.filter(pk__in=done).delete()
    return sent

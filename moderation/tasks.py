"""Celery tasks of moderation: thin, idempotent, acknowledged late; the services, the rechecks
and the actions do the work."""

from __future__ import annotations

from celery import shared_task

from . import actions, rechecks, services


@shared_task(name="moderation.recheck_comment", acks_late=True, ignore_result=True)
def recheck_comment(comment_id: int) -> list[str]:
    """The second, slower look at a new or edited comment, off the request path."""
    return rechecks.comment_recheck(comment_id=comment_id)


@shared_task(name="moderation.recheck_queued", acks_late=True, ignore_result=True)
def recheck_queued() -> int:
    """The second checks queued in Redis, in batches (beat, every
    ``MODERATION_RECHECK_INTERVAL``)."""
    return rechecks.rechecks_run_queued()


@shared_task(name="moderation.rescan_recent", acks_late=True, ignore_result=True)
def rescan_recent(site_id: int | None = None, hours: int = 24) -> int:
    """After a word list change: recent comments checked against the new list."""
    return rechecks.comments_rescan(site_id=site_id, hours=hours)


@shared_task(name="moderation.feature_top_comments", acks_late=True, ignore_result=True)
def feature_top_comments(hours: int = 24) -> int:
    return actions.top_comments_feature(hours=hours)


@shared_task(name="moderation.expire_claims", acks_late=True, ignore_result=True)
def expire_claims() -> int:
    return services.review_task_claims_expire()

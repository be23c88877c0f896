"""What moderation does when the comment core reports a change (after its commit), and the
background work its own services ask for (``signals.py``)."""

from __future__ import annotations

from comments.models import Status
from comments.outbox import task_send

from . import rechecks, tasks
from .services import review_task_open


def comment_written(sender, *, comment_id: int, status: str, reasons: list[str], **kwargs) -> None:
    """A comment held for review gets its task, with the reasons the checks gave; every new or
    edited comment gets the second check, off the request path: queued on the like state's
    Redis, or without it a task of its own."""
    if status == Status.PENDING and reasons:
        review_task_open(comment_id=comment_id, reasons=reasons)
    rechecks.recheck_request(comment_id, otherwise=lambda: task_send(tasks.recheck_comment, comment_id))


def word_added(sender, *, site_id: int | None, **kwargs) -> None:
    task_send(tasks.rescan_recent, site_id)

"""What moderation does when the comment core reports a change (after its commit)."""

from __future__ import annotations

from comments.models import Status

from .services import recheck_request, review_task_open


def comment_written(sender, *, comment_id: int, status: str, reasons: list[str], **kwargs) -> None:
    """A comment held for review gets its task, with the reasons the checks gave; every new or
    edited comment gets the second check, off the request path."""
    if status == Status.PENDING and reasons:
        review_task_open(comment_id=comment_id, reasons=reasons)
    recheck_request(comment_id)

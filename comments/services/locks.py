"""Row locks in the lock order (a subject's row before its comments'), and the cached pages a
change makes out of date: what every writer of comments takes before and tells after."""

from __future__ import annotations

from collections.abc import Iterable

from django.db import transaction

from infra import pagecache

from ..exceptions import NotFound
from ..models import Comment, Subject


def lock_subject(subject_id: int) -> None:
    list(Subject.objects.select_for_update().filter(pk=subject_id).values_list("pk", flat=True))


def lock_comment(comment_id: int) -> Comment:
    """The comment, locked after its subject (the lock order); call inside a transaction."""
    subject_id = Comment.objects.filter(pk=comment_id).values_list("subject_id", flat=True).first()
    if subject_id is None:
        raise NotFound()
    lock_subject(subject_id)
    return Comment.objects.select_for_update().get(pk=comment_id, subject_id=subject_id)


def comment_lock(comment_id: int) -> Comment:
    """The comment as it is now, locked for a change made in the caller's transaction (after
    its subject: the lock order), with its subject and site. Whatever a change requires of the
    comment is checked on this row, never on one read before the lock: another transaction
    may have changed it since (lock, then check, then change)."""
    comment = lock_comment(comment_id)
    comment.subject = Subject.objects.select_related("site").get(pk=comment.subject_id)
    return comment


def pages_change(subject_id: int) -> None:
    """The subject's cached pages go out of date now and again when the current transaction
    commits: a reader who rebuilds a page in between reads the rows as they were, and the
    second deletion drops what it built. (Only the first one happens in a transaction that is
    rolled back, which costs a rebuild and nothing else.)"""
    pages_change_many([subject_id])


def pages_change_many(subject_ids: Iterable[int]) -> None:
    """``pages_change`` for many subjects, in one round trip to the cache each time."""
    subject_ids = sorted(set(subject_ids))
    pagecache.subjects_changed(subject_ids)
    transaction.on_commit(lambda: pagecache.subjects_changed(subject_ids))

"""The second look at comments, off the request path (run by ``tasks.py``): the second check of
new and edited comments (queued, and run in batches) and the re-scan after a word list change.
Each is idempotent: running it twice leaves what running it once did.

Nothing here unpublishes a comment without a moderator's decision, except a ``block`` word,
which holds the comment (``pending``) for review; other findings open or join review tasks.
Neither happens to a comment a moderator acted on since its text last changed.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import timedelta

from django.conf import settings
from django.db import transaction
from django.db.models import Count
from django.utils import timezone

from comments.exceptions import NotFound
from comments.ids import id_floor_at
from comments.models import Comment, CommentContent, Status
from comments.services import comment_lock
from infra import streams

from . import words
from .queries import moderator_acted_since
from .services import comment_hold, review_task_open

RECHECK_STREAM = "md:recheck"  # queued second checks, in the Redis of like state

_CHECKED = (Status.PUBLISHED, Status.PENDING, Status.SHADOW)
RECHECK_BATCH = 500  # queued second checks read, checked and acknowledged together
RECHECK_MAX_SECONDS = 30.0  # a run stops taking batches after this long; the next goes on


def recheck_request(comment_id: int, *, otherwise: Callable[[], object] | None = None) -> bool:
    """Queue the second check of a new or edited comment (``rechecks_run_queued`` runs them in
    batches): one entry on a Redis stream. Without that Redis, ``otherwise`` runs (the caller's
    task of its own, ``tasks.recheck_comment``) and the answer is False."""
    return streams.stream_add(RECHECK_STREAM, {"c": comment_id}, otherwise=otherwise)


def _word_findings(site_id: int, body: str) -> tuple[list[str], bool]:
    """Review reasons from the current word lists, and whether a ``block`` word is there."""
    global_words, site_words = words.filters_for(site_id)
    hits = [*global_words.scan(body), *site_words.scan(body)]
    reasons = [f"word:{w}" for w in sorted({h.word for h in hits if h.action in ("block", "review")})]
    return reasons, any(h.action == "block" for h in hits)


def _act_on(comment_id: int, site_id: int, reasons: list[str], blocked: bool, why: str) -> None:
    """Open (or join) the comment's review task with what a check found, holding the comment
    first for a ``block`` word; nothing when a moderator acted on the comment since its text
    last changed: their decision stands until the text changes.

    Lock, then check: the comment was read before the check ran, and a moderator may have
    decided on it since; their action locks the comment too, so on the locked row it is either
    done or not begun."""
    if not reasons:
        return
    with transaction.atomic():
        try:
            comment = comment_lock(comment_id)
        except NotFound:
            return
        if comment.status not in _CHECKED or moderator_acted_since(
            comment_id=comment_id, since=comment.edited_at or comment.created_at
        ):
            return
        if blocked:
            comment_hold(comment_id=comment_id, site_id=site_id, why=why)
        review_task_open(comment_id=comment_id, reasons=reasons)


def comment_recheck(*, comment_id: int) -> list[str]:
    """The second check of one comment (``comments_recheck``); its reasons."""
    return comments_recheck(comment_ids=[comment_id]).get(comment_id, [])


def comments_recheck(*, comment_ids: list[int]) -> dict[int, list[str]]:
    """The second check of new or edited comments, a batch in a few statements: the word lists
    as they are now (they may have changed since the request), and each author's recent record
    on the site, which the request path does not read: many rejected comments lately, or a
    burst of posts. Returns the reasons found, by comment (gone comments are skipped)."""
    rows = list(
        Comment.objects.filter(pk__in=comment_ids, status__in=_CHECKED).values_list(
            "pk", "author_id", "subject__site_id"
        )
    )
    bodies = dict(CommentContent.objects.filter(pk__in=[pk for pk, _, _ in rows]).values_list("pk", "body"))
    authors = {(author_id, site_id) for _, author_id, site_id in rows if author_id is not None}
    now = timezone.now()
    rejected = _recent_counts(authors, since=now - timedelta(days=7), status=Status.REJECTED)
    posted = _recent_counts(authors, since=now - timedelta(minutes=1))
    found = {}
    for pk, author_id, site_id in rows:
        if pk not in bodies:
            continue
        reasons, blocked = _word_findings(site_id, bodies[pk])
        if rejected.get((author_id, site_id), 0) >= settings.MODERATION_REJECTED_LIMIT:
            reasons.append("author:rejections")
        if posted.get((author_id, site_id), 0) > settings.MODERATION_BURST_LIMIT:
            reasons.append("spam:burst")
        _act_on(pk, site_id, reasons, blocked, "second check")
        found[pk] = reasons
    return found


def _recent_counts(authors: set[tuple[int, int]], *, since, status: str | None = None) -> dict[tuple[int, int], int]:
    """How many comments each ``(author, site)`` wrote since ``since`` (of ``status`` only,
    when given), in one statement for every pair.

    Counted by creation time: a comment stored with an earlier ``created_at`` than its id's
    (history brought in, such as the demo's seed) was not written in a burst. The id bound
    stays as the primary key's way in: a comment's id is made as it is written, so the two
    bounds agree on everything but such history."""
    if not authors:
        return {}
    recent = Comment.objects.filter(
        author_id__in={a for a, _ in authors},
        subject__site_id__in={s for _, s in authors},
        id__gte=id_floor_at(since),
        created_at__gte=since,
    )
    if status is not None:
        recent = recent.filter(status=status)
    counts = recent.values_list("author_id", "subject__site_id").annotate(n=Count("pk")).order_by()
    return {(author_id, site_id): n for author_id, site_id, n in counts if (author_id, site_id) in authors}


def rechecks_run_queued() -> int:
    """Run the second checks queued in Redis (``recheck_request``), in batches, until the queue
    is empty or ``RECHECK_MAX_SECONDS`` have passed; returns how many comments were checked. A
    batch is acknowledged once checked: one read by a worker that died is taken over by a later
    run after ``MODERATION_RECHECK_RECLAIM`` seconds, and checked again (harmless: the check is
    idempotent)."""
    return streams.stream_drain(
        RECHECK_STREAM,
        _recheck_entries,
        batch=RECHECK_BATCH,
        reclaim_seconds=settings.MODERATION_RECHECK_RECLAIM,
        max_seconds=RECHECK_MAX_SECONDS,
    )


def _recheck_entries(entries: list[tuple[str, list]]) -> int:
    ids = sorted({int(fields[1]) for _, fields in entries if len(fields) == 2 and fields[1].isdigit()})
    comments_recheck(comment_ids=ids)
    return len(ids)


def comments_rescan(*, site_id: int | None, hours: int = 24) -> int:
    """Check the comments of the last ``hours`` (of one site, or every site) against the
    current word lists; returns how many got findings."""
    since = id_floor_at(timezone.now() - timedelta(hours=hours))
    recent = Comment.objects.filter(id__gte=since, status__in=_CHECKED).select_related("subject").order_by("id")
    if site_id is not None:
        recent = recent.filter(subject__site_id=site_id)
    found = 0
    last = 0
    while True:
        batch = list(recent.filter(id__gt=last)[:500])
        if not batch:
            return found
        bodies = dict(CommentContent.objects.filter(pk__in=[c.pk for c in batch]).values_list("pk", "body"))
        for comment in batch:
            reasons, blocked = _word_findings(comment.subject.site_id, bodies.get(comment.pk, ""))
            if reasons:
                found += 1
                _act_on(comment.pk, comment.subject.site_id, reasons, blocked, "word list re-scan")
        last = batch[-1].pk

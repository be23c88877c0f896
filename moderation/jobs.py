"""The background work of moderation (run by ``tasks.py``): the second check of new comments,
the re-scan after a word list change, and featuring top comments. Each is idempotent: running
it twice leaves what running it once did.

Nothing here unpublishes a comment without a moderator's decision, except a ``block`` word,
which holds the comment (``pending``) for review; other findings open or join review tasks.
"""

from __future__ import annotations

from datetime import timedelta

from django.conf import settings
from django.utils import timezone

from comments.ids import id_floor_at
from comments.models import Comment, CommentContent, Status

from . import words
from .models import AuditEntry
from .services import comment_hold, review_task_open

_CHECKED = (Status.PUBLISHED, Status.PENDING, Status.SHADOW)


def _word_findings(site_id: int, body: str) -> tuple[list[str], bool]:
    """Review reasons from the current word lists, and whether a ``block`` word is there."""
    global_words, site_words = words.filters_for(site_id)
    hits = [*global_words.scan(body), *site_words.scan(body)]
    reasons = [f"word:{w}" for w in sorted({h.word for h in hits if h.action in ("block", "review")})]
    return reasons, any(h.action == "block" for h in hits)


def _act_on(comment: Comment, site_id: int, reasons: list[str], blocked: bool, why: str) -> None:
    if not reasons:
        return
    if blocked:
        comment_hold(comment_id=comment.pk, site_id=site_id, why=why)
    review_task_open(comment_id=comment.pk, reasons=reasons)


def comment_recheck(*, comment_id: int) -> list[str]:
    """The second check of a new or edited comment: the word lists as they are now (they may
    have changed since the request), and the author's recent record on the site, which the
    request path does not read: many rejected comments lately, or a burst of posts."""
    comment = Comment.objects.select_related("subject").filter(pk=comment_id, status__in=_CHECKED).first()
    content = CommentContent.objects.filter(pk=comment_id).values_list("body", flat=True).first()
    if comment is None or content is None:
        return []
    site_id = comment.subject.site_id
    reasons, blocked = _word_findings(site_id, content)
    if comment.author_id is not None:
        now = timezone.now()
        by_author = Comment.objects.filter(author_id=comment.author_id, subject__site_id=site_id)
        rejected = by_author.filter(status=Status.REJECTED, id__gte=id_floor_at(now - timedelta(days=7))).count()
        if rejected >= settings.MODERATION_REJECTED_LIMIT:
            reasons.append("author:rejections")
        burst = by_author.filter(id__gte=id_floor_at(now - timedelta(minutes=1))).count()
        if burst > settings.MODERATION_BURST_LIMIT:
            reasons.append("spam:burst")
    _act_on(comment, site_id, reasons, blocked, "second check")
    return reasons


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
                _act_on(comment, comment.subject.site_id, reasons, blocked, "word list re-scan")
        last = batch[-1].pk


def top_comments_feature(*, hours: int = 24) -> int:
    """Feature the "god comments" (神评论) of active subjects. The rule: in each subject with a
    comment in the last ``hours``, the ``MODERATION_FEATURE_PER_SUBJECT`` most-liked published
    comments with at least ``MODERATION_FEATURE_MIN_LIKES`` likes, except any a moderator
    unfeatured (their decision stands). Returns how many were featured."""
    from .actions import Feature

    since = id_floor_at(timezone.now() - timedelta(hours=hours))
    subjects = Comment.objects.filter(id__gte=since).values_list("subject_id", flat=True).distinct()
    overruled = AuditEntry.objects.filter(action="unfeature", actor__isnull=False).values("comment_id")
    featured = 0
    for subject_id in subjects.iterator():
        top = list(
            Comment.objects.filter(subject_id=subject_id, status=Status.PUBLISHED, like_count__gte=settings.MODERATION_FEATURE_MIN_LIKES)
            .exclude(id__in=overruled)
            .select_related("subject__site")
            .order_by("-like_count", "id")[: settings.MODERATION_FEATURE_PER_SUBJECT]
        )
        for comment in top:
            if not comment.featured:
                Feature(comment=comment, actor=None, reason="top comment").execute()
                featured += 1
    return featured


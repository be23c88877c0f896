"""Counters repair: a subject's counters recomputed from its rows."""

from __future__ import annotations

from dataclasses import dataclass

from django.db import transaction
from django.db.models import Case, F, QuerySet, Value, When

from .. import paths
from ..models import (
    Comment,
    Status,
    Subject,
    Visibility,
)
from .locks import lock_subject, pages_change

# --- counters repair -----------------------------------------------------------------------


@dataclass
class ReconcileReport:
    subject_id: int
    fixed_subject: bool
    fixed_comments: int


def subject_reconcile_counters(*, subject_id: int) -> ReconcileReport:
    """Recompute every denormalized counter of one subject from the rows, set-based, and
    report what had drifted."""
    from django.db.models import Count, OuterRef, Q, Subquery
    from django.db.models.functions import Coalesce, Concat

    counted = Q(status=Status.PUBLISHED, visibility=Visibility.PUBLIC)

    def count_of(qs: QuerySet[Comment]) -> Coalesce:
        return Coalesce(
            Subquery(qs.order_by().values("subject_id").annotate(n=Count("pk")).values("n")[:1]),
            Value(0),
        )

    same_subject = Comment.objects.filter(counted, subject_id=OuterRef("subject_id"))
    descendants = count_of(
        same_subject.filter(path__gt=OuterRef("path"), path__lt=Concat(OuterRef("path"), Value(paths.SUBTREE_END)))
    )
    # Each count names the subject (the distribution column: Citus runs a correlated subquery
    # only within the shard); the thread indexes lead with (root_id, subject_id) and the reply
    # index with reply_to_id, so the subject adds no scan of its own.
    thread = count_of(same_subject.filter(root_id=OuterRef("pk")))
    direct = count_of(same_subject.filter(reply_to_id=OuterRef("pk")))
    with transaction.atomic():
        lock_subject(subject_id)
        rows = Comment.objects.filter(subject_id=subject_id)
        expected = rows.annotate(
            want_desc=descendants,
            want_replies=Case(When(depth=0, then=thread), default=direct),
        )
        drifted = [
            (c.pk, c.want_desc, c.want_replies)
            for c in expected.filter(~Q(descendant_count=F("want_desc")) | ~Q(reply_count=F("want_replies"))).only("pk")
        ]
        for pk, want_desc, want_replies in drifted:
            Comment.objects.filter(pk=pk).update(descendant_count=want_desc, reply_count=want_replies)
        totals = rows.aggregate(comments=Count("pk", filter=counted), roots=Count("pk", filter=counted & Q(depth=0)))
        fixed_subject = bool(
            Subject.objects.filter(pk=subject_id)
            .exclude(comment_count=totals["comments"], root_count=totals["roots"])
            .update(comment_count=totals["comments"], root_count=totals["roots"])
        )
        if drifted or fixed_subject:
            pages_change(subject_id)
    return ReconcileReport(subject_id=subject_id, fixed_subject=fixed_subject, fixed_comments=len(drifted))

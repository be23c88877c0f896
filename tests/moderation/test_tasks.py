"""Opening review tasks: one open task per comment, reasons joining it, priority kept right."""

from __future__ import annotations

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from comments.queries import comment_ref_for_viewer
from moderation.models import ReviewTask, TaskState
from moderation.services import (
    report_create,
    review_task_open,
    review_task_priority,
    review_tasks_close,
    sanction_create,
)

from ..factories import CommentFactory, UserFactory


def open_tasks(comment) -> list[ReviewTask]:
    return list(ReviewTask.objects.filter(comment_id=comment.pk, state=TaskState.OPEN))


def test_a_comments_first_task_is_written_whole_in_one_insert(subject, db):
    comment = CommentFactory(subject=subject)
    with CaptureQueriesContext(connection) as queries:
        task = review_task_open(comment_id=comment.pk, reasons=["spam:links", "spam:links", "word:x"])
    writes = [q["sql"] for q in queries.captured_queries if q["sql"].lstrip().upper().startswith(("INSERT", "UPDATE"))]
    assert len(writes) == 1, writes
    stored = ReviewTask.objects.get(pk=task.pk)
    assert (stored.reasons, stored.priority, stored.state, stored.site_id) == (
        ["spam:links", "word:x"],
        15,
        TaskState.OPEN,
        subject.site_id,
    )
    assert (task.reasons, task.priority, task.created_at) == (stored.reasons, stored.priority, stored.created_at)


def test_new_reasons_join_the_open_task_and_raise_its_priority(subject, db):
    comment = CommentFactory(subject=subject)
    first = review_task_open(comment_id=comment.pk, reasons=["policy:pre"])
    reporter = UserFactory()
    report_create(
        comment=comment_ref_for_viewer(comment_id=comment.pk, user=reporter), reporter=reporter, reason="spam"
    )  # joins with report:spam
    again = review_task_open(comment_id=comment.pk, reasons=["word:x", "policy:pre"])

    [task] = open_tasks(comment)
    assert task.pk == first.pk == again.pk
    assert task.reasons == ["policy:pre", "report:spam", "word:x"]
    assert (first.priority, task.priority) == (1, 31)  # one reporter 20, a word 10, pre-moderation 1


@pytest.mark.parametrize(
    "reasons, reporters, trusted, expected",
    [
        (["policy:pre"], 0, False, 1),
        (["spam:links"], 0, False, 5),
        (["spam:burst"], 0, False, 5),
        (["spam:links", "spam:repeat", "word:x"], 0, False, 20),
        (["word:x", "word:y", "report:spam"], 2, False, 60),
        (["word:x"], 0, True, -20),
    ],
)
def test_priority_weighs_reporters_then_findings_and_sinks_a_trusted_authors_comment(
    reasons, reporters, trusted, expected
):
    assert review_task_priority(reasons=reasons, reporters=reporters, author_trusted=trusted) == expected


def test_a_trusted_authors_task_sinks_below_an_untrusted_ones(subject, moderator, db):
    trusted, untrusted = UserFactory(), UserFactory()
    sanction_create(actor=moderator, site=subject.site, user_id=trusted.pk, kind="trust")
    sinking = review_task_open(comment_id=CommentFactory(subject=subject, author=trusted).pk, reasons=["word:x"])
    ordinary = review_task_open(comment_id=CommentFactory(subject=subject, author=untrusted).pk, reasons=["spam:links"])
    assert (sinking.priority, ordinary.priority) == (-20, 5)


def test_a_closed_task_leaves_room_for_a_new_one(subject, db):
    comment = CommentFactory(subject=subject)
    first = review_task_open(comment_id=comment.pk, reasons=["policy:pre"])
    review_tasks_close(comment_id=comment.pk, subject_id=comment.subject_id, actor=None, decision="approve")
    second = review_task_open(comment_id=comment.pk, reasons=["word:y"])
    assert second.pk != first.pk
    assert [t.reasons for t in open_tasks(comment)] == [["word:y"]]


def test_no_task_for_a_comment_that_is_gone(subject, db):
    comment = CommentFactory(subject=subject)
    comment_id = comment.pk
    comment.delete()
    assert review_task_open(comment_id=comment_id, reasons=["policy:pre"]) is None
    assert not ReviewTask.objects.filter(comment_id=comment_id).exists()

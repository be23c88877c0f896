"""Counters count what the public sees, after every status change; drift is repairable."""

import pytest
from hypothesis import HealthCheck, given
from hypothesis import settings as hsettings
from hypothesis import strategies as st

from comments import services
from comments.models import Comment, Status, Subject
from comments.services import subject_reconcile_counters

from ..factories import CommentFactory, SubjectFactory, UserFactory

STATUSES = [s.value for s in Status]


def _assert_no_drift(subject_id):
    report = subject_reconcile_counters(subject_id=subject_id)
    assert (report.fixed_subject, report.fixed_comments) == (False, 0)


def _counts(subject, *comments):
    subject.refresh_from_db()
    for c in comments:
        c.refresh_from_db()
    return (subject.comment_count, subject.root_count) + tuple((c.reply_count, c.descendant_count) for c in comments)


@pytest.mark.parametrize("from_status", STATUSES)
@pytest.mark.parametrize("to_status", STATUSES)
def test_every_status_change_of_a_reply_keeps_counters_right(subject, user, from_status, to_status):
    root = CommentFactory(subject=subject, author=user)
    middle = CommentFactory(subject=subject, author=user, reply_to=root)
    leaf = CommentFactory(subject=subject, author=user, reply_to=middle)
    services.comment_set_status(comment_id=middle.id, to_status=from_status)
    services.comment_set_status(comment_id=middle.id, to_status=to_status)
    shown = 1 if to_status == Status.PUBLISHED else 0
    # subject: root + leaf + middle if shown; root's thread: leaf + middle if shown
    assert _counts(subject, root, middle, leaf) == (2 + shown, 1, (1 + shown, 1 + shown), (1, 1), (0, 0))
    _assert_no_drift(subject.id)


@pytest.mark.parametrize("to_status", STATUSES)
def test_every_status_change_of_a_top_level_comment_keeps_counters_right(subject, user, to_status):
    root = CommentFactory(subject=subject, author=user)
    CommentFactory(subject=subject, author=user, reply_to=root)
    services.comment_set_status(comment_id=root.id, to_status=to_status)
    shown = 1 if to_status == Status.PUBLISHED else 0
    assert _counts(subject, root) == (1 + shown, shown, (1, 1))
    _assert_no_drift(subject.id)


def test_friends_only_comments_are_not_counted_publicly(subject, user):
    root = CommentFactory(subject=subject, author=user)
    CommentFactory(subject=subject, author=user, reply_to=root, visibility="friends")
    assert _counts(subject, root) == (1, 1, (0, 0))
    _assert_no_drift(subject.id)


def test_a_status_change_to_the_same_status_changes_nothing(subject, user):
    root = CommentFactory(subject=subject, author=user)
    services.comment_set_status(comment_id=root.id, to_status=Status.PUBLISHED)
    assert _counts(subject, root) == (1, 1, (0, 0))


def test_reconcile_repairs_drifted_counters(subject, user):
    root = CommentFactory(subject=subject, author=user)
    reply = CommentFactory(subject=subject, author=user, reply_to=root)
    CommentFactory(subject=subject, author=user, reply_to=reply)
    Subject.objects.filter(pk=subject.pk).update(comment_count=99, root_count=-4)
    Comment.objects.filter(pk=root.pk).update(reply_count=0, descendant_count=7)
    Comment.objects.filter(pk=reply.pk).update(reply_count=5)

    report = subject_reconcile_counters(subject_id=subject.id)

    assert report.fixed_subject is True and report.fixed_comments == 2
    assert _counts(subject, root, reply) == (3, 1, (2, 2), (1, 1))
    root.refresh_from_db()
    assert root.hot_score == root.like_count + 2 * 2


def test_the_reconcile_command_and_task_repair_drift(subject, user):
    from django.core.management import call_command

    from comments.tasks import reconcile_recent

    root = CommentFactory(subject=subject, author=user)
    Subject.objects.filter(pk=subject.pk).update(comment_count=0)
    call_command("reconcile_counters", "--subject", str(subject.id))
    assert _counts(subject)[:1] == (1,)
    Comment.objects.filter(pk=root.pk).update(reply_count=3)
    assert reconcile_recent.delay().get() == 1  # eager in tests: runs in-process
    root.refresh_from_db()
    assert root.reply_count == 0


@hsettings(max_examples=20, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    shape=st.lists(st.integers(min_value=-1, max_value=30), min_size=1, max_size=12),
    changes=st.lists(st.tuples(st.integers(min_value=0, max_value=11), st.sampled_from(STATUSES)), max_size=15),
)
def test_random_trees_and_status_changes_never_drift(db, shape, changes):
    subject = SubjectFactory()
    author = UserFactory()
    made: list = []
    for parent in shape:
        reply_to = made[parent % len(made)] if made and parent >= 0 else None
        made.append(CommentFactory(subject=subject, author=author, reply_to=reply_to))
    for index, status in changes:
        services.comment_set_status(comment_id=made[index % len(made)].id, to_status=status)
    _assert_no_drift(subject.id)

"""Lock, then check, then change: a change to a comment's status or text checks what it
requires on the row as it is when it changes, not on a row read before another transaction
changed it. Each test holds a real transaction open on another thread (its own database
connection) while the contender reads the comment, and commits it once the contender reaches
the statement that waits for the lock (PostgreSQL's ``FOR UPDATE``, SQLite's ``BEGIN
IMMEDIATE``): the order in which a request and a concurrent one meet in production."""

from __future__ import annotations

import threading

import pytest
from django.db import connection, transaction

from comments import services
from comments.exceptions import InvalidInput, PermissionDenied
from comments.models import Comment, CommentContent, Status
from comments.services import site_store
from moderation import rechecks, words
from moderation.actions import comment_moderate
from moderation.models import AuditEntry, ReviewTask, WordEntry
from moderation.services import comment_hold

from ..factories import CommentFactory, UserFactory

pytestmark = pytest.mark.django_db(transaction=True)


def while_another_transaction_commits(change, contender):
    """``contender()`` here, while ``change()`` runs in a transaction on another thread that
    commits only once the contender is about to wait for a lock; returns what the contender
    returned, or raises what it raised."""
    changed, locking = threading.Event(), threading.Event()
    errors = []

    def hold():
        try:
            with transaction.atomic():
                change()
                changed.set()
                locking.wait(10)
        except Exception as exc:  # noqa: BLE001 - reported below
            errors.append(exc)
        finally:
            changed.set()
            connection.close()

    def announce_locks(execute, sql, params, many, context):
        if "FOR UPDATE" in sql or sql.lstrip().upper().startswith("BEGIN"):
            locking.set()
        return execute(sql, params, many, context)

    holder = threading.Thread(target=hold)
    holder.start()
    assert changed.wait(10)
    try:
        with connection.execute_wrapper(announce_locks):
            return contender()
    finally:
        locking.set()
        holder.join(10)
        assert not errors, errors


def status_of(comment) -> str:
    return Comment.objects.get(pk=comment.pk).status


def test_approving_a_comment_its_author_deletes_meanwhile_is_refused(site, moderator):
    author = UserFactory()
    comment = CommentFactory(subject__site=site, author=author)
    services.comment_set_status(comment_id=comment.pk, to_status=Status.PENDING)  # held for review

    with pytest.raises(InvalidInput):
        while_another_transaction_commits(
            lambda: services.comment_soft_delete(comment=comment, actor=author),
            lambda: comment_moderate(comment_id=comment.pk, actor=moderator, action="approve"),
        )

    assert status_of(comment) == Status.DELETED
    assert not AuditEntry.objects.filter(comment_id=comment.pk, action="approve").exists()


def test_an_edit_does_not_rewrite_a_comment_a_moderator_rejects_meanwhile(site, moderator):
    author = UserFactory()
    comment = CommentFactory(subject__site=site, author=author, body="first words")
    read_by_the_view = Comment.objects.select_related("subject__site").get(pk=comment.pk)

    with pytest.raises(PermissionDenied):
        while_another_transaction_commits(
            lambda: comment_moderate(comment_id=comment.pk, actor=moderator, action="reject"),
            lambda: services.comment_edit(comment=read_by_the_view, editor=author, body="second words"),
        )

    assert status_of(comment) == Status.REJECTED
    assert CommentContent.objects.get(pk=comment.pk).body == "first words"


def test_a_moderators_decision_made_during_an_edit_stands(site, moderator):
    author = UserFactory()
    comment = CommentFactory(subject__site=site, author=author, body="first words")
    read_by_the_view = Comment.objects.select_related("subject__site").get(pk=comment.pk)

    edited = while_another_transaction_commits(
        lambda: comment_moderate(comment_id=comment.pk, actor=moderator, action="shadow"),
        lambda: services.comment_edit(comment=read_by_the_view, editor=author, body="second words"),
    )

    assert edited.status == status_of(comment) == Status.SHADOW
    assert CommentContent.objects.get(pk=comment.pk).body == "second words"


def test_an_author_deleting_a_comment_a_moderator_rejects_meanwhile_leaves_it_rejected(site, moderator):
    author = UserFactory()
    comment = CommentFactory(subject__site=site, author=author)
    read_by_the_view = Comment.objects.select_related("subject__site").get(pk=comment.pk)

    while_another_transaction_commits(
        lambda: comment_moderate(comment_id=comment.pk, actor=moderator, action="reject"),
        lambda: services.comment_soft_delete(comment=read_by_the_view, actor=author),
    )

    assert status_of(comment) == Status.REJECTED


def test_holding_for_review_a_comment_its_author_deletes_meanwhile_leaves_it_deleted(site):
    author = UserFactory()
    comment = CommentFactory(subject__site=site, author=author)

    held = while_another_transaction_commits(
        lambda: services.comment_soft_delete(comment=comment, actor=author),
        lambda: comment_hold(comment_id=comment.pk, site_id=site.pk, why="3 reports"),
    )

    assert held is False
    assert status_of(comment) == Status.DELETED


@pytest.mark.parametrize("action", ["review", "block"])
def test_a_second_check_does_not_reopen_the_task_of_a_comment_a_moderator_approves_meanwhile(site, moderator, action):
    site.moderation = "pre"
    site_store(site=site, fields=["moderation"])
    comment = CommentFactory(subject__site=site, body="crypto is here")  # pending, with its task
    # A word the post's own check did not know: the second check finds it.
    WordEntry.objects.create(site=site, word="crypto", normalized="crypto", action=action)
    words.forget()

    found = while_another_transaction_commits(
        lambda: comment_moderate(comment_id=comment.pk, actor=moderator, action="approve"),
        lambda: rechecks.comment_recheck(comment_id=comment.pk),
    )

    assert found == ["word:crypto"]
    assert status_of(comment) == Status.PUBLISHED
    assert not ReviewTask.objects.filter(comment_id=comment.pk, state="open").exists()

"""Moderation's background work: the second check, the re-scan after a word list change,
featuring top comments, expiring claims; idempotent, and run by a real worker at least once."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from datetime import timedelta
from pathlib import Path

import pytest
from django.db import connection
from django.utils import timezone

from comments.models import Comment
from comments.services import comment_set_status, site_store
from moderation import actions, rechecks
from moderation.actions import comment_moderate
from moderation.models import AuditEntry, ReviewTask, WordEntry
from moderation.services import review_task_claims_expire, word_create

from ..factories import CommentFactory, UserFactory, set_likes

pytestmark = pytest.mark.django_db(transaction=True)


def status_of(comment) -> str:
    return Comment.objects.get(pk=comment.pk).status


def test_the_rescan_holds_block_words_and_only_queues_review_words(site, subject, moderator):
    blocked = CommentFactory(subject=subject, body="this is a scam")
    reviewed = CommentFactory(subject=subject, body="crypto talk")
    clean = CommentFactory(subject=subject, body="hello")
    # Words added behind the service's back: no re-scan ran yet.
    WordEntry.objects.create(site=site, word="scam", normalized="scam", action="block")
    WordEntry.objects.create(site=site, word="crypto", normalized="crypto", action="review")
    from moderation import words

    words.forget()

    assert rechecks.comments_rescan(site_id=site.pk) == 2
    assert (status_of(blocked), status_of(reviewed), status_of(clean)) == ("pending", "published", "published")
    assert {t.comment_id: t.reasons for t in ReviewTask.objects.all()} == {
        blocked.id: ["word:scam"],
        reviewed.id: ["word:crypto"],
    }
    assert AuditEntry.objects.get(comment_id=blocked.id).action == "hold"
    # Idempotent: a second run changes nothing more.
    assert rechecks.comments_rescan(site_id=site.pk) == 2
    assert ReviewTask.objects.count() == 2 and AuditEntry.objects.filter(action="hold").count() == 1


def test_adding_a_word_rescans_recent_comments(site, subject, moderator):
    old = CommentFactory(subject=subject, body="crypto is here")
    word_create(actor=moderator, site=site, word="crypto", action="review")  # runs the eager task on commit
    assert ReviewTask.objects.get(comment_id=old.id).reasons == ["word:crypto"]
    assert status_of(old) == "published"


def test_the_second_check_flags_an_author_with_many_rejections(site, subject, moderator, settings):
    settings.MODERATION_REJECTED_LIMIT = 2
    author = UserFactory()
    for _ in range(2):
        c = CommentFactory(subject=subject, author=author)
        comment_moderate(comment_id=c.id, actor=moderator, action="reject")
    latest = CommentFactory(subject=subject, author=author)
    assert "author:rejections" in rechecks.comment_recheck(comment_id=latest.id)
    assert "author:rejections" in ReviewTask.objects.get(comment_id=latest.id, state="open").reasons
    assert status_of(latest) == "published"  # a finding queues; it does not unpublish


def word_behind_the_services_back(site, word: str, action: str) -> None:
    """A word the request did not know and no re-scan ran for: only a second check finds it."""
    from moderation import words

    WordEntry.objects.create(site=site, word=word, normalized=word, action=action)
    words.forget()


def open_tasks(comment) -> list[list[str]]:
    return [t.reasons for t in ReviewTask.objects.filter(comment_id=comment.id, state="open")]


@pytest.mark.parametrize("action", ["review", "block"])
def test_the_second_check_leaves_a_comment_a_moderator_approved_as_approved(site, subject, moderator, action):
    site.moderation = "pre"
    site_store(site=site, fields=["moderation"])
    comment = CommentFactory(subject=subject, body="crypto is here")  # pending, with its task
    comment_moderate(comment_id=comment.id, actor=moderator, action="approve")
    word_behind_the_services_back(site, "crypto", action)

    assert rechecks.comment_recheck(comment_id=comment.id) == ["word:crypto"]
    assert status_of(comment) == "published"
    assert open_tasks(comment) == []


def test_the_rescan_after_a_new_word_leaves_a_comment_a_moderator_approved_as_approved(site, subject, moderator):
    comment = CommentFactory(subject=subject, body="this is a scam")
    comment_moderate(comment_id=comment.id, actor=moderator, action="pin")
    word_create(actor=moderator, site=site, word="scam", action="block")  # the eager re-scan runs on commit

    assert status_of(comment) == "published"
    assert open_tasks(comment) == []


def test_an_edit_after_a_moderators_decision_is_checked_again(site, subject, moderator):
    from comments.services import comment_edit

    author = UserFactory()
    comment = CommentFactory(subject=subject, author=author, body="hello")
    comment_moderate(comment_id=comment.id, actor=moderator, action="approve")
    edited = comment_edit(
        comment=Comment.objects.select_related("subject__site").get(pk=comment.pk), editor=author, body="crypto is here"
    )
    word_behind_the_services_back(site, "crypto", "review")

    assert edited.edited_at is not None
    assert rechecks.comment_recheck(comment_id=comment.id) == ["word:crypto"]
    assert open_tasks(comment) == [["word:crypto"]]


def test_top_comments_are_featured_unless_a_moderator_said_no(site, subject, moderator, settings):
    settings.MODERATION_FEATURE_MIN_LIKES = 5
    settings.MODERATION_FEATURE_PER_SUBJECT = 2
    comments = [CommentFactory(subject=subject) for _ in range(4)]
    for comment, likes in zip(comments, (9, 7, 6, 2), strict=True):
        set_likes(comment, likes)
    comment_moderate(comment_id=comments[0].id, actor=moderator, action="feature")
    comment_moderate(comment_id=comments[0].id, actor=moderator, action="unfeature")

    assert actions.top_comments_feature() == 2
    featured = set(Comment.objects.filter(featured=True).values_list("pk", flat=True))
    assert featured == {comments[1].id, comments[2].id}
    assert AuditEntry.objects.filter(action="feature", actor__isnull=True).count() == 2
    assert actions.top_comments_feature() == 0  # idempotent


def test_stale_claims_expire(site, subject, moderator):
    comment = CommentFactory(subject=subject)
    comment_set_status(comment_id=comment.id, to_status="pending")
    from moderation.services import review_task_claim, review_task_open

    task = review_task_open(comment_id=comment.id, reasons=["policy:pre"])
    review_task_claim(task_id=task.pk, moderator=moderator)
    assert review_task_claims_expire() == 0
    ReviewTask.objects.filter(pk=task.pk).update(claim_expires_at=timezone.now() - timedelta(seconds=1))
    assert review_task_claims_expire() == 1
    assert ReviewTask.objects.get(pk=task.pk).claimed_by_id is None


def _worker_database_url() -> str:
    s = connection.settings_dict
    if connection.vendor == "postgresql":
        return f"postgres://{s['USER']}@{s['HOST'] or '127.0.0.1'}:{s['PORT'] or 5432}/{s['NAME']}"
    return f"sqlite:///{Path(s['NAME']).resolve()}"


@pytest.mark.filterwarnings("ignore::celery.exceptions.AlwaysEagerIgnored")
@pytest.mark.parametrize("road", ["task", "queue"])
def test_a_real_worker_runs_the_second_check_of_a_new_comment(road, site, subject, moderator, tmp_path, redis_url):
    """A worker process runs the second check: from a ``moderation.recheck_comment`` task on
    the broker (the road without Redis), or from the Redis queue when the beat task
    ``moderation.recheck_queued`` runs."""
    import redis as redis_client

    from moderation.rechecks import recheck_request

    broker = os.environ.get("TEST_CELERY_BROKER_URL", "redis://127.0.0.1:6379/13")
    redis_client.Redis.from_url(broker).flushdb()
    comment = CommentFactory(subject=subject, body="crypto")
    # The word arrives behind the service's back (no re-scan): only a second check finds it.
    WordEntry.objects.create(site=site, word="crypto", normalized="crypto", action="review")
    assert not ReviewTask.objects.exists()
    env = {
        **os.environ,
        "DATABASE_URL": _worker_database_url(),
        "CELERY_BROKER_URL": broker,
        "LIKES_REDIS_URL": redis_url,
        "DJANGO_SECRET_KEY": os.environ.get("DJANGO_SECRET_KEY", "test"),
    }
    root = Path(__file__).resolve().parents[2]
    log = open(tmp_path / "worker.log", "w")  # noqa: SIM115 - the child process's output, closed by hand below
    worker = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "celery",
            "-A",
            "config",
            "worker",
            "--pool",
            "solo",
            "-Q",
            "moderation",
            "--without-mingle",
            "--without-gossip",
            "--loglevel",
            "info",
            "-n",
            f"mod-{os.getpid()}@%h",
        ],
        cwd=root,
        env=env,
        stdout=log,
        stderr=subprocess.STDOUT,
        start_new_session=True,
    )
    try:
        from config.celery import app

        deadline = time.monotonic() + 60
        while "ready." not in (tmp_path / "worker.log").read_text():  # its queue is bound
            assert worker.poll() is None and time.monotonic() < deadline, (tmp_path / "worker.log").read_text()[-3000:]
            time.sleep(0.2)
        with app.connection_for_write(broker) as conn:
            if road == "task":
                app.send_task("moderation.recheck_comment", args=[comment.id], queue="moderation", connection=conn)
            else:
                assert recheck_request(comment.id)  # onto the Redis stream, as a post does
                app.send_task("moderation.recheck_queued", queue="moderation", connection=conn)  # as beat does
        deadline = time.monotonic() + 60
        while not ReviewTask.objects.filter(comment_id=comment.id).exists():
            assert worker.poll() is None, (tmp_path / "worker.log").read_text()[-3000:]
            assert time.monotonic() < deadline, (tmp_path / "worker.log").read_text()[-3000:]
            time.sleep(0.2)
        assert ReviewTask.objects.get(comment_id=comment.id).reasons == ["word:crypto"]
    finally:
        os.killpg(worker.pid, 9)
        worker.wait()
        log.close()
        redis_client.Redis.from_url(broker).flushdb()

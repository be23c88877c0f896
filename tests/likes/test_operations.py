"""Operating likes: the management commands, the admin, the beat schedule."""

from __future__ import annotations

import os
import subprocess
import sys
from io import StringIO
from pathlib import Path

from django.conf import settings
from django.core.management import call_command
from django.test import Client

from comments.models import Comment
from likes import keys
from likes.models import Like
from likes.services import like_set

from ..factories import CommentFactory, UserFactory


def test_likes_flush_command_drains_the_queue(subject, redis_url):
    comment = CommentFactory(subject=subject)
    like_set(comment_id=comment.pk, user=UserFactory(), liked=True)
    out = StringIO()
    call_command("likes_flush", stdout=out)
    assert "flushed 1 event(s)" in out.getvalue()
    assert Comment.objects.get(pk=comment.pk).like_count == 1


def test_likes_rebuild_command_repairs_counts_and_replaces_the_redis_state(subject, redis_url, raw_redis):
    comment = CommentFactory(subject=subject)
    fans = [UserFactory() for _ in range(3)]
    for fan in fans:
        like_set(comment_id=comment.pk, user=fan, liked=True)
    call_command("likes_flush", stdout=StringIO())
    Comment.objects.filter(pk=comment.pk).update(like_count=99)
    raw_redis.zrem(keys.likers(subject.id, comment.id), str(fans[0].pk))  # Redis drifted too

    out = StringIO()
    call_command("likes_rebuild", "--subject", str(subject.id), stdout=out)

    assert "rebuilt the Redis like state of 1 comment(s)" in out.getvalue()
    assert Comment.objects.get(pk=comment.pk).like_count == 3
    assert raw_redis.zcard(keys.likers(subject.id, comment.id)) == 4  # three likers and the sentinel


def test_likes_rebuild_without_redis_repairs_the_database_counts(subject, no_redis):
    comment = CommentFactory(subject=subject)
    like_set(comment_id=comment.pk, user=UserFactory(), liked=True)
    Comment.objects.filter(pk=comment.pk).update(like_count=7)
    out = StringIO()
    call_command("likes_rebuild", stdout=out)
    assert "1 like count(s) fixed" in out.getvalue()
    assert Comment.objects.get(pk=comment.pk).like_count == 1


def test_every_beat_entry_names_a_task_the_worker_knows():
    from config.celery import app

    app.loader.import_default_modules()
    scheduled = {entry["task"] for entry in settings.CELERY_BEAT_SCHEDULE.values()}
    assert {"likes.flush", "moderation.recheck_queued"} <= scheduled
    assert scheduled <= set(app.tasks)


def test_the_flush_interval_comes_from_the_environment():
    """A fresh interpreter: the schedule is built when the settings are imported."""
    code = "import django; django.setup(); from django.conf import settings; e = settings.CELERY_BEAT_SCHEDULE['likes.flush']; print(e['schedule'], e['options']['expires'])"
    result = subprocess.run(
        [sys.executable, "-c", code],
        env={**os.environ, "LIKES_FLUSH_INTERVAL": "0.25", "DJANGO_SETTINGS_MODULE": "config.settings"},
        capture_output=True,
        text=True,
        timeout=60,
        cwd=Path(__file__).resolve().parents[2],
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.split() == ["0.25", "5.0"]  # a flush not started within 5 s is superseded


def test_a_repaired_count_reaches_the_cached_pages(subject, no_redis, api):
    comment = CommentFactory(subject=subject)
    like_set(comment_id=comment.pk, user=UserFactory(), liked=True)
    Comment.objects.filter(pk=comment.pk).update(like_count=7)  # drifted
    page = f"/api/v1/subjects/{subject.pk}/comments"
    assert api.get(page).json()["items"][0]["like_count"] == 7  # and cached so

    call_command("likes_rebuild", stdout=StringIO())
    assert api.get(page).json()["items"][0]["like_count"] == 1


def test_the_admin_lists_likes_and_allows_no_change(subject, no_redis):
    comment = CommentFactory(subject=subject)
    like_set(comment_id=comment.pk, user=UserFactory(), liked=True)
    staff = UserFactory(username="admin", is_staff=True, is_superuser=True)
    browser = Client()
    browser.force_login(staff)
    page = browser.get("/admin/likes/like/")
    assert page.status_code == 200
    assert str(comment.id) in page.content.decode()
    like = Like.objects.get(comment_id=comment.pk)
    assert browser.post(f"/admin/likes/like/{like.pk}/delete/", {"post": "yes"}).status_code == 403
    assert Like.objects.filter(pk=like.pk).exists()
    assert browser.get("/admin/likes/stalelikestate/").status_code == 200

"""What a write hands on to other processes after its commit travels to the like state's Redis
in one round trip (``streams.together``, opened by the core around its hooks): a post's empty like
state, its second check, its notifications event and its webhooks event. A hand-off that fails goes
its own way (a task of its own), and only that one."""

from __future__ import annotations

import pytest
from django.db import transaction

from comments import services
from infra import redislink, streams
from likes import keys, protocol
from moderation.models import ReviewTask
from moderation.rechecks import RECHECK_STREAM
from notifications.jobs import EVENTS_STREAM
from notifications.models import Notification

from ..factories import CommentFactory, SubjectFactory, UserFactory
from .test_faults import RedisCalls

pytestmark = pytest.mark.django_db(transaction=True)


def test_a_posts_hand_offs_travel_in_one_round_trip_after_its_commit(redis_url, raw_redis, monkeypatch, settings):
    subject = SubjectFactory()
    author = UserFactory()
    with transaction.atomic():
        comment = services.comment_create(subject=subject, author=author, body="a new comment")
        calls = RedisCalls(monkeypatch)  # counts from here: what runs once the post commits
    # Everything the hook's receivers handed on is one round trip; the pages' version is
    # one more where the cache is a Redis (the embedded default's is in this process's memory).
    pages = 1 if "redis" in settings.CACHES["default"]["BACKEND"].lower() else 0
    assert calls.count == 1 + pages
    assert raw_redis.xlen(RECHECK_STREAM) == 1
    assert raw_redis.xlen(EVENTS_STREAM) == 1
    likers = keys.likers(subject.pk, comment.pk)
    assert raw_redis.zrange(likers, 0, -1) == [protocol.SENTINEL]  # loaded, and nobody likes it
    assert raw_redis.ttl(likers) > 0


def test_outside_a_together_block_a_hand_off_is_sent_at_once(redis_url, raw_redis):
    with streams.together():
        streams.stream_add("test:later", {"n": 1}, otherwise=lambda: None)
        assert raw_redis.xlen("test:later") == 0  # waits for the block's end
        streams.stream_add("test:now", {"n": 1})  # no ``otherwise``: the caller needs the answer now
        assert raw_redis.xlen("test:now") == 1
    assert raw_redis.xlen("test:later") == 1


def test_a_hand_off_whose_command_fails_goes_its_own_way_and_the_others_arrive(redis_url, raw_redis, settings):
    """The second check's stream is, by mistake, a string: its XADD fails in the shared round
    trip. The second check then runs as a task of its own (eager here), and the notifications
    event and the like state arrive as usual."""
    subject = SubjectFactory()
    settings.MODERATION_BURST_LIMIT = 0  # the second check finds a burst: its effect is visible
    parent_author, author = UserFactory(), UserFactory()
    parent = CommentFactory(subject=subject, author=parent_author, body="a question")
    raw_redis.delete(RECHECK_STREAM, EVENTS_STREAM)
    raw_redis.set(RECHECK_STREAM, "not a stream")
    reply = CommentFactory(subject=subject, author=author, body="an answer", reply_to=parent)
    assert redislink.client() is not None  # an error reply is not Redis being down
    assert raw_redis.type(RECHECK_STREAM) == "string"
    assert ReviewTask.objects.filter(comment=reply).exists()  # the task ran the second check
    assert raw_redis.xlen(EVENTS_STREAM) == 1
    assert raw_redis.exists(keys.likers(subject.pk, reply.pk))
    assert not Notification.objects.exists()  # the event waits for the drain, as usual

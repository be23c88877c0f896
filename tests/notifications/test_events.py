"""How events travel from a request to the fan-out: one XADD on the request's path (no query,
no broker publish), handed on in batches by ``jobs.events_drain`` (the beat task
``notifications.drain_events``); a task per event without that Redis or while it fails. Nothing
queued is lost when the worker that read it dies, and nothing is written twice when it is
handed on again."""

from __future__ import annotations

import socket

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from comments.services import site_store
from infra import redislink, streams
from notifications import fanout, jobs
from notifications.events import Event
from notifications.models import Notification
from notifications.services import subscription_set

from ..api.conftest import API
from ..factories import CommentFactory, SubjectFactory, UserFactory
from .conftest import post, told

pytestmark = pytest.mark.django_db(transaction=True)


def test_a_post_costs_the_request_one_stream_entry_and_no_query_of_notifications(
    redis_url, raw_redis, subject, alice, bob, client_for
):
    parent = post(subject, alice)
    client = client_for(bob)
    with CaptureQueriesContext(connection) as ran:
        answer = client.post(
            f"{API}/subjects/{subject.pk}/comments", {"body": "hi", "reply_to_id": parent.pk}, format="json"
        )
    assert answer.status_code == 201
    assert not [q for q in ran.captured_queries if "notifications_" in q["sql"]]
    assert raw_redis.xlen(jobs.EVENTS_STREAM) == 1
    assert told(alice) == []  # nothing was handed on inside the request

    assert jobs.events_drain() == 1
    assert [kind for kind, _ in told(alice)] == ["reply"]
    # Acknowledged and deleted: a second run finds nothing.
    assert raw_redis.xlen(jobs.EVENTS_STREAM) == 0
    assert jobs.events_drain() == 0


def test_a_batch_hands_on_every_kind_of_event(redis_url, subject, alice, bob, carol, moderator):
    from moderation.actions import comment_moderate

    subscription_set(user=carol, subject_id=subject.pk, state="subscribed")
    parent = post(subject, alice)  # drained: the parent is the only event so far
    subject.site.moderation = "pre"
    site_store(site=subject.site)
    from ..factories import CommentFactory

    held = CommentFactory(subject=subject, author=bob, body="held", reply_to=parent)
    comment_moderate(comment_id=held.pk, actor=moderator, action="approve")
    assert jobs.events_drain() == 2  # posted (pending: tells nobody), status changed (approved)
    assert [k for k, _ in told(alice)] == ["reply"]
    assert [k for k, _ in told(bob)] == ["decision"]


def test_events_read_by_a_worker_that_died_are_taken_over(redis_url, raw_redis, settings, subject, alice, bob):
    parent = post(subject, alice)
    from ..factories import CommentFactory

    CommentFactory(subject=subject, author=bob, body="reply", reply_to=parent)
    read = streams.read_events(redislink.client(), jobs.EVENTS_STREAM, "worker-that-died", 10, 60_000)
    assert len(read) == 1
    assert jobs.events_drain() == 0  # not yet: it may still be working on it
    settings.NOTIFICATIONS_EVENTS_RECLAIM = 0
    assert jobs.events_drain() == 1
    assert [k for k, _ in told(alice)] == ["reply"]
    assert raw_redis.xpending(jobs.EVENTS_STREAM, "flush")["pending"] == 0


def test_an_event_handed_on_again_writes_nothing_twice(redis_url, raw_redis, subject, alice, bob, carol):
    subscription_set(user=carol, subject_id=subject.pk, state="subscribed")
    parent = post(subject, alice)
    from ..factories import CommentFactory

    reply = CommentFactory(subject=subject, author=bob, body="@carol", reply_to=parent)
    entries = raw_redis.xrange(jobs.EVENTS_STREAM)
    assert jobs.events_drain() == 1
    before = sorted(Notification.objects.values_list("recipient_id", "kind", "comment_id"))
    for _, fields in entries:  # the same entries again, as a replay after a crash would bring them
        raw_redis.xadd(jobs.EVENTS_STREAM, fields)
    assert jobs.events_drain() == 1
    assert sorted(Notification.objects.values_list("recipient_id", "kind", "comment_id")) == before
    assert (alice.pk, "reply", reply.pk) in before and (carol.pk, "mention", reply.pk) in before


def test_entries_that_are_not_events_are_dropped(redis_url, raw_redis):
    for fields in (
        {"e": "garbage"},
        {"e": "abc|posted|notanumber"},
        {"x": "1"},
        {"e": "abc|status|1|pending|published|x"},
    ):
        raw_redis.xadd(jobs.EVENTS_STREAM, fields)
    assert jobs.events_drain() == 0
    assert raw_redis.xlen(jobs.EVENTS_STREAM) == 0


def test_event_text_round_trips():
    event = Event.new("status", 42, "pending", "published", None)
    assert Event.parse(event.text()) == event
    assert event.actor_id is None and event.target_id == 42
    assert Event.parse(Event.new("status", 42, "pending", "published", 7).text()).actor_id == 7


def test_without_redis_an_event_is_a_task_of_its_own(no_redis, subject, alice, bob):
    parent = post(subject, alice)
    from ..factories import CommentFactory

    CommentFactory(subject=subject, author=bob, body="reply", reply_to=parent)  # the eager task ran on commit
    assert [k for k, _ in told(alice)] == ["reply"]


def test_while_redis_fails_an_event_is_a_task_of_its_own(settings, subject, alice, bob):
    with socket.socket() as probe:  # a port nobody listens on
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    settings.LIKES_REDIS_URL = f"redis://127.0.0.1:{port}/0"
    redislink.reset()
    try:
        from ..factories import CommentFactory

        parent = CommentFactory(subject=subject, author=alice)
        CommentFactory(subject=subject, author=bob, body="reply", reply_to=parent)
        assert [k for k, _ in told(alice)] == ["reply"]
        assert redislink.client() is None  # marked down: the next events go to tasks without trying
    finally:
        redislink.reset()


def test_the_fan_out_of_a_comment_costs_the_same_statements_for_one_follower_or_fifty(no_redis, subject, alice):
    followers = [UserFactory() for _ in range(50)]
    subscription_set(user=followers[0], subject_id=subject.pk, state="subscribed")
    first = post(subject, alice, "to one")
    Notification.objects.all().delete()

    def statements(comment) -> tuple[int, int]:
        with CaptureQueriesContext(connection) as ran:
            written = fanout.comment_notify(comment_id=comment.pk)
        return written, len(ran)

    one = statements(first)
    for follower in followers[1:]:
        subscription_set(user=follower, subject_id=subject.pk, state="subscribed")
    second = post(subject, alice, "to fifty")
    Notification.objects.filter(comment_id=second.pk).delete()
    fifty = statements(second)
    assert one[0] == 1 and fifty[0] == 50
    assert one[1] == fifty[1] <= 4  # the comment, the subscribers' insert (and the transaction's own)


def test_a_batch_of_posts_that_tell_nobody_costs_two_queries_whatever_its_size(
    redis_url, raw_redis, subject, alice, bob
):
    """A busy discussion's posts mostly answer nobody, mention nobody and have no followers:
    the drain reads the batch's comments and their subjects' followers once, and writes
    nothing for them. (Each text is new: a repeated one is held, and a held comment tells the
    site's moderators.)"""
    other = SubjectFactory(site=subject.site)

    def drain_cost(posts: int) -> int:
        for n in range(posts):
            CommentFactory(subject=subject, author=alice if n % 2 else bob, body=f"nothing to tell {posts}-{n}")
        assert raw_redis.xlen(jobs.EVENTS_STREAM) == posts
        events = [Event.parse(fields["e"]) for _, fields in raw_redis.xrange(jobs.EVENTS_STREAM)]
        raw_redis.delete(jobs.EVENTS_STREAM)
        with CaptureQueriesContext(connection) as ran:
            assert fanout.events_notify(events) == 0
        return len(ran)

    assert drain_cost(3) == drain_cost(40) == 2
    assert not Notification.objects.exists()

    # In the same kind of batch, the comments that do tell someone still do.
    subscription_set(user=bob, subject_id=other.pk, state="subscribed")
    parent = CommentFactory(subject=subject, author=bob, body="a question")
    raw_redis.delete(jobs.EVENTS_STREAM)
    CommentFactory(subject=subject, author=alice, body="quiet")
    CommentFactory(subject=subject, author=alice, body="an answer", reply_to=parent)
    CommentFactory(subject=subject, author=alice, body="hello @bob")
    CommentFactory(subject=other, author=alice, body="news for followers")
    assert jobs.events_drain() == 4
    assert sorted(k for k, _ in told(bob)) == ["mention", "reply", "subscription"]

"""The flush from Redis to the database, and the one writer of like rows it shares with the
database road: idempotent, order-proof, exact."""

from __future__ import annotations

import pytest
from django.db import connection
from django.test import override_settings

from comments.models import Comment
from infra import streams
from likes import keys, live, services, state_sync
from likes.models import Like
from likes.services import LikeAction, like_actions_apply, like_counts_reconcile, like_set, likes_flush

from ..factories import CommentFactory, UserFactory


def count_of(comment) -> int:
    return Comment.objects.get(pk=comment.pk).like_count


def active_likers(comment) -> set[int]:
    return set(Like.objects.filter(comment_id=comment.pk, active=True).values_list("user_id", flat=True))


def test_likes_reach_the_database_only_when_flushed(subject, redis_url):
    comment = CommentFactory(subject=subject)
    fans = [UserFactory() for _ in range(3)]
    for fan in fans:
        like_set(comment_id=comment.pk, user=fan, liked=True)
    assert count_of(comment) == 0 and active_likers(comment) == set()

    report = likes_flush()

    assert report.events == 3 and report.batches == 1
    assert count_of(comment) == 3
    assert active_likers(comment) == {f.pk for f in fans}


def test_a_second_flush_finds_nothing_and_changes_nothing(subject, redis_url):
    comment = CommentFactory(subject=subject)
    like_set(comment_id=comment.pk, user=UserFactory(), liked=True)
    likes_flush()
    assert likes_flush().events == 0
    assert count_of(comment) == 1


def test_a_batch_collapses_each_pair_to_its_last_action(subject, redis_url, raw_redis):
    comment = CommentFactory(subject=subject)
    flip, stay = UserFactory(), UserFactory()
    for liked in (True, False, True, False, True):
        like_set(comment_id=comment.pk, user=flip, liked=liked)
    like_set(comment_id=comment.pk, user=stay, liked=True)
    like_set(comment_id=comment.pk, user=stay, liked=False)
    assert raw_redis.xlen(keys.events(subject.id)) == 7

    likes_flush()

    assert count_of(comment) == 1
    assert active_likers(comment) == {flip.pk}
    assert Like.objects.filter(comment_id=comment.pk).count() == 2  # the unlike stays as a tombstone
    assert raw_redis.xlen(keys.events(subject.id)) == 0


def test_flushing_in_small_batches_ends_the_same(subject, redis_url):
    comments = [CommentFactory(subject=subject) for _ in range(3)]
    users = [UserFactory() for _ in range(5)]
    for comment in comments:
        for user in users:
            like_set(comment_id=comment.pk, user=user, liked=True)
        like_set(comment_id=comment.pk, user=users[0], liked=False)
    report = likes_flush(batch=4)
    assert (report.events, report.batches) == (18, 5)
    assert [count_of(c) for c in comments] == [4, 4, 4]


def test_applying_the_same_actions_again_changes_nothing(subject, db):
    comment = CommentFactory(subject=subject)
    users = [UserFactory() for _ in range(3)]
    now = live.now_ms()
    actions = [
        LikeAction(comment_id=comment.pk, user_id=u.pk, liked=True, at_ms=now, version=100 + i)
        for i, u in enumerate(users)
    ]
    assert like_actions_apply(actions) == {comment.pk: 3}
    assert like_actions_apply(actions) == {}
    assert count_of(comment) == 3


def test_an_older_action_arriving_late_is_ignored(subject, db):
    comment = CommentFactory(subject=subject)
    user = UserFactory()
    now = live.now_ms()
    like_actions_apply([LikeAction(comment_id=comment.pk, user_id=user.pk, liked=False, at_ms=now, version=20)])
    like_actions_apply([LikeAction(comment_id=comment.pk, user_id=user.pk, liked=True, at_ms=now, version=10)])
    assert count_of(comment) == 0 and active_likers(comment) == set()
    like_actions_apply([LikeAction(comment_id=comment.pk, user_id=user.pk, liked=True, at_ms=now, version=30)])
    assert count_of(comment) == 1


def test_a_repeated_like_keeps_its_first_time(subject, db):
    comment = CommentFactory(subject=subject)
    user = UserFactory()
    first = live.now_ms() - 3_600_000
    like_actions_apply([LikeAction(comment_id=comment.pk, user_id=user.pk, liked=True, at_ms=first, version=1)])
    like_actions_apply([LikeAction(comment_id=comment.pk, user_id=user.pk, liked=True, at_ms=live.now_ms(), version=2)])
    assert Like.objects.get(comment_id=comment.pk).created_at == state_sync.from_ms(first)


def test_actions_on_comments_or_users_that_are_gone_are_dropped_without_failing_the_batch(subject, db):
    kept, doomed = CommentFactory(subject=subject), CommentFactory(subject=subject)
    user, leaving = UserFactory(), UserFactory()
    now = live.now_ms()
    doomed_id, leaving_id = doomed.pk, leaving.pk
    Comment.objects.filter(pk=doomed_id).delete()
    leaving.delete()
    changes = like_actions_apply(
        [
            LikeAction(comment_id=kept.pk, user_id=user.pk, liked=True, at_ms=now, version=1),
            LikeAction(comment_id=doomed_id, user_id=user.pk, liked=True, at_ms=now, version=1),
            LikeAction(comment_id=kept.pk, user_id=leaving_id, liked=True, at_ms=now, version=1),
        ]
    )
    assert changes == {kept.pk: 1}


def test_foreign_stream_entries_are_acknowledged_and_dropped(subject, redis_url, raw_redis):
    comment = CommentFactory(subject=subject)
    like_set(comment_id=comment.pk, user=UserFactory(), liked=True)
    raw_redis.xadd(keys.events(subject.id), {"junk": "1"})
    raw_redis.xadd(keys.events(subject.id), {"a": "x:1:1:1"})
    report = likes_flush()
    assert report.events == 3
    assert count_of(comment) == 1
    assert raw_redis.xlen(keys.events(subject.id)) == 0


def test_entries_of_a_flush_that_died_are_taken_over_after_the_reclaim_timeout(subject, redis_url, raw_redis, settings):
    comment = CommentFactory(subject=subject)
    like_set(comment_id=comment.pk, user=UserFactory(), liked=True)
    stream = keys.events(subject.id)
    streams.ensure_group(raw_redis, stream)
    # Another consumer read the entry and died before acknowledging it.
    assert streams.read_events(raw_redis, stream, "dead-worker", 10, 60_000)
    settings.LIKES_RECLAIM_IDLE = 60.0
    assert likes_flush().events == 0
    assert count_of(comment) == 0
    settings.LIKES_RECLAIM_IDLE = 0.0
    assert likes_flush().events == 1
    assert count_of(comment) == 1
    assert raw_redis.xpending(stream, keys.FLUSH_GROUP)["pending"] == 0


def test_drifted_like_counts_are_recomputed_from_the_rows(subject, like_store):
    comment = CommentFactory(subject=subject)
    for _ in range(3):
        like_set(comment_id=comment.pk, user=UserFactory(), liked=True)
    likes_flush()
    Comment.objects.filter(pk=comment.pk).update(like_count=42)
    assert like_counts_reconcile(subject_id=subject.id) == 1
    assert count_of(comment) == 3
    assert like_counts_reconcile() == 0


@pytest.mark.parametrize("liked_first", [True, False])
def test_the_database_road_writes_at_once(subject, no_redis, liked_first):
    comment = CommentFactory(subject=subject)
    user = UserFactory()
    assert like_set(comment_id=comment.pk, user=user, liked=liked_first) == (int(liked_first), liked_first)
    assert count_of(comment) == int(liked_first)
    # Two actions within one millisecond still apply in order.
    like_set(comment_id=comment.pk, user=user, liked=not liked_first)
    assert count_of(comment) == int(not liked_first)


def test_a_quiet_drained_subject_is_forgotten_with_its_idle_consumers(subject, redis_url, raw_redis):
    comment = CommentFactory(subject=subject)
    like_set(comment_id=comment.pk, user=UserFactory(), liked=True)
    stream = keys.events(subject.id)
    streams.ensure_group(raw_redis, stream)
    streams.read_events(raw_redis, stream, "restarted-worker", 10, 60_000)  # holds the entry
    raw_redis.zadd(keys.DIRTY_SUBJECTS, {str(subject.id): live.now_ms() - 120_000})

    likes_flush()  # the entry is held by another consumer: the subject stays
    assert raw_redis.zscore(keys.DIRTY_SUBJECTS, str(subject.id)) is not None

    raw_redis.xclaim(
        stream,
        keys.FLUSH_GROUP,
        "restarted-worker",
        0,
        [e["message_id"] for e in raw_redis.xpending_range(stream, keys.FLUSH_GROUP, "-", "+", 10)],
        idle=120_000,
    )
    with override_settings(LIKES_RECLAIM_IDLE=60.0):
        likes_flush()  # takes the entry over, applies it, drains the stream
    assert raw_redis.zscore(keys.DIRTY_SUBJECTS, str(subject.id)) is None
    assert raw_redis.xinfo_consumers(stream, keys.FLUSH_GROUP) == []
    assert count_of(comment) == 1


def _registered_at(raw_redis, subject) -> float | None:
    return raw_redis.zscore(keys.DIRTY_SUBJECTS, str(subject.id))


def test_a_process_registers_a_subject_once_per_window_and_every_action_is_flushed(
    subject, redis_url, raw_redis, monkeypatch
):
    comments = [CommentFactory(subject=subject) for _ in range(3)]
    fans = [UserFactory() for _ in range(4)]
    clock = [1000.0]
    monkeypatch.setattr(live.time, "monotonic", lambda: clock[0])

    like_set(comment_id=comments[0].pk, user=fans[0], liked=True)
    first = _registered_at(raw_redis, subject)
    raw_redis.zadd(keys.DIRTY_SUBJECTS, {str(subject.id): 5})  # so a new registration would show
    clock[0] += live.REGISTER_EVERY - 1
    for comment, fan in zip(comments, fans[1:], strict=True):
        like_set(comment_id=comment.pk, user=fan, liked=True)
    assert first is not None and _registered_at(raw_redis, subject) == 5  # within the window: not again

    clock[0] += 1
    like_set(comment_id=comments[1].pk, user=fans[0], liked=True)
    assert _registered_at(raw_redis, subject) > 5  # the window is over: registered again

    likes_flush()
    assert [count_of(c) for c in comments] == [2, 2, 1]


def test_an_action_after_redis_lost_everything_registers_its_subject_again(subject, redis_url, raw_redis):
    comment = CommentFactory(subject=subject)
    like_set(comment_id=comment.pk, user=UserFactory(), liked=True)
    likes_flush()
    raw_redis.flushdb()  # the registration and the stream are gone; this process still remembers

    fan = UserFactory()
    like_set(comment_id=comment.pk, user=fan, liked=True)  # loads the state from the rows, appends

    assert _registered_at(raw_redis, subject) is not None
    likes_flush()
    assert count_of(comment) == 2 and fan.pk in active_likers(comment)


def test_a_drained_subject_is_not_forgotten_while_a_registration_may_still_cover_actions(subject, redis_url, raw_redis):
    comment = CommentFactory(subject=subject)
    like_set(comment_id=comment.pk, user=UserFactory(), liked=True)
    raw_redis.zadd(keys.DIRTY_SUBJECTS, {str(subject.id): live.now_ms() - live.DIRTY_QUIET_MS + 5_000})
    likes_flush()
    assert _registered_at(raw_redis, subject) is not None  # drained, but registered under a minute ago
    # An action appended now without registering (this process registered a moment ago) is
    # still found by the next flush.
    fan = UserFactory()
    like_set(comment_id=comment.pk, user=fan, liked=True)
    likes_flush()
    assert count_of(comment) == 2


def test_likes_that_come_in_during_a_batch_wait_for_the_next_run(subject, redis_url, raw_redis, monkeypatch):
    """A run takes what its read found and stops: reading on after a batch shorter than
    ``LIKES_FLUSH_BATCH`` chased the requests under load, a batch of a few likes each time."""
    comment = CommentFactory(subject=subject)
    for fan in [UserFactory() for _ in range(3)]:
        like_set(comment_id=comment.pk, user=fan, liked=True)
    latecomers = iter([UserFactory() for _ in range(3)])
    apply = services.like_actions_apply

    def apply_while_requests_come_in(actions, **kwargs):
        changes = apply(actions, **kwargs)
        latecomer = next(latecomers, None)
        if latecomer is not None:  # a like answered while the batch was being written
            like_set(comment_id=comment.pk, user=latecomer, liked=True)
        return changes

    monkeypatch.setattr(services, "like_actions_apply", apply_while_requests_come_in)

    first = likes_flush()

    assert (first.events, first.batches) == (3, 1)
    assert count_of(comment) == 3
    assert raw_redis.xlen(keys.events(subject.id)) == 1
    second = likes_flush()
    assert (second.events, second.batches) == (1, 1)
    assert count_of(comment) == 4


def test_a_drain_stops_at_a_short_batch_and_goes_on_after_full_ones(redis_url, raw_redis):
    stream = "test:drain"
    raw_redis.delete(stream)
    for i in range(5):
        streams.stream_add(stream, {"n": str(i)})
    seen: list[str] = []

    def handle(entries):
        seen.extend(dict(zip(fields[::2], fields[1::2], strict=True))["n"] for _, fields in entries)
        streams.stream_add(stream, {"n": "late"})  # queued while the batch was handled
        return len(entries)

    # Batches of 3: two full ones (0-2, then 3, 4 and the first late entry), then a short one
    # (the second late entry), after which the drain stops: the third late entry is left.
    handled = streams.stream_drain(stream, handle, batch=3, reclaim_seconds=60, max_seconds=2)

    assert handled == 7 and seen == ["0", "1", "2", "3", "4", "late", "late"]
    assert raw_redis.xlen(stream) == 1
    raw_redis.delete(stream)


@pytest.mark.skipif(connection.vendor != "postgresql", reason="generic plans are PostgreSQL's")
def test_the_flush_plans_its_statements_for_their_parameters(subject, db):
    """PostgreSQL may run a prepared statement with a generic plan, made for any subject; for a
    hot subject that plan read the subject's whole index to find a batch's comments. The flush
    plans each statement for its parameters, even on a connection set to plan generically."""
    comments = [CommentFactory(subject=subject) for _ in range(3)]
    users = [UserFactory() for _ in range(2)]
    with connection.cursor() as cursor:
        cursor.execute("SET plan_cache_mode = force_generic_plan")
        try:
            for version in range(1, 9):  # past psycopg's prepare threshold
                like_actions_apply(
                    [
                        LikeAction(comment_id=c.pk, user_id=u.pk, liked=version % 2 == 1, at_ms=1, version=version)
                        for c in comments
                        for u in users
                    ],
                    subject_id=subject.pk,
                )
            cursor.execute(
                "SELECT statement, generic_plans, custom_plans FROM pg_prepared_statements "
                "WHERE statement LIKE '%%unnest%%'"
            )
            prepared = cursor.fetchall()
        finally:
            cursor.execute("RESET plan_cache_mode")
    assert prepared, "the flush's statements were not prepared: nothing to check"
    assert all(generic == 0 and custom > 0 for _, generic, custom in prepared), prepared
    assert count_of(comments[0]) == 0  # the eighth action of each pair is an unlike

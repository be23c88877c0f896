"""Likes under concurrency and faults, against real Redis and the real database: many users at
once, random like/unlike interleavings, Redis emptied, Redis unreachable and back."""

from __future__ import annotations

import os
import random
import signal
import socket
import subprocess
import threading
import time
from concurrent.futures import ThreadPoolExecutor

import pytest
import redis
from django.db import connection, connections
from rest_framework.test import APIClient

from comments.exceptions import NotFound
from comments.models import Comment
from comments.services import comment_set_status, token_issue
from infra import redislink, streams
from likes import keys, live, protocol, state_sync
from likes import queries as likes_queries
from likes.models import Like, StaleLikeState
from likes.services import LikeAction, like_actions_apply, like_set, likes_flush

from ..api.conftest import API
from ..clocks import shifted_clock
from ..factories import CommentFactory, SubjectFactory, UserFactory

pytestmark = pytest.mark.django_db(transaction=True)


def in_threads(count: int, work) -> list:
    """Run ``work(i)`` for i in range(count) on ``count`` threads released together."""
    barrier = threading.Barrier(count)

    def run(i):
        try:
            barrier.wait(timeout=30)
            return work(i)
        finally:
            connections.close_all()

    with ThreadPoolExecutor(max_workers=count) as pool:
        return list(pool.map(run, range(count)))


def bearer(user) -> APIClient:
    raw, _ = token_issue(user=user)
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Bearer {raw}")
    return client


def stored(comment) -> tuple[int, set[int]]:
    count = Comment.objects.get(pk=comment.pk).like_count
    likers = set(Like.objects.filter(comment_id=comment.pk, active=True).values_list("user_id", flat=True))
    return count, likers


def live_count(comment) -> int | None:
    """The count Redis holds now (None when its state is not loaded)."""
    r = redislink.client()
    found = live.page_state(r, [(comment.pk, comment.subject_id)], None)
    return found[comment.pk][0] if comment.pk in found else None


def test_fifty_users_liking_one_comment_at_once_make_exactly_fifty(like_store):
    comment = CommentFactory()
    clients = [bearer(UserFactory()) for _ in range(50)]

    answers = in_threads(50, lambda i: clients[i].put(f"{API}/comments/{comment.id}/like"))

    assert {a.status_code for a in answers} == {200}
    assert max(a.json()["like_count"] for a in answers) == 50
    if like_store == "redis":
        assert live_count(comment) == 50
        assert stored(comment)[0] == 0  # not flushed yet
    likes_flush()
    count, likers = stored(comment)
    assert count == 50 and len(likers) == 50


@pytest.mark.parametrize("seed", [1, 2])
def test_random_interleavings_end_with_each_users_last_action(like_store, seed):
    rng = random.Random(seed)
    comment = CommentFactory()
    users = [UserFactory() for _ in range(16)]
    scripts = [[rng.random() < 0.5 for _ in range(rng.randint(1, 12))] for _ in users]
    expected = {u.pk for u, script in zip(users, scripts, strict=True) if script[-1]}

    def act(i):
        for liked in scripts[i]:
            like_set(comment_id=comment.pk, user=users[i], liked=liked)
            time.sleep(rng.random() / 1000)

    in_threads(len(users), act)

    if like_store == "redis":
        assert live_count(comment) == len(expected)
    likes_flush()
    assert stored(comment) == (len(expected), expected)
    if like_store == "redis":
        assert live_count(comment) == len(expected)


def cold_comment_with_likes(raw_redis, likes: int):
    """A comment with ``likes`` likes, all flushed, whose like state Redis has lost."""
    comment = CommentFactory()
    for user in [UserFactory() for _ in range(likes)]:
        like_set(comment_id=comment.pk, user=user, liked=True)
    likes_flush()
    raw_redis.flushdb()
    return comment


def test_a_state_made_from_the_rows_keeps_each_likers_own_time(redis_url, raw_redis):
    """The rows come as the likers' times and ids in two arrays: each time must stay with its
    liker. The likers are inserted in an order unlike that of their times."""
    comment = CommentFactory()
    fans = [UserFactory() for _ in range(6)]
    base = live.now_ms() - 3_600_000
    like_times = {fan.pk: base + 60_000 * ((i * 5) % 6) for i, fan in enumerate(fans)}
    like_actions_apply(
        [LikeAction(comment_id=comment.pk, user_id=pk, liked=True, at_ms=at) for pk, at in like_times.items()],
        subject_id=comment.subject_id,
    )
    raw_redis.flushdb()

    assert like_set(comment_id=comment.pk, user=UserFactory(), liked=True) == (7, True)  # made from the rows

    members = raw_redis.zrange(keys.likers(comment.subject_id, comment.pk), 0, -1, withscores=True)
    held = {int(member): int(score) for member, score in members if member != protocol.SENTINEL}
    assert {pk: held[pk] for pk in like_times} == like_times


def test_concurrent_likers_pages_of_a_cold_comment_load_it_once(redis_url, raw_redis, monkeypatch):
    monkeypatch.setattr(state_sync, "SMALL_STATE", 10)  # 30 likers: the careful road, under the lock
    comment = cold_comment_with_likes(raw_redis, 30)
    builds = []
    real_build = state_sync._build

    def counting_build(*args, **kwargs):
        builds.append(1)
        time.sleep(0.05)  # keep the others waiting on the lock
        return real_build(*args, **kwargs)

    monkeypatch.setattr(state_sync, "_build", counting_build)
    readers = [bearer(UserFactory()) for _ in range(8)]

    pages = in_threads(8, lambda i: readers[i].get(f"{API}/comments/{comment.id}/likers?limit=50"))

    assert len(builds) == 1
    assert {len(page.json()["items"]) for page in pages} == {30}
    assert live_count(comment) == 30


@pytest.mark.parametrize("place_known", [True, False], ids=["comment-met", "comment-new-to-the-process"])
def test_concurrent_first_touches_of_a_small_cold_comment_create_its_state_without_the_lock(
    redis_url, raw_redis, monkeypatch, place_known
):
    comment = cold_comment_with_likes(raw_redis, 30)
    if not place_known:  # the rows are read before Redis is asked (state_sync.READ_MAX_AGE)
        monkeypatch.setattr(likes_queries, "_places", {})
    builds = []
    monkeypatch.setattr(state_sync, "_build", lambda *a, **k: builds.append(1))
    late = [UserFactory() for _ in range(8)]

    in_threads(8, lambda i: like_set(comment_id=comment.pk, user=late[i], liked=True))

    # Each thread either created the state with the 30 likers or found it made: none was
    # created twice over another's likes.
    assert builds == []
    assert live_count(comment) == 38
    likes_flush()
    assert stored(comment)[0] == 38


def test_a_cold_comment_nobody_likes_loads_with_one_statement(redis_url, raw_redis, django_assert_num_queries):
    comment = CommentFactory()
    raw_redis.flushdb()
    with django_assert_num_queries(1):
        state_sync.load(state_sync.client(), comment_id=comment.pk, subject_id=comment.subject_id)
    assert live_count(comment) == 0
    assert like_set(comment_id=comment.pk, user=UserFactory(), liked=True) == (1, True)


@pytest.mark.parametrize("place_known", [True, False], ids=["comment-met", "comment-new-to-the-process"])
def test_a_cold_comment_with_an_action_waiting_in_the_stream_takes_the_careful_road(
    redis_url, raw_redis, monkeypatch, place_known
):
    comment = CommentFactory()
    fans = [UserFactory() for _ in range(3)]
    for fan in fans:
        like_set(comment_id=comment.pk, user=fan, liked=True)
    # The state is lost while its actions still wait for the flush.
    raw_redis.delete(keys.likers(comment.subject_id, comment.pk))
    if not place_known:  # the rows, read first, lack the waiting actions
        monkeypatch.setattr(likes_queries, "_places", {})
    builds = []
    real_build = state_sync._build
    monkeypatch.setattr(state_sync, "_build", lambda *a, **k: builds.append(1) or real_build(*a, **k))
    like_set(comment_id=comment.pk, user=UserFactory(), liked=True)
    assert builds == [1]
    assert live_count(comment) == 4
    likes_flush()
    assert stored(comment)[0] == 4


class RedisCalls:
    """Counts the round trips to Redis: commands, pipelines and ``round_trip`` calls."""

    def __init__(self, monkeypatch):
        self.count = 0
        for owner, name in [
            (redis.Redis, "execute_command"),
            (redis.client.Pipeline, "execute"),
            (live, "round_trip"),
            (streams, "round_trip"),
        ]:
            monkeypatch.setattr(owner, name, self._counting(getattr(owner, name)))

    def _counting(self, real):
        def call(*args, **kwargs):
            self.count += 1
            return real(*args, **kwargs)

        return call


@pytest.mark.parametrize("likes", [0, 12])
def test_a_like_on_a_cold_comment_new_to_the_process_costs_one_statement_and_one_round_trip(
    redis_url, raw_redis, monkeypatch, django_assert_num_queries, likes
):
    comment = cold_comment_with_likes(raw_redis, likes)
    monkeypatch.setattr(likes_queries, "_places", {})
    fan, second_fan = UserFactory(), UserFactory()
    # Another like in the subject, as on a subject in use: its stream holds an action, and the
    # process registered the subject for the flush lately, so this like need not.
    like_set(comment_id=CommentFactory(subject=comment.subject).pk, user=fan, liked=True)
    calls = RedisCalls(monkeypatch)
    # Where the comment lives, its flag and its likers: one statement (SQLite: a second for the
    # likers).
    with django_assert_num_queries(1 if likes == 0 or connection.vendor == "postgresql" else 2):
        assert like_set(comment_id=comment.pk, user=fan, liked=True) == (likes + 1, True)
    assert calls.count == 1  # the like script, which creates the state first
    calls.count = 0
    with django_assert_num_queries(0):
        assert like_set(comment_id=comment.pk, user=second_fan, liked=True) == (likes + 2, True)
    assert calls.count == 1
    likes_flush()
    assert stored(comment)[0] == likes + 2


class LikeCalls:
    """The ``live.like`` calls of ``like_set``: how many, and how many likers each shipped."""

    def __init__(self, monkeypatch):
        self.shipped: list[int] = []
        real = live.like

        def like(r, **kwargs):
            create = kwargs.get("create")
            self.shipped.append(0 if create is None else len(create.flat_likers) // 2)
            return real(r, **kwargs)

        monkeypatch.setattr(live, "like", like)


def test_a_process_meeting_a_popular_comment_whose_state_redis_holds_reads_and_ships_no_likers(
    redis_url, raw_redis, monkeypatch, django_assert_num_queries
):
    monkeypatch.setattr(state_sync, "FIRST_MEET_LIKERS", 5)
    comment = cold_comment_with_likes(raw_redis, 8)
    like_set(comment_id=comment.pk, user=UserFactory(), liked=True)  # another process loads its state
    monkeypatch.setattr(likes_queries, "_places", {})  # this process has not met the comment
    fan = UserFactory()
    calls, redis_calls = LikeCalls(monkeypatch), RedisCalls(monkeypatch)

    with django_assert_num_queries(1):
        assert like_set(comment_id=comment.pk, user=fan, liked=True) == (10, True)

    assert calls.shipped == [0]  # before: the 8 likers read and shipped, for a state Redis had
    assert redis_calls.count == 1


@pytest.mark.parametrize("place_known", [True, False], ids=["comment-met", "comment-new-to-the-process"])
def test_a_popular_comment_whose_state_redis_lacks_gets_a_partial_state_without_its_likers(
    redis_url, raw_redis, monkeypatch, django_assert_num_queries, place_known
):
    monkeypatch.setattr(state_sync, "FIRST_MEET_LIKERS", 5)
    comment = cold_comment_with_likes(raw_redis, 8)
    if not place_known:
        monkeypatch.setattr(likes_queries, "_places", {})
    fan = UserFactory()
    # A subject in use: its stream holds an action, registered for the flush lately.
    like_set(comment_id=CommentFactory(subject=comment.subject).pk, user=fan, liked=True)
    calls, redis_calls = LikeCalls(monkeypatch), RedisCalls(monkeypatch)

    # Where it lives, its count and the fan's like row: one statement (with the place known,
    # after Redis said it lacks the state). Before: its 8 likers read and shipped as well.
    with django_assert_num_queries(1):
        assert like_set(comment_id=comment.pk, user=fan, liked=True) == (9, True)

    assert calls.shipped == ([0] if not place_known else [0, 0])
    assert redis_calls.count == (1 if not place_known else 2)
    state = dict(raw_redis.zrange(keys.likers(comment.subject_id, comment.pk), 0, -1, withscores=True))
    assert set(state) == {protocol.SENTINEL, protocol.PARTIAL, str(fan.pk)}
    assert protocol.PARTIAL_BASE - state[protocol.PARTIAL] == 8  # likers not met
    likes_flush()
    assert stored(comment)[0] == 9


@pytest.mark.parametrize("place_known", [True, False], ids=["comment-met", "comment-new-to-the-process"])
def test_rows_read_before_a_flush_wrote_to_them_do_not_make_the_state(redis_url, raw_redis, monkeypatch, place_known):
    """The state is lost (evicted) while actions wait in the stream; a like reads the rows, and
    before it reaches Redis the flush writes those actions to the rows: what it read is behind,
    and must not become the state."""
    comment = CommentFactory()
    early = [UserFactory() for _ in range(2)]
    for fan in early:
        like_set(comment_id=comment.pk, user=fan, liked=True)
    if place_known:
        # The state is lost with nothing waiting; the process asks Redis first, then reads. A
        # like from elsewhere comes in between and is flushed, its state lost again.
        likes_flush()
        raw_redis.delete(keys.likers(comment.subject_id, comment.pk))
    else:
        monkeypatch.setattr(likes_queries, "_places", {})
    real_read = state_sync.read_rows
    meddled: list = []

    def read_then_meddle(comment_id, **options):
        rows = real_read(comment_id, **options)
        if not meddled:
            meddled.append(1)
            if place_known:
                like_set(comment_id=comment.pk, user=early[0], liked=False)
            raw_redis.delete(keys.likers(comment.subject_id, comment.pk))  # evicted
            likes_flush()
        return rows

    monkeypatch.setattr(state_sync, "read_rows", read_then_meddle)
    assert like_set(comment_id=comment.pk, user=UserFactory(), liked=True)[0] == (2 if place_known else 3)
    likes_flush()
    assert stored(comment)[0] == live_count(comment) == (2 if place_known else 3)


def test_a_state_rebuilt_while_actions_wait_keeps_no_expiry_until_they_are_flushed(redis_url, raw_redis):
    """A state dropped while a like waits in the stream and then loaded carefully must not
    expire before the flush: the next load would read rows without that like, and every page
    would lose it until the flush (found by the like machine)."""
    comment, fan = CommentFactory(), UserFactory()
    likers_key = keys.likers(comment.subject_id, comment.pk)
    like_set(comment_id=comment.pk, user=fan, liked=True)
    live.drop(raw_redis, [(comment.pk, comment.subject_id)])

    state_sync.load(raw_redis, comment_id=comment.pk, subject_id=comment.subject_id)

    assert raw_redis.zscore(likers_key, str(fan.pk)) is not None
    assert raw_redis.ttl(likers_key) == -1
    likes_flush()
    assert raw_redis.ttl(likers_key) > 0
    assert stored(comment)[0] == 1


def test_an_action_counts_as_waiting_until_the_flush_deletes_its_entry_once(redis_url, raw_redis):
    comment = CommentFactory()
    for fan in [UserFactory() for _ in range(2)]:
        like_set(comment_id=comment.pk, user=fan, liked=True)
    likers_key, pending = keys.likers(comment.subject_id, comment.pk), keys.pending(comment.subject_id)
    assert raw_redis.hget(pending, str(comment.pk)) == "2"
    assert raw_redis.ttl(likers_key) == -1  # no expiry while actions wait
    first = raw_redis.xrange(keys.events(comment.subject_id))[0][0]

    for _ in range(2):  # two flushes that both applied it (one took it over from the other)
        live.acknowledge(raw_redis, comment.subject_id, [(first, comment.pk)])

    assert raw_redis.hget(pending, str(comment.pk)) == "1"
    assert raw_redis.ttl(likers_key) == -1
    likes_flush()
    assert raw_redis.hget(pending, str(comment.pk)) is None
    assert raw_redis.ttl(likers_key) > 0
    assert raw_redis.zscore(keys.written(comment.subject_id), str(comment.pk)) is not None
    assert 0 < raw_redis.pttl(keys.written(comment.subject_id)) <= protocol.WRITTEN_WINDOW_MS
    assert raw_redis.xlen(keys.events(comment.subject_id)) == 0


def test_after_flushdb_counts_and_liked_flags_come_back_from_the_database(redis_url, raw_redis):
    subject = SubjectFactory(mode="flat")
    comments = [CommentFactory(subject=subject) for _ in range(4)]
    fans = [UserFactory() for _ in range(3)]
    for i, fan in enumerate(fans):
        for comment in comments[: i + 2]:
            bearer(fan).put(f"{API}/comments/{comment.id}/like")
    likes_flush()
    url = f"{API}/subjects/{subject.id}/comments"
    before = {i["id"]: (i["like_count"], i["liked"]) for i in bearer(fans[0]).get(url).json()["items"]}

    raw_redis.flushdb()

    after = {i["id"]: (i["like_count"], i["liked"]) for i in bearer(fans[0]).get(url).json()["items"]}
    assert after == before
    assert [before[c.id][0] for c in comments] == [3, 3, 2, 1]
    # The next like loads the state from the rows and counts on from there.
    assert bearer(UserFactory()).put(f"{API}/comments/{comments[0].id}/like").json()["like_count"] == 4
    likes_flush()
    assert stored(comments[0])[0] == 4


def test_a_signed_in_reader_who_liked_nothing_causes_no_load(redis_url, raw_redis, monkeypatch):
    subject = SubjectFactory(mode="flat")
    comments = [CommentFactory(subject=subject) for _ in range(20)]
    like_set(comment_id=comments[0].pk, user=UserFactory(), liked=True)
    likes_flush()
    raw_redis.flushdb()
    loads = []
    monkeypatch.setattr(state_sync, "_build", lambda *a, **k: loads.append(1))

    items = bearer(UserFactory()).get(f"{API}/subjects/{subject.id}/comments").json()["items"]

    assert loads == []
    assert [i["like_count"] for i in items] == [1] + [0] * 19
    assert not any(i["liked"] for i in items)


def test_a_new_comment_starts_with_its_empty_state_loaded(
    redis_url, raw_redis, django_capture_on_commit_callbacks, monkeypatch
):
    subject = SubjectFactory()
    with django_capture_on_commit_callbacks(execute=True):
        comment = CommentFactory(subject=subject)
    assert raw_redis.zcard(keys.likers(subject.id, comment.id)) == 1  # the sentinel alone
    monkeypatch.setattr(state_sync, "_build", lambda *a, **k: pytest.fail("a new comment needed a load"))
    assert like_set(comment_id=comment.pk, user=UserFactory(), liked=True) == (1, True)


# --- Redis unreachable, and back -------------------------------------------------------------


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture
def private_redis(settings, tmp_path):
    """A Redis server of this test's own, so it can be frozen (SIGSTOP: connections time out,
    as when the network drops) and thawed with its data intact."""
    port = _free_port()
    process = subprocess.Popen(
        [
            "redis-server",
            "--port",
            str(port),
            "--bind",
            "127.0.0.1",
            "--save",
            "",
            "--appendonly",
            "no",
            "--dir",
            str(tmp_path),
        ],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    client = redis.Redis(port=port, decode_responses=True, socket_timeout=1)
    for _ in range(100):
        try:
            client.ping()
            break
        except redis.ConnectionError:
            time.sleep(0.05)
    settings.LIKES_REDIS_URL = f"redis://127.0.0.1:{port}/0"
    settings.LIKES_REDIS_TIMEOUT = 0.2
    # Longer than a test takes: a test that waits it out moves the clock (tests/clocks.py).
    settings.LIKES_REDIS_RETRY = 60.0
    redislink.reset()
    yield process
    if process.poll() is None:
        os.kill(process.pid, signal.SIGCONT)
        process.kill()
        process.wait()
    redislink.reset()


def test_likes_go_to_the_database_while_redis_is_unreachable_and_stay_exact_after(private_redis, settings, monkeypatch):
    subject = SubjectFactory(mode="flat")
    comment = CommentFactory(subject=subject)
    a, b, c, d = (UserFactory() for _ in range(4))
    like_set(comment_id=comment.pk, user=a, liked=True)
    like_set(comment_id=comment.pk, user=b, liked=True)
    likes_flush()
    assert stored(comment)[0] == 2

    os.kill(private_redis.pid, signal.SIGSTOP)
    try:
        assert like_set(comment_id=comment.pk, user=c, liked=True) == (3, True)
        assert like_set(comment_id=comment.pk, user=a, liked=False) == (2, False)
        assert stored(comment) == (2, {b.pk, c.pk})
        assert StaleLikeState.objects.filter(comment_id=comment.pk).exists()
        page = bearer(c).get(f"{API}/subjects/{subject.id}/comments").json()["items"]
        assert (page[0]["like_count"], page[0]["liked"]) == (2, True)
    finally:
        os.kill(private_redis.pid, signal.SIGCONT)
    # The process leaves Redis alone for LIKES_REDIS_RETRY seconds after the failure: moved past.
    shifted_clock(monkeypatch, redislink).advance(settings.LIKES_REDIS_RETRY + 1)

    # Redis is back with its old state ({a, b}); the first use drops it, the rows answer.
    page = bearer(a).get(f"{API}/subjects/{subject.id}/comments").json()["items"]
    assert (page[0]["like_count"], page[0]["liked"]) == (2, False)
    assert not StaleLikeState.objects.exists()
    assert like_set(comment_id=comment.pk, user=d, liked=True) == (3, True)
    likes_flush()
    assert stored(comment) == (3, {b.pk, c.pk, d.pk})
    assert live_count(comment) == 3


def test_likes_go_to_the_database_while_redis_is_full_and_stay_exact_after(private_redis, settings, monkeypatch):
    """A like-state Redis runs with noeviction: once full, it refuses writes (OOM) and likes
    are written to the database instead of failing."""
    comment = CommentFactory(subject=SubjectFactory())
    a, b = UserFactory(), UserFactory()
    assert like_set(comment_id=comment.pk, user=a, liked=True) == (1, True)
    likes_flush()
    r = redislink.client()
    r.config_set("maxmemory-policy", "noeviction")
    r.config_set("maxmemory", 1)  # full: every write is refused

    assert like_set(comment_id=comment.pk, user=b, liked=True) == (2, True)
    assert stored(comment) == (2, {a.pk, b.pk})
    assert StaleLikeState.objects.filter(comment_id=comment.pk).exists()

    r.config_set("maxmemory", 0)
    # The process leaves Redis alone for LIKES_REDIS_RETRY seconds after the failure: moved past.
    shifted_clock(monkeypatch, redislink).advance(settings.LIKES_REDIS_RETRY + 1)
    assert like_set(comment_id=comment.pk, user=UserFactory(), liked=True) == (3, True)
    likes_flush()
    assert stored(comment)[0] == 3


def test_a_comment_deleted_while_redis_is_unreachable_cannot_be_liked_once_redis_is_back(
    private_redis, settings, monkeypatch
):
    comment = CommentFactory(subject=SubjectFactory())
    assert like_set(comment_id=comment.pk, user=UserFactory(), liked=True) == (1, True)  # state loaded, open

    os.kill(private_redis.pid, signal.SIGSTOP)
    try:
        comment_set_status(comment_id=comment.pk, to_status="deleted")  # its flag cannot be set
        assert StaleLikeState.objects.filter(comment_id=comment.pk).exists()
    finally:
        os.kill(private_redis.pid, signal.SIGCONT)
    # The process leaves Redis alone for LIKES_REDIS_RETRY seconds after the failure: moved past.
    shifted_clock(monkeypatch, redislink).advance(settings.LIKES_REDIS_RETRY + 1)

    with pytest.raises(NotFound):
        like_set(comment_id=comment.pk, user=UserFactory(), liked=True)
    likes_flush()
    assert stored(comment)[0] == 1

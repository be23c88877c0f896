"""Partial like states (``likes.protocol.PARTIAL``): the first like of a popular comment whose state
Redis lacks starts from the rows' like count, and the state meets users one at a time instead
of loading every liker. Against real Redis and the real database."""

from __future__ import annotations

import random
import time

import pytest
from rest_framework.test import APIClient

from infra import redislink
from likes import keys, live, protocol, state_sync
from likes.models import Like
from likes.services import like_set, likes_flush

from ..api.conftest import API
from ..factories import CommentFactory, SubjectFactory, UserFactory
from .test_faults import bearer, in_threads, live_count, stored

pytestmark = pytest.mark.django_db(transaction=True)

EARLY = 8  # likers in the rows before the state is made


@pytest.fixture
def popular(redis_url, raw_redis, monkeypatch):
    """A comment of ``EARLY`` flushed likes (``early``), more than a first like ships
    (``FIRST_MEET_LIKERS`` 5), whose state Redis has lost, and a first like by ``fan`` that made
    its state partial."""
    monkeypatch.setattr(state_sync, "FIRST_MEET_LIKERS", 5)
    comment = CommentFactory(subject=SubjectFactory(mode="flat"))
    early = [UserFactory() for _ in range(EARLY)]
    for user in early:
        like_set(comment_id=comment.pk, user=user, liked=True)
    likes_flush()
    raw_redis.flushdb()
    fan = UserFactory()
    assert like_set(comment_id=comment.pk, user=fan, liked=True) == (EARLY + 1, True)
    assert is_partial(raw_redis, comment)
    return comment, early, fan


def is_partial(raw_redis, comment) -> bool:
    return raw_redis.zscore(keys.likers(comment.subject_id, comment.pk), protocol.PARTIAL) is not None


def row_ms(comment, user) -> int:
    return state_sync.ms(Like.objects.get(comment_id=comment.pk, user_id=user.pk).created_at)


def test_users_not_met_are_read_one_at_a_time_and_counted_once(popular, raw_redis, django_assert_num_queries):
    comment, early, fan = popular
    stranger = UserFactory()
    key = keys.likers(comment.subject_id, comment.pk)

    # An early liker the state has not met: its row is read; liking again changes nothing, and
    # keeps the like's time.
    with django_assert_num_queries(1):
        assert like_set(comment_id=comment.pk, user=early[0], liked=True) == (EARLY + 1, True)
    assert raw_redis.zscore(key, str(early[0].pk)) == row_ms(comment, early[0])
    # Met now: no statement.
    with django_assert_num_queries(0):
        assert like_set(comment_id=comment.pk, user=early[0], liked=False) == (EARLY, False)
    # A user who likes nothing unlikes, then likes.
    with django_assert_num_queries(1):
        assert like_set(comment_id=comment.pk, user=stranger, liked=False) == (EARLY, False)
    with django_assert_num_queries(0):
        assert like_set(comment_id=comment.pk, user=stranger, liked=True) == (EARLY + 1, True)
    # An early liker unlikes: one fewer.
    with django_assert_num_queries(1):
        assert like_set(comment_id=comment.pk, user=early[1], liked=False) == (EARLY, False)

    assert is_partial(raw_redis, comment)
    likes_flush()
    expected = {u.pk for u in early[2:]} | {fan.pk, stranger.pk}
    assert stored(comment) == (len(expected), expected)
    assert live_count(comment) == len(expected)


def test_a_users_row_read_before_the_flush_wrote_to_it_is_not_met(popular, raw_redis, monkeypatch):
    """Between the read of a user's row and the script, the user likes elsewhere, the flush
    writes it, and the state is lost and made again without meeting the user: the row read is
    behind and must not be met."""
    comment, early, fan = popular
    user = UserFactory()
    real_user_row = state_sync.user_row

    def read_then_meddle(comment_id, subject_id, user_id):
        row = real_user_row(comment_id, subject_id, user_id)  # no like yet
        monkeypatch.setattr(state_sync, "user_row", real_user_row)
        like_set(comment_id=comment.pk, user=user, liked=True)  # elsewhere
        likes_flush()
        raw_redis.delete(keys.likers(comment.subject_id, comment.pk))  # lost
        like_set(comment_id=comment.pk, user=UserFactory(), liked=True)  # made again, partial
        return row

    monkeypatch.setattr(state_sync, "user_row", read_then_meddle)

    assert like_set(comment_id=comment.pk, user=user, liked=True) == (EARLY + 3, True)
    likes_flush()
    assert stored(comment)[0] == live_count(comment) == EARLY + 3


@pytest.mark.parametrize("page_cache_ttl", [300, 0], ids=["cached-page", "uncached-page"])
def test_pages_show_the_live_count_and_each_readers_own_like(popular, settings, page_cache_ttl):
    settings.COMMENTS_PAGE_CACHE_TTL = page_cache_ttl
    comment, early, fan = popular
    like_set(comment_id=comment.pk, user=UserFactory(), liked=True)  # not flushed
    url = f"{API}/subjects/{comment.subject_id}/comments?mode=flat"

    def seen_by(client):
        (item,) = client.get(url).json()["items"]
        one = client.get(f"{API}/comments/{comment.id}").json()
        assert (one["like_count"], one["liked"]) == (item["like_count"], item["liked"])
        return item["like_count"], item["liked"]

    assert seen_by(bearer(early[0])) == (EARLY + 2, True)  # not met: "liked" from its row
    assert seen_by(bearer(fan)) == (EARLY + 2, True)  # met
    assert seen_by(bearer(UserFactory())) == (EARLY + 2, False)
    assert seen_by(APIClient()) == (EARLY + 2, False)  # anonymous


def test_a_likers_page_builds_the_whole_state_over_it(popular, raw_redis, django_capture_on_commit_callbacks):
    comment, early, fan = popular
    late = UserFactory()
    like_set(comment_id=comment.pk, user=late, liked=True)  # waiting in the stream
    like_set(comment_id=comment.pk, user=early[0], liked=False)  # waiting: its row is still active
    likes_flush()
    like_set(comment_id=comment.pk, user=early[1], liked=False)  # waiting

    items = bearer(UserFactory()).get(f"{API}/comments/{comment.id}/likers?limit=50").json()["items"]

    expected = {u.pk for u in early[2:]} | {fan.pk, late.pk}
    assert {item["user"]["id"] for item in items} == expected
    assert not is_partial(raw_redis, comment)
    members = raw_redis.zrange(keys.likers(comment.subject_id, comment.pk), 0, -1, withscores=True)
    assert {int(m) for m, _ in members if m != protocol.SENTINEL} == expected
    assert all(score >= 0 for m, score in members if m != protocol.SENTINEL)
    assert raw_redis.ttl(keys.likers(comment.subject_id, comment.pk)) == -1  # actions still wait
    likes_flush()
    assert stored(comment) == (len(expected), expected)
    assert live_count(comment) == len(expected)


def test_a_likers_page_over_it_reads_the_likers_once(popular, monkeypatch):
    """With nothing waiting, the small load (rows and one script, no lock) would read up to
    ``SMALL_STATE`` likers only to find the partial state and leave it to the careful build."""
    comment, early, fan = popular
    likes_flush()  # nothing waits
    reads = []
    real_read = state_sync.read_rows
    monkeypatch.setattr(state_sync, "read_rows", lambda *a, **k: reads.append(1) or real_read(*a, **k))

    items = bearer(UserFactory()).get(f"{API}/comments/{comment.id}/likers?limit=50").json()["items"]

    assert {item["user"]["id"] for item in items} == {u.pk for u in early} | {fan.pk}
    assert reads == []  # the careful build read them, once


def test_likes_made_while_the_whole_state_is_built_are_kept(popular, raw_redis, monkeypatch):
    comment, early, fan = popular
    newcomer = UserFactory()
    real_likers = state_sync._active_likers

    def likers_then_actions(comment_id, **options):
        yield from real_likers(comment_id, **options)
        # The rows are read; these reach the partial state before the build is placed.
        like_set(comment_id=comment.pk, user=newcomer, liked=True)
        like_set(comment_id=comment.pk, user=early[0], liked=False)
        like_set(comment_id=comment.pk, user=fan, liked=False)

    monkeypatch.setattr(state_sync, "_active_likers", likers_then_actions)
    state_sync.load(redislink.client(), comment_id=comment.pk, subject_id=comment.subject_id)

    assert not is_partial(raw_redis, comment)
    expected = {u.pk for u in early[1:]} | {newcomer.pk}
    assert live_count(comment) == len(expected)
    likes_flush()
    assert stored(comment) == (len(expected), expected)


def test_a_partial_state_is_never_created_over_by_a_whole_one_from_the_rows(popular, raw_redis):
    """A small load (the rows and one script, without the lock) leaves a partial state to the
    careful build: had it counted the state as loaded, the likers page would find none."""
    comment, early, fan = popular
    like_set(comment_id=comment.pk, user=early[0], liked=False)  # waiting
    likes_flush()  # nothing waits, as a small load requires
    since = live.cold_check(raw_redis, subject_id=comment.subject_id, comment_id=comment.pk)[1]
    creation = state_sync.read_rows(comment.pk).creation(since)
    assert creation is not None
    assert live.create_state(raw_redis, subject_id=comment.subject_id, comment_id=comment.pk, creation=creation) is None
    assert is_partial(raw_redis, comment)
    assert live_count(comment) == EARLY


@pytest.mark.parametrize("seed", [1, 2])
def test_random_interleavings_over_a_partial_state_end_with_each_users_last_action(popular, seed):
    comment, early, fan = popular
    rng = random.Random(seed)
    actors = [*early[:4], fan, *(UserFactory() for _ in range(8))]
    scripts = [[rng.random() < 0.5 for _ in range(rng.randint(1, 10))] for _ in actors]

    def act(i):
        for liked in scripts[i]:
            like_set(comment_id=comment.pk, user=actors[i], liked=liked)
            time.sleep(rng.random() / 1000)

    in_threads(len(actors), act)

    expected = {u.pk for u in early[4:]} | {u.pk for u, script in zip(actors, scripts, strict=True) if script[-1]}
    assert live_count(comment) == len(expected)
    likes_flush()
    assert stored(comment) == (len(expected), expected)
    assert live_count(comment) == len(expected)

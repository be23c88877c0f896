"""The likes endpoints of API.md, on both stores (Redis first, and the database alone)."""

from __future__ import annotations

from datetime import datetime

import pytest
import redis
import redis.cluster

from comments.models import Comment
from comments.services import comment_set_status
from likes.models import Like
from likes.services import likes_flush

from ..api.conftest import API, assert_error, assert_iso_time, assert_user_shape
from ..factories import CommentFactory, UserFactory


def like_url(comment) -> str:
    return f"{API}/comments/{comment.id}/like"


def stored_count(comment) -> int:
    return Comment.objects.get(pk=comment.pk).like_count


def test_liking_is_answered_at_once_and_is_idempotent(subject, client_for, like_store):
    comment = CommentFactory(subject=subject)
    fan, other = client_for(UserFactory()), client_for(UserFactory())

    assert fan.put(like_url(comment)).json() == {"liked": True, "like_count": 1}
    assert fan.put(like_url(comment)).json() == {"liked": True, "like_count": 1}
    assert other.put(like_url(comment)).json() == {"liked": True, "like_count": 2}
    assert fan.delete(like_url(comment)).json() == {"liked": False, "like_count": 1}
    assert fan.delete(like_url(comment)).json() == {"liked": False, "like_count": 1}

    likes_flush()
    assert stored_count(comment) == 1
    assert Like.objects.filter(comment_id=comment.pk, active=True).count() == 1


def test_a_like_shows_at_once_in_every_list_with_the_viewers_flag(subject, client_for, like_store):
    liked, plain = CommentFactory(subject=subject), CommentFactory(subject=subject)
    fan = UserFactory()
    client_for(fan).put(like_url(liked))

    for viewer, expect_liked in ((client_for(fan), True), (client_for(UserFactory()), False)):
        for mode in ("flat", "two_level", "stacked"):
            items = viewer.get(f"{API}/subjects/{subject.id}/comments", {"mode": mode}).json()["items"]
            by_id = {i["id"]: i for i in items}
            assert by_id[liked.id]["like_count"] == 1
            assert by_id[liked.id]["liked"] is expect_liked
            assert by_id[plain.id]["like_count"] == 0
            assert by_id[plain.id]["liked"] is False
        detail = viewer.get(f"{API}/comments/{liked.id}").json()
        assert (detail["like_count"], detail["liked"]) == (1, expect_liked)


def test_reply_previews_carry_live_like_state(subject, client_for, like_store):
    root = CommentFactory(subject=subject)
    reply = CommentFactory(subject=subject, reply_to=root)
    fan = UserFactory()
    client_for(fan).put(like_url(reply))
    items = client_for(fan).get(f"{API}/subjects/{subject.id}/comments", {"mode": "two_level"}).json()["items"]
    preview = items[0]["replies"][0]
    assert (preview["id"], preview["like_count"], preview["liked"]) == (reply.id, 1, True)


def test_liking_needs_a_signed_in_user(api, subject, like_store):
    comment = CommentFactory(subject=subject)
    assert_error(api.put(like_url(comment)), 401, "not_authenticated")
    assert_error(api.delete(like_url(comment)), 401, "not_authenticated")


def test_liking_an_unknown_or_invisible_comment_is_not_found(subject, client_for, like_store):
    author, stranger = UserFactory(), UserFactory()
    pending = CommentFactory(subject=subject, author=author)
    comment_set_status(comment_id=pending.id, to_status="pending")
    deleted = CommentFactory(subject=subject, author=author)
    CommentFactory(subject=subject, reply_to=deleted)  # keeps the deleted one as a placeholder
    comment_set_status(comment_id=deleted.id, to_status="deleted")
    client = client_for(stranger)

    assert_error(client.put(f"{API}/comments/999999999/like"), 404, "not_found")
    assert_error(client.put(like_url(pending)), 404, "not_found")
    assert_error(client.put(like_url(deleted)), 404, "not_found")
    assert_error(client.get(f"{API}/comments/{pending.id}/likers"), 404, "not_found")
    # The author sees (and may like) their own comment under review.
    assert client_for(author).put(like_url(pending)).json() == {"liked": True, "like_count": 1}
    assert Like.objects.filter(comment_id=deleted.id).count() == 0


def test_likers_are_listed_oldest_like_first_and_paginate_exactly_once(subject, client_for, api, like_store):
    comment = CommentFactory(subject=subject)
    fans = [UserFactory() for _ in range(7)]
    for fan in fans:
        client_for(fan).put(like_url(comment))
    client_for(fans[2]).delete(like_url(comment))
    client_for(fans[2]).put(like_url(comment))  # liked again: now the newest

    seen, cursor, pages = [], None, 0
    while True:
        params = {"limit": 3, **({"cursor": cursor} if cursor else {})}
        body = api.get(f"{API}/comments/{comment.id}/likers", params).json()
        pages += 1
        for item in body["items"]:
            assert_user_shape(item["user"])
            assert_iso_time(item["liked_at"])
        seen += body["items"]
        cursor = body["next_cursor"]
        if cursor is None:
            break
    expected = [f.pk for f in fans if f != fans[2]] + [fans[2].pk]
    assert [i["user"]["id"] for i in seen] == expected
    assert pages == 3
    # Compared as times, not as text: a like at a whole second is written without a fraction
    # ("…:30Z"), which as text sorts after "…:30.015000Z".
    times = [datetime.fromisoformat(i["liked_at"]) for i in seen]
    assert times == sorted(times)


def test_likers_after_the_flush_come_back_the_same_from_either_store(subject, client_for, api, redis_url, raw_redis):
    comment = CommentFactory(subject=subject)
    fans = [UserFactory() for _ in range(4)]
    for fan in fans:
        client_for(fan).put(like_url(comment))
    likes_flush()
    live_items = api.get(f"{API}/comments/{comment.id}/likers").json()["items"]
    raw_redis.flushdb()  # state gone: rebuilt from the rows on this read
    rebuilt_items = api.get(f"{API}/comments/{comment.id}/likers").json()["items"]
    assert rebuilt_items == live_items
    assert [i["user"]["id"] for i in live_items] == [f.pk for f in fans]


@pytest.mark.parametrize("cursor", ["garbage", "e30:1abc:xyz"])
def test_a_malformed_likers_cursor_is_invalid(subject, api, like_store, cursor):
    comment = CommentFactory(subject=subject)
    assert_error(api.get(f"{API}/comments/{comment.id}/likers", {"cursor": cursor}), 400, "invalid")


def test_a_likers_cursor_of_another_comment_is_invalid(subject, api, client_for, like_store):
    first, second = CommentFactory(subject=subject), CommentFactory(subject=subject)
    for _ in range(3):
        client_for(UserFactory()).put(like_url(first))
    cursor = api.get(f"{API}/comments/{first.id}/likers", {"limit": 1}).json()["next_cursor"]
    assert cursor
    assert_error(api.get(f"{API}/comments/{second.id}/likers", {"cursor": cursor}), 400, "invalid")


@pytest.mark.parametrize("limit", ["0", "-1", "101", "x", ""])
def test_a_bad_likers_limit_is_invalid(subject, api, like_store, limit):
    comment = CommentFactory(subject=subject)
    assert_error(api.get(f"{API}/comments/{comment.id}/likers", {"limit": limit}), 400, "invalid")


def test_likes_are_rate_limited(subject, client_for, settings, like_store):
    settings.RATE_LIMITS = {"like": (2, 60)}
    comment = CommentFactory(subject=subject)
    client = client_for(UserFactory())
    assert client.put(like_url(comment)).status_code == 200
    assert client.delete(like_url(comment)).status_code == 200
    response = client.put(like_url(comment))
    assert_error(response, 429, "rate_limited")
    assert int(response["Retry-After"]) >= 1


class RoundTrips:
    """Counts what the like state costs a request in Redis round trips."""

    def __init__(self, monkeypatch):
        self.count = 0
        counter = self

        original_execute = redis.client.Pipeline.execute
        original_command = redis.Redis.execute_command

        def execute(pipe, *args, **kwargs):
            counter.count += 1
            return original_execute(pipe, *args, **kwargs)

        def command(client, *args, **kwargs):
            counter.count += 1
            return original_command(client, *args, **kwargs)

        monkeypatch.setattr(redis.client.Pipeline, "execute", execute)
        monkeypatch.setattr(redis.Redis, "execute_command", command)
        # A cluster client sends on its nodes' connections itself, not through their clients.
        original_cluster_command = redis.cluster.RedisCluster.execute_command

        def cluster_command(client, *args, **kwargs):
            counter.count += 1
            return original_cluster_command(client, *args, **kwargs)

        monkeypatch.setattr(redis.cluster.RedisCluster, "execute_command", cluster_command)


@pytest.mark.parametrize("limit", [20, 100])
def test_a_page_gets_its_like_state_in_one_redis_round_trip(
    subject, client_for, redis_url, monkeypatch, settings, limit
):
    # The page cache's own round trips are counted by its tests (tests/comments/test_pagecache.py).
    settings.COMMENTS_PAGE_CACHE_TTL = 0
    comments = [CommentFactory(subject=subject) for _ in range(limit)]
    fan = UserFactory()
    client = client_for(fan)
    for comment in comments[::3]:
        client.put(like_url(comment))
    trips = RoundTrips(monkeypatch)
    items = client.get(f"{API}/subjects/{subject.id}/comments", {"mode": "flat", "limit": limit}).json()["items"]
    assert trips.count == 1
    assert len(items) == limit
    liked_ids = {c.id for c in comments[::3]}
    assert {i["id"] for i in items if i["liked"]} == liked_ids
    assert all(i["like_count"] == (1 if i["id"] in liked_ids else 0) for i in items)


def test_a_like_of_a_public_comment_costs_only_the_token_query_when_redis_holds_its_state(
    subject, client_for, redis_url, django_assert_num_queries
):
    comment = CommentFactory(subject=subject)
    client_for(UserFactory()).put(like_url(comment))  # this process learns where the comment lives
    client = client_for(UserFactory())
    with django_assert_num_queries(1):  # the bearer token; the state's flag says "open to all"
        assert client.put(like_url(comment)).json() == {"liked": True, "like_count": 2}


def test_a_comment_deleted_after_its_state_loaded_can_no_longer_be_liked(
    subject, client_for, redis_url, django_capture_on_commit_callbacks
):
    comment = CommentFactory(subject=subject)
    assert client_for(UserFactory()).put(like_url(comment)).json()["like_count"] == 1
    with django_capture_on_commit_callbacks(execute=True):
        comment_set_status(comment_id=comment.pk, to_status="deleted")

    response = client_for(UserFactory()).put(like_url(comment))
    assert_error(response, 404, "not_found")
    likes_flush()
    assert Like.objects.filter(comment_id=comment.pk, active=True).count() == 1


def test_a_pending_comment_is_liked_only_by_its_author_then_by_all_once_approved(
    subject, client_for, redis_url, django_assert_num_queries, django_capture_on_commit_callbacks
):
    author = UserFactory()
    with django_capture_on_commit_callbacks(execute=True):  # its empty state is loaded, open
        comment = CommentFactory(subject=subject, author=author)
    with django_capture_on_commit_callbacks(execute=True):
        comment_set_status(comment_id=comment.pk, to_status="pending")
    stranger = client_for(UserFactory())

    assert_error(stranger.put(like_url(comment)), 404, "not_found")
    assert client_for(author).put(like_url(comment)).json() == {"liked": True, "like_count": 1}
    with django_capture_on_commit_callbacks(execute=True):
        comment_set_status(comment_id=comment.pk, to_status="published")
    with django_assert_num_queries(1):
        assert stranger.put(like_url(comment)).json() == {"liked": True, "like_count": 2}


def test_a_friends_only_comment_asks_the_database_who_may_like_it(subject, client_for, redis_url):
    author = UserFactory()
    comment = CommentFactory(subject=subject, author=author, visibility="friends")
    assert client_for(author).put(like_url(comment)).json() == {"liked": True, "like_count": 1}
    assert_error(client_for(UserFactory()).put(like_url(comment)), 404, "not_found")


def test_a_likers_page_of_a_public_comment_costs_only_the_faces_query_when_redis_holds_its_state(
    subject, api, client_for, redis_url, django_assert_num_queries
):
    comment = CommentFactory(subject=subject)
    fans = [UserFactory() for _ in range(3)]
    for fan in fans:
        client_for(fan).put(like_url(comment))
    with django_assert_num_queries(1):  # the likers' names; the state's flag says "open to all"
        items = api.get(f"{API}/comments/{comment.id}/likers").json()["items"]
    assert [i["user"]["id"] for i in items] == [f.pk for f in fans]


def test_a_comment_taken_into_review_after_it_was_liked_hides_its_likers_from_others(
    subject, api, client_for, like_store, django_capture_on_commit_callbacks
):
    author, fan = UserFactory(), UserFactory()
    comment = CommentFactory(subject=subject, author=author)
    client_for(fan).put(like_url(comment))  # with Redis: the state is loaded, open to all
    assert len(api.get(f"{API}/comments/{comment.id}/likers").json()["items"]) == 1
    with django_capture_on_commit_callbacks(execute=True):
        comment_set_status(comment_id=comment.pk, to_status="pending")

    assert_error(api.get(f"{API}/comments/{comment.id}/likers"), 404, "not_found")
    assert_error(client_for(fan).get(f"{API}/comments/{comment.id}/likers"), 404, "not_found")
    # Not found comes before the cursor is read: a bad cursor does not tell the comment exists.
    assert_error(api.get(f"{API}/comments/{comment.id}/likers", {"cursor": "garbage"}), 404, "not_found")
    mine = client_for(author).get(f"{API}/comments/{comment.id}/likers").json()["items"]
    assert [i["user"]["id"] for i in mine] == [fan.pk]


def test_likers_of_a_friends_only_comment_are_shown_to_its_author_and_friends_only(
    subject, api, client_for, like_store
):
    author = UserFactory()
    comment = CommentFactory(subject=subject, author=author, visibility="friends")
    client_for(author).put(like_url(comment))
    assert [i["user"]["id"] for i in client_for(author).get(f"{API}/comments/{comment.id}/likers").json()["items"]] == [
        author.pk
    ]
    assert_error(api.get(f"{API}/comments/{comment.id}/likers"), 404, "not_found")
    assert_error(client_for(UserFactory()).get(f"{API}/comments/{comment.id}/likers"), 404, "not_found")
    assert_error(api.get(f"{API}/comments/999999999/likers"), 404, "not_found")


def test_a_state_rebuilt_in_many_chunks_holds_every_liker_at_their_time(
    subject, client_for, api, redis_url, raw_redis, monkeypatch
):
    from likes import state_sync

    comment = CommentFactory(subject=subject)
    fans = [UserFactory() for _ in range(7)]
    for fan in fans:
        client_for(fan).put(like_url(comment))
    client_for(fans[3]).delete(like_url(comment))  # an unlike among them
    likes_flush()
    live_items = api.get(f"{API}/comments/{comment.id}/likers").json()["items"]
    monkeypatch.setattr(state_sync, "CHUNK", 3)  # three database chunks ...
    monkeypatch.setattr(state_sync, "ZADD_PAIRS", 2)  # ... of two ZADDs each
    raw_redis.flushdb()
    rebuilt = api.get(f"{API}/comments/{comment.id}/likers").json()["items"]
    assert rebuilt == live_items
    assert [i["user"]["id"] for i in rebuilt] == [f.pk for f in fans if f != fans[3]]
    assert api.get(f"{API}/comments/{comment.id}").json()["like_count"] == 6

"""``infra.redislink.round_trip`` (the like's and the rate limiter's one round trip) against
the suite's real Redis: replies in order, error replies handed back, a connection that timed out
dropped rather than returned to the pool with a reply unread, and the like script found again after
Redis forgot it."""

from __future__ import annotations

import pytest
import redis

from infra.redislink import connect, round_trip
from likes import live
from likes.services import like_set

from ..factories import CommentFactory, UserFactory

pytestmark = pytest.mark.django_db


def test_replies_come_in_order_with_error_replies_handed_back(raw_redis):
    raw_redis.set("rt:text", "not a number")
    count, error, text = round_trip(raw_redis, [("INCR", "rt:n"), ("INCR", "rt:text"), ("GET", "rt:text")])
    assert count == 1
    assert isinstance(error, redis.exceptions.ResponseError) and "not an integer" in str(error)
    assert text == "not a number"
    # The connection went back to the pool clean: the next call reads its own replies.
    assert round_trip(raw_redis, [("INCR", "rt:n")]) == [2]


def test_a_call_that_times_out_drops_its_connection_instead_of_leaving_a_reply_unread(redis_url):
    impatient = connect(redis_url, decode_responses=True, socket_timeout=0.2)
    with pytest.raises(redis.exceptions.TimeoutError):
        round_trip(impatient, [("BLPOP", "rt:nothing", 1)])
    # Had the connection gone back to the pool, this would read BLPOP's late nil.
    assert round_trip(impatient, [("INCR", "rt:mine")]) == [1]


def test_a_like_still_works_after_redis_forgot_the_script(redis_url, raw_redis):
    comment = CommentFactory()
    first, second = UserFactory(), UserFactory()
    assert like_set(comment_id=comment.pk, user=first, liked=True) == (1, True)
    raw_redis.script_flush()
    assert like_set(comment_id=comment.pk, user=second, liked=True) == (2, True)
    assert raw_redis.script_exists(live.LIKE.sha) == [True]

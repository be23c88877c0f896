"""Likes through real Celery workers (with beat), killed at the worst moments: inside the
flush's database transaction, and after its commit but before the stream entries are
acknowledged. The next worker must leave the database exact: no like lost, none counted twice.

The workers are real (``tests/workers.py``), on the ``likes`` queue. A worker to be killed runs
through ``tests/likes/paused_worker.py``, which stops its flush at the chosen point until the
test has SIGKILLed its whole process group.
"""

from __future__ import annotations

import os
import re
import time
from pathlib import Path

import pytest
import redis
from django.db import connection

from comments.models import Comment
from likes import keys
from likes.models import Like
from likes.services import like_set

from ..factories import CommentFactory, UserFactory
from ..workers import Worker, Workers, broker_url, paused_pid, wait_for  # noqa: F401  (broker_url: a fixture)

pytestmark = pytest.mark.django_db(transaction=True)

# --- workers ---------------------------------------------------------------------------------


@pytest.fixture
def worker(tmp_path, redis_url, broker_url):
    """``worker(pause_at=None, pause_file=None, env=None)`` starts a Celery worker with beat on
    the ``likes`` queue (``env``: more variables for it); every worker started is killed at
    teardown (before the database and Redis are emptied)."""
    workers = Workers(
        tmp_path, redis_url, broker_url, queue="likes", env={"LIKES_FLUSH_INTERVAL": "0.2", "LIKES_RECLAIM_IDLE": "1"}
    )

    def start(*, pause_at: str | None = None, pause_file: Path | None = None, env: dict | None = None) -> Worker:
        program = None if pause_file is None else ["tests.likes.paused_worker", str(pause_file), pause_at or "inside"]
        return workers.start(program=program, env=env)

    yield start
    workers.close()


# --- what the database and the stream hold ------------------------------------------------


def stored(comment) -> tuple[int, set[int]]:
    count = Comment.objects.get(pk=comment.pk).like_count
    likers = set(Like.objects.filter(comment_id=comment.pk, active=True).values_list("user_id", flat=True))
    return count, likers


def rows_of(comment) -> list[tuple[int, bool]]:
    """Every like row of the comment, active or not: ``(user_id, active)``."""
    return sorted(Like.objects.filter(comment_id=comment.pk).values_list("user_id", "active"))


def stream_state(r: redis.Redis, comment) -> tuple[int | None, int]:
    """``(pending, length)`` of the comment's subject's event stream; pending None while the
    flush's consumer group does not exist."""
    stream = keys.events(comment.subject_id)
    try:
        pending = r.xpending(stream, keys.FLUSH_GROUP)["pending"]
    except redis.exceptions.ResponseError:
        pending = None
    return pending, r.xlen(stream)


def drained(r: redis.Redis, comment):
    return lambda: stream_state(r, comment) == (0, 0)


def age_pending(r: redis.Redis, comment, *, idle_ms: int) -> int:
    """Make the stream's pending entries look idle for ``idle_ms`` (as if that much time had
    passed since their consumer read them), leaving them with the same consumer; how many."""
    stream = keys.events(comment.subject_id)
    by_consumer: dict = {}
    for entry in r.xpending_range(stream, keys.FLUSH_GROUP, min="-", max="+", count=10_000):
        by_consumer.setdefault(entry["consumer"], []).append(entry["message_id"])
    for consumer, ids in by_consumer.items():
        r.xclaim(stream, keys.FLUSH_GROUP, consumer, 0, ids, idle=idle_ms, justid=True)
    return sum(len(ids) for ids in by_consumer.values())


def like_all(comment, users) -> None:
    """Like through the Redis road; the answers count up one by one."""
    for n, user in enumerate(users, start=1):
        assert like_set(comment_id=comment.pk, user=user, liked=True) == (n, True)


def stop_inside_a_flush(worker, tmp_path, r, comment, *, at: str) -> None:
    """Start a worker that pauses its flush ``at`` the point given, wait until it holds every
    queued entry there, then SIGKILL it; the pause file is gone afterwards."""
    pause = tmp_path / f"pause-{at}"
    pause.touch()
    try:
        a = worker(pause_at=at, pause_file=pause)
        pid = wait_for(f"worker A to pause its flush ({at})", lambda: paused_pid(pause), workers=[a])
        assert os.getpgid(pid) == a.pid, "the flush paused in a process that is not worker A's"
        pending, length = stream_state(r, comment)
        assert pending == length > 0, f"A paused holding {pending} of the {length} queued entries"
        a.kill()
    finally:
        pause.unlink(missing_ok=True)


# --- the tests -------------------------------------------------------------------------------


def test_a_worker_killed_inside_the_flush_transaction_loses_no_like(worker, raw_redis, tmp_path):
    comment = CommentFactory()
    users = [UserFactory() for _ in range(20)]
    like_all(comment, users)
    assert stream_state(raw_redis, comment)[1] == 20
    assert stored(comment) == (0, set())  # answered by Redis, not yet in the database

    stop_inside_a_flush(worker, tmp_path, raw_redis, comment, at="inside")

    # The transaction died with A: nothing of it was committed, not even the inactive rows.
    assert stored(comment) == (0, set())
    assert rows_of(comment) == []
    assert stream_state(raw_redis, comment) == (20, 20)  # still pending, with the dead consumer

    b = worker()
    wait_for("like_count to reach 20 through worker B", lambda: stored(comment)[0] >= 20, workers=[b])
    wait_for("worker B to acknowledge and delete every entry", drained(raw_redis, comment), workers=[b])

    assert stored(comment) == (20, {u.pk for u in users})
    assert rows_of(comment) == sorted((u.pk, True) for u in users)  # each user once
    assert stream_state(raw_redis, comment) == (0, 0)


def test_a_worker_killed_after_commit_before_acknowledging_counts_nothing_twice(worker, raw_redis, tmp_path):
    comment = CommentFactory()
    users = [UserFactory() for _ in range(20)]
    like_all(comment, users)
    assert stored(comment) == (0, set())

    stop_inside_a_flush(worker, tmp_path, raw_redis, comment, at="committed")

    # A committed, then died before acknowledging: the likes are in, the entries still pending.
    assert stored(comment) == (20, {u.pk for u in users})
    assert stream_state(raw_redis, comment) == (20, 20)

    b = worker()
    wait_for("worker B to re-apply and acknowledge the reclaimed entries", drained(raw_redis, comment), workers=[b])
    assert stored(comment) == (20, {u.pk for u in users})
    assert rows_of(comment) == sorted((u.pk, True) for u in users)

    # B goes on flushing new actions on top, exactly.
    leavers, newcomer = users[:3], UserFactory()
    for n, user in enumerate(leavers, start=1):
        assert like_set(comment_id=comment.pk, user=user, liked=False) == (20 - n, False)
    assert like_set(comment_id=comment.pk, user=newcomer, liked=True) == (18, True)
    assert like_set(comment_id=comment.pk, user=users[5], liked=True) == (18, True)  # a repeat changes nothing
    wait_for("worker B to flush the new actions", drained(raw_redis, comment), workers=[b])

    expected = {u.pk for u in users[3:]} | {newcomer.pk}
    assert stored(comment) == (18, expected)
    assert rows_of(comment) == sorted([(u.pk, False) for u in leavers] + [(pk, True) for pk in expected])


def test_an_entry_reclaimed_after_a_newer_action_was_flushed_changes_nothing(worker, raw_redis, tmp_path):
    comment = CommentFactory()
    users = [UserFactory() for _ in range(8)]
    like_all(comment, users)
    stop_inside_a_flush(worker, tmp_path, raw_redis, comment, at="committed")
    assert stored(comment) == (8, {u.pk for u in users})
    leaver = users[0]
    assert like_set(comment_id=comment.pk, user=leaver, liked=False) == (7, False)

    # B takes over dead consumers' entries only after 30 s: it flushes the unlike first.
    b = worker(env={"LIKES_RECLAIM_IDLE": "30"})
    wait_for("worker B to flush the unlike", lambda: stored(comment)[0] <= 7, workers=[b])
    # ... and to acknowledge it, leaving A's entries pending, untouched.
    wait_for("worker B to acknowledge the unlike", lambda: stream_state(raw_redis, comment) == (8, 8), workers=[b])
    assert stored(comment) == (7, {u.pk for u in users[1:]})

    # Then A's entries age past B's reclaim time; B replays them, the leaver's older like too.
    assert age_pending(raw_redis, comment, idle_ms=60_000) == 8
    wait_for("worker B to replay and acknowledge A's entries", drained(raw_redis, comment), workers=[b])

    assert stored(comment) == (7, {u.pk for u in users[1:]})
    assert rows_of(comment) == sorted([(leaver.pk, False)] + [(u.pk, True) for u in users[1:]])


_FLUSH_SUCCEEDED = re.compile(r"Task likes\.flush\[[0-9a-f-]+\] succeeded")


def test_a_running_worker_with_beat_flushes_likes_within_seconds(worker, raw_redis):
    comment = CommentFactory()
    users = [UserFactory() for _ in range(5)]
    w = worker()
    # Running means: beat has sent a flush and the worker has run it.
    wait_for(
        "the worker's first flush from beat",
        lambda: _FLUSH_SUCCEEDED.search(w.log_path.read_text(errors="replace")),
        workers=[w],
    )

    like_all(comment, users)
    liked_at = time.monotonic()
    wait_for("the likes to reach the database", lambda: stored(comment)[0] >= 5, workers=[w], timeout=5.0)
    assert time.monotonic() - liked_at < 5.0

    assert stored(comment) == (5, {u.pk for u in users})
    assert rows_of(comment) == sorted((u.pk, True) for u in users)


def _sessions_opened() -> int:
    """Connections ever opened to the test database (PostgreSQL's count)."""
    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_stat_clear_snapshot()")
        cursor.execute("SELECT sessions FROM pg_stat_database WHERE datname = current_database()")
        return cursor.fetchone()[0]


def test_a_worker_keeps_its_database_connection_from_one_flush_to_the_next(worker, raw_redis):
    """Celery's Django fixup closes the connections around every task; a worker that obeyed it
    connected to PostgreSQL anew for each flush, every beat tick (config/celery.py)."""
    if connection.vendor != "postgresql":
        pytest.skip("PostgreSQL counts the sessions opened")
    comment = CommentFactory()
    users = iter([UserFactory() for _ in range(5)])
    w = worker()
    like_set(comment_id=comment.pk, user=next(users), liked=True)
    wait_for("the first flush", lambda: stored(comment)[0] == 1, workers=[w])
    opened = _sessions_opened()

    for expected in range(2, 6):  # four more flushes that write, and the empty ones between
        like_set(comment_id=comment.pk, user=next(users), liked=True)
        wait_for(f"like_count to reach {expected}", lambda n=expected: stored(comment)[0] == n, workers=[w])
    time.sleep(1.0)  # five more beat ticks (LIKES_FLUSH_INTERVAL 0.2)

    # One for a connection that ends (CONN_MAX_AGE, a failed health check), one for the stats'
    # own delay; a connection per task opened one at every beat tick (nine here).
    assert _sessions_opened() - opened <= 2

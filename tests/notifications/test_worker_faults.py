"""Notifications through real Celery workers with beat (``tests/workers.py``, queue
``notifications``): events handed on within seconds of a post, and a worker killed in the middle
of a batch, after some of its events' notifications were committed and before the batch was
acknowledged. The next worker takes the batch over and writes what is missing, nothing twice."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from notifications.jobs import EVENTS_STREAM
from notifications.models import Notification
from notifications.services import subscription_set

from ..factories import CommentFactory, UserFactory
from ..workers import Workers, broker_url, wait_for  # noqa: F401  (broker_url: a fixture)
from .conftest import paused_then_killed

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def worker(tmp_path, redis_url, broker_url):
    """``worker(pause_at=None, env=None)`` starts a worker with beat on ``notifications``
    (``pause_at``: a point of ``tests/notifications/paused_worker.py``); all are killed at
    teardown."""
    workers = Workers(
        tmp_path,
        redis_url,
        broker_url,
        queue="notifications",
        env={"NOTIFICATIONS_EVENTS_INTERVAL": "0.2", "NOTIFICATIONS_EVENTS_RECLAIM": "1"},
    )

    def start(*, pause_at: str | None = None, pause_file: Path | None = None, env: dict | None = None):
        program = None if pause_at is None else ["tests.notifications.paused_worker", str(pause_file), pause_at]
        return workers.start(program=program, env=env)

    yield start
    workers.close()


def stream_state(r) -> tuple[int | None, int]:
    """``(read and not acknowledged, length)`` of the events stream."""
    try:
        pending = r.xpending(EVENTS_STREAM, "flush")["pending"]
    except Exception:  # noqa: BLE001 - no group yet
        pending = None
    return pending, r.xlen(EVENTS_STREAM)


def rows(comment_ids) -> list[tuple[int, int]]:
    return sorted(Notification.objects.filter(comment_id__in=comment_ids).values_list("recipient_id", "comment_id"))


_DRAINED = re.compile(r"Task notifications\.drain_events\[[0-9a-f-]+\] succeeded")


def test_a_running_worker_with_beat_hands_a_reply_on_within_seconds(worker, raw_redis):
    parent = CommentFactory()
    w = worker()
    wait_for(
        "the worker's first drain from beat",
        lambda: _DRAINED.search(w.log_path.read_text(errors="replace")),
        workers=[w],
    )
    reply = CommentFactory(subject=parent.subject, reply_to=parent)
    wait_for(
        "the reply's notification",
        lambda: Notification.objects.filter(comment_id=reply.pk).exists(),
        workers=[w],
        timeout=5.0,
    )
    assert rows([reply.pk]) == [(parent.author_id, reply.pk)]
    wait_for("the stream to be acknowledged and emptied", lambda: stream_state(raw_redis) == (0, 0), workers=[w])


def test_a_worker_killed_in_the_middle_of_a_batch_leaves_it_to_the_next_which_writes_nothing_twice(
    worker, raw_redis, tmp_path, subject
):
    followers = [UserFactory() for _ in range(5)]
    for follower in followers:
        subscription_set(user=follower, subject_id=subject.pk, state="subscribed")
    comments = [CommentFactory(subject=subject, body=f"top {n}") for n in range(4)]
    ids = [c.pk for c in comments]
    assert raw_redis.xlen(EVENTS_STREAM) == 4

    with paused_then_killed(worker, tmp_path, "fanout:2", "worker A to pause after its second comment"):
        # Two comments' notifications are committed; the batch of four is read, not acknowledged.
        assert rows(ids) == sorted((f.pk, c) for f in followers for c in ids[:2])
        assert stream_state(raw_redis) == (4, 4)

    b = worker()
    wait_for(
        "worker B to take the batch over and acknowledge it", lambda: stream_state(raw_redis) == (0, 0), workers=[b]
    )
    assert rows(ids) == sorted((f.pk, c) for f in followers for c in ids)  # each once

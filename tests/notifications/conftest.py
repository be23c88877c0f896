"""Fixtures of the notifications suite.

Events reach the fan-out through the Redis stream when the suite has a Redis of live state
(``settle()`` drains it, as the beat task does), else through a task per event (eager in tests:
nothing waits). ``road`` runs a test on each road, whatever the suite's mode."""

from __future__ import annotations

import os
from contextlib import contextmanager

import pytest

from comments import services as comment_services
from notifications.models import Notification

from ..conftest import empty_stream
from ..factories import CommentFactory, UserFactory


@pytest.fixture(autouse=True)
def _no_events_of_other_tests(settings):
    from notifications.jobs import EVENTS_STREAM

    empty_stream(settings, EVENTS_STREAM)


def settle() -> None:
    """Hand on every event waiting in the stream (none waits on the task road)."""
    from notifications import jobs

    jobs.events_drain()


def told(user) -> list[tuple[str, int | None]]:
    """``(kind, comment id)`` of every notification of ``user``, oldest first."""
    return list(Notification.objects.filter(recipient=user).order_by("id").values_list("kind", "comment_id"))


def post(subject, author, body="A comment", **kwargs):
    comment = CommentFactory(subject=subject, author=author, body=body, **kwargs)
    settle()
    return comment


def befriend(a, b) -> None:
    comment_services.follow_set(follower=a, followee_id=b.pk, following=True)
    comment_services.follow_set(follower=b, followee_id=a.pk, following=True)


@pytest.fixture
def alice(db):
    return UserFactory(username="alice", email="alice@example.com")


@pytest.fixture
def bob(db):
    return UserFactory(username="bob", email="bob@example.com")


@pytest.fixture
def carol(db):
    return UserFactory(username="carol", email="carol@example.com")


@contextmanager
def paused_then_killed(start, tmp_path, point: str, what: str):
    """A worker started by ``start(pause_at=, pause_file=)`` that stops at ``point`` of
    ``paused_worker.py``; the block checks what it left there, then the worker is SIGKILLed."""
    from ..workers import paused_pid, wait_for

    pause = tmp_path / f"pause-{point.replace(':', '-')}"
    pause.touch()
    try:
        worker = start(pause_at=point, pause_file=pause)
        pid = wait_for(what, lambda: paused_pid(pause), workers=[worker])
        assert os.getpgid(pid) == worker.pid
        yield worker
        worker.kill()
    finally:
        pause.unlink(missing_ok=True)

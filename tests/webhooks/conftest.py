"""Fixtures of the webhooks suite: a real receiver on loopback, endpoints pointing at it, and
``road``: events through the Redis stream (drained as the beat task does) or a task per event
(eager in tests)."""

from __future__ import annotations

import pytest

from webhooks import services, tasks
from webhooks.models import EventType

from .receiver import Receiver

ALL_EVENTS = list(EventType.values)


@pytest.fixture
def receiver():
    r = Receiver()
    yield r
    r.close()


@pytest.fixture(autouse=True)
def _quick_timeout(settings):
    settings.WEBHOOKS_TIMEOUT = 1.0


@pytest.fixture(autouse=True)
def _no_events_of_other_tests(settings):
    from likes import live
    from webhooks.jobs import EVENTS_STREAM

    if settings.LIKES_REDIS_URL and live.client() is not None:
        live.client().delete(EVENTS_STREAM)


@pytest.fixture(params=["stream", "task"])
def road(request):
    request.getfixturevalue("redis_url" if request.param == "stream" else "no_redis")
    return request.param


def settle() -> None:
    """Hand on the events waiting in the stream and attempt their deliveries (on the task road
    they were attempted already, eagerly, after the commit)."""
    tasks.drain_events()


def endpoint_at(receiver, site, path: str, *answers, events=None):
    endpoint = services.endpoint_create(site=site, url=receiver.url(path), events=events or ALL_EVENTS)
    receiver.expect(path, endpoint.secret, *answers)
    return endpoint

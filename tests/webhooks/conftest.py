"""Fixtures of the webhooks suite: a real receiver on loopback, endpoints pointing at it, and
``road``: events through the Redis stream (drained as the beat task does) or a task per event
(eager in tests)."""

from __future__ import annotations

import pytest

from webhooks import services, tasks
from webhooks.models import EventType

from ..conftest import empty_stream
from .receiver import Receiver

ALL_EVENTS = list(EventType.values)


@pytest.fixture
def receiver(settings):
    """A receiver on loopback. Deliveries reach it only with private addresses allowed, as in
    development (``WEBHOOKS_DELIVER_PRIVATE``); the tests of the refusal turn that off again."""
    settings.WEBHOOKS_DELIVER_PRIVATE = True
    r = Receiver()
    yield r
    r.close()


@pytest.fixture(autouse=True)
def _quick_timeout(settings):
    settings.WEBHOOKS_TIMEOUT = 1.0


@pytest.fixture(autouse=True)
def _no_events_of_other_tests(settings):
    from webhooks.jobs import EVENTS_STREAM

    empty_stream(settings, EVENTS_STREAM)


def settle() -> None:
    """Hand on the events waiting in the stream and attempt their deliveries (on the task road
    they were attempted already, eagerly, after the commit)."""
    tasks.drain_events()


def endpoint_at(receiver, site, path: str, *answers, events=None, host: str = "127.0.0.1"):
    endpoint = services.endpoint_create(site=site, url=receiver.url(path, host), events=events or ALL_EVENTS)
    receiver.expect(path, endpoint.secret, *answers)
    return endpoint

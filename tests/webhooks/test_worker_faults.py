"""Webhooks through real Celery workers with beat (``tests/workers.py``, queue ``webhooks``): a
post is delivered, signed, within seconds; a worker killed while its request hangs leaves the
delivery claimed, and once the claim lapses the next worker delivers it: the same message
(``webhook-id``) again, the receiver's to drop, and the delivery written once."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.utils import timezone

from webhooks.models import Delivery, DeliveryState

from ..factories import CommentFactory
from ..workers import Workers, broker_url, wait_for  # noqa: F401  (broker_url: a fixture)
from .conftest import endpoint_at
from .receiver import HANG

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def worker(tmp_path, redis_url, broker_url):
    workers = Workers(
        tmp_path,
        redis_url,
        broker_url,
        queue="webhooks",
        env={
            "WEBHOOKS_EVENTS_INTERVAL": "0.2",
            "WEBHOOKS_EVENTS_RECLAIM": "1",
            "WEBHOOKS_RETRY_INTERVAL": "0.5",
            "WEBHOOKS_TIMEOUT": "2",
            "WEBHOOKS_DELIVER_PRIVATE": "1",  # the receiver is on loopback
        },
    )
    yield workers.start
    workers.close()


def test_a_running_worker_with_beat_delivers_a_post_within_seconds(worker, receiver, subject):
    endpoint_at(receiver, subject.site, "/hook")
    w = worker()
    comment = CommentFactory(subject=subject)
    wait_for("the delivery", lambda: receiver.at("/hook"), workers=[w], timeout=20.0)
    [got] = receiver.at("/hook")
    assert got.verified and f'"id":{comment.pk},' in got.body.decode()
    wait_for(
        "the outcome written", lambda: Delivery.objects.filter(state=DeliveryState.DELIVERED).exists(), workers=[w]
    )


def test_a_worker_killed_mid_request_leaves_the_delivery_to_the_next_once_its_claim_lapses(worker, receiver, subject):
    endpoint_at(receiver, subject.site, "/hook", HANG)
    a = worker(env={"WEBHOOKS_TIMEOUT": "30"})  # still waiting on the receiver when killed
    CommentFactory(subject=subject)
    wait_for("worker A's request", lambda: receiver.at("/hook"), workers=[a])
    a.kill()
    delivery = Delivery.objects.get()
    assert (delivery.state, delivery.attempts) == (DeliveryState.PENDING, 0)  # claimed, no outcome
    assert delivery.next_attempt_at > timezone.now() + timedelta(seconds=50)  # the claim: 2 x 30 + 5 s

    # Worker B (timeout 2 s): the claim A took lapses 2 x 30 + 5 s after it was taken; B's retry
    # beat then sends the delivery again, and the receiver, answering now, takes it.
    Delivery.objects.filter(pk=delivery.pk).update(
        next_attempt_at=timezone.now() - timedelta(seconds=1)
    )  # as if 65 s had passed
    b = worker()
    wait_for("worker B's delivery", lambda: Delivery.objects.filter(state=DeliveryState.DELIVERED).first(), workers=[b])
    delivery.refresh_from_db()
    assert (delivery.attempts, delivery.response_code) == (1, 200)
    first, second = receiver.at("/hook")
    assert first.headers["webhook-id"] == second.headers["webhook-id"] and first.body == second.body
    assert second.verified and second.answered == 200

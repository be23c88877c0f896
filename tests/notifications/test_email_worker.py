"""The email sender in real Celery workers with beat (``tests/workers.py``, queue
``notifications``) and a real SMTP server: queued emails go out within seconds, and a worker
killed in the middle of a batch it claimed leaves the rest to the next one once its claim has
expired: every reader gets their email, nobody twice."""

from __future__ import annotations

from collections import Counter

import pytest

from notifications.models import EmailState, Notification
from notifications.services import subscription_set

from ..factories import UserFactory
from ..smtp_server import smtp_server  # noqa: F401  (fixture)
from ..workers import Workers, broker_url, wait_for  # noqa: F401  (broker_url: a fixture)
from .conftest import paused_then_killed, post

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def worker(tmp_path, redis_url, broker_url, smtp_server):
    workers = Workers(
        tmp_path,
        redis_url,
        broker_url,
        queue="notifications",
        env={
            "EMAIL_URL": smtp_server.url,
            "NOTIFICATIONS_EMAIL_INTERVAL": "0.2",
            "NOTIFICATIONS_EMAIL_CLAIM": "2",
            "NOTIFICATIONS_EVENTS_INTERVAL": "0.2",
        },
    )

    def start(*, pause_at: str | None = None, pause_file=None):
        program = None if pause_at is None else ["tests.notifications.paused_worker", str(pause_file), pause_at]
        return workers.start(program=program)

    yield start
    workers.close()


def emails(comment) -> Counter:
    return Counter(Notification.objects.filter(comment_id=comment.pk).values_list("email", flat=True))


def test_a_worker_with_beat_emails_a_reply_within_seconds(worker, smtp_server, subject, alice, bob):
    parent = post(subject, alice)
    w = worker()
    reply = post(subject, bob, "a reply by email", reply_to=parent)
    (message,) = smtp_server.wait_for(1)
    assert message["To"] == "alice@example.com"
    wait_for("the email to be marked sent", lambda: emails(reply) == Counter({EmailState.SENT: 1}), workers=[w])


def test_a_sender_killed_mid_batch_leaves_the_rest_to_the_next_and_nobody_gets_two(
    worker, smtp_server, tmp_path, subject, bob
):
    readers = [UserFactory(email=f"reader{n}@example.com") for n in range(5)]
    for reader in readers:
        subscription_set(user=reader, subject_id=subject.pk, state="subscribed")
    top = post(subject, bob, "news for five")
    assert emails(top) == Counter({EmailState.QUEUED: 5})

    with paused_then_killed(worker, tmp_path, "send:2", "worker A to pause after its second email"):
        assert emails(top) == Counter({EmailState.SENT: 2, EmailState.SENDING: 3})  # the rest is A's claim
    assert len(smtp_server.messages) == 2

    b = worker()
    wait_for(
        "worker B to take the expired claim over", lambda: emails(top) == Counter({EmailState.SENT: 5}), workers=[b]
    )
    received = Counter(rcpt for (rcpt,) in smtp_server.recipients())
    assert received == Counter({r.email: 1 for r in readers})

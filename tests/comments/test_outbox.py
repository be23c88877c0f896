"""Issue 33, F6: with the Redis of like state and the broker down, posts were answered 500 though
they were stored (clients retried and duplicated them), and their second check and events were
never queued. The service under gunicorn, its like state and broker on a Redis of the test's
own that the test stops: a post is 201 and stored once, what it hands on is kept in the
database, and a Celery worker started once Redis is back does it."""

from __future__ import annotations

import json
import os

import pytest

from comments.models import Comment, DeferredTask
from comments.services import comment_create, token_issue
from notifications.models import Notification

from ..factories import SubjectFactory, UserFactory
from ..servers import Service, wait_until
from ..workers import Workers, test_database_url
from .test_availability import RedisServer

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def own_redis():
    server = RedisServer()
    server.start()
    yield server
    server.stop()


def test_a_post_with_redis_and_the_broker_down_is_stored_once_and_its_hand_offs_wait(own_redis, redis_url, tmp_path):
    live_state = f"redis://127.0.0.1:{own_redis.port}/0"
    broker = f"redis://127.0.0.1:{own_redis.port}/1"
    env = {
        **os.environ,
        "DJANGO_SETTINGS_MODULE": "config.settings",
        "DATABASE_URL": test_database_url(),
        "REDIS_URL": redis_url,  # the cache stays up: this is the like state's and broker's outage
        "LIKES_REDIS_URL": live_state,
        "CELERY_BROKER_URL": broker,
        "DJANGO_SECRET_KEY": os.environ.get("DJANGO_SECRET_KEY") or "outbox",
        "RATE_LIMITS": "off",
        "LIKES_REDIS_TIMEOUT": "0.3",
    }
    subject = SubjectFactory()
    ada, bob = UserFactory(display_name="Ada"), UserFactory(display_name="Bob")
    first = comment_create(subject=subject, author=ada, body="Ada's first words.")
    bob_token, _ = token_issue(user=bob)
    service = Service(env)
    service.start()
    try:
        own_redis.stop()

        def reply():
            return service.request(
                "POST",
                f"/api/v1/subjects/{subject.pk}/comments",
                {"body": "Bob answers while Redis is down.", "reply_to_id": first.pk},
                token=bob_token,
                headers={"Idempotency-Key": "bob-reply-1"},
            )

        status, _, body = reply()
        assert status == 201, body[:500]
        reply_id = json.loads(body)["id"]
        # The client did not hear the answer and sends it again: the first answer, stored once.
        status, headers, again = reply()
        assert (status, again, headers.get("Idempotent-Replayed")) == (201, body, "true")
        assert Comment.objects.filter(reply_to=first).count() == 1
        kept = {row.task for row in DeferredTask.objects.all()}
        # The second check, and the notifications' and webhooks' events of the reply.
        assert {"moderation.recheck_comment", "notifications.handle_event", "webhooks.handle_event"} <= kept
        assert not Notification.objects.filter(recipient=ada).exists()
    finally:
        service.stop()

    own_redis.start()
    workers = Workers(tmp_path, live_state, broker, queue=None, env={"COMMENTS_DEFERRED_INTERVAL": "0.5"})
    try:
        workers.start()
        wait_until(lambda: not DeferredTask.objects.exists(), "the kept tasks were not queued once Redis was back")
        wait_until(
            lambda: Notification.objects.filter(recipient=ada, comment_id=reply_id).exists(),
            "the reply's notification did not come once Redis was back",
        )
    finally:
        workers.close()

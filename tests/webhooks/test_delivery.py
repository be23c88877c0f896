"""Webhooks delivered to a real receiver on loopback: signed as the contract says, off the
request's path, to the endpoints of the comment's site only; an endpoint that fails (500) and
one that times out are retried with backoff and get the event exactly once more when they
recover; a retried task or a replayed event posts nothing twice."""

from __future__ import annotations

import json
from datetime import timedelta

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from comments.queries import comment_ref_for_viewer
from comments.services import comment_edit
from moderation.actions import comment_moderate
from moderation.services import report_create
from webhooks import jobs, tasks
from webhooks.events import Event
from webhooks.models import Delivery, DeliveryState, EventType

from ..api.conftest import API
from ..factories import CommentFactory, SiteFactory, SubjectFactory, UserFactory
from .conftest import endpoint_at, settle
from .receiver import HANG

pytestmark = pytest.mark.django_db(transaction=True)


def bodies(received) -> list[dict]:
    return [json.loads(r.body) for r in received]


def test_a_post_is_delivered_signed_with_the_documented_body(road, receiver, subject, user):
    endpoint_at(receiver, subject.site, "/hook")
    comment = CommentFactory(subject=subject, author=user, body="Hello <b>world</b> & co")
    settle()
    [got] = receiver.at("/hook")
    assert got.verified and got.verified_by_library
    assert got.headers["content-type"] == "application/json"
    assert got.headers["webhook-id"].startswith("evt_")
    body = json.loads(got.body)
    assert body["type"] == "comment.created"
    assert body["timestamp"].endswith("Z")
    data = body["data"]
    assert data["site"] == subject.site.key
    assert data["subject"] == {
        "id": subject.pk,
        "key": subject.key,
        "title": subject.title,
        "url": subject.url or None,
        "state": "open",
    }
    shown = data["comment"]
    assert shown["id"] == comment.pk and shown["status"] == "published" and shown["body"] == "Hello <b>world</b> & co"
    assert "<b>" not in shown["html"] and "&amp;" in shown["html"]
    assert shown["author"] == {"id": user.pk, "name": user.public_name, "avatar": None}
    assert "liked" not in shown
    delivery = Delivery.objects.get()
    assert (delivery.state, delivery.attempts, delivery.response_code) == (DeliveryState.DELIVERED, 1, 200)
    assert delivery.event_id == got.headers["webhook-id"]
    assert len(delivery.response_excerpt) == 500  # bounded: the receiver answered 2,000 characters more


def test_the_request_only_queues_the_event(redis_url, receiver, subject, user, client_for):
    endpoint_at(receiver, subject.site, "/hook")
    with CaptureQueriesContext(connection) as ran:
        answer = client_for(user).post(f"{API}/subjects/{subject.pk}/comments", {"body": "hi"}, format="json")
    assert answer.status_code == 201
    assert not [q for q in ran.captured_queries if "webhooks_" in q["sql"]]
    assert receiver.at("/hook") == []  # nothing went out inside the request
    settle()
    assert len(receiver.at("/hook")) == 1


def test_every_kind_of_event_reaches_the_endpoints_that_want_it(road, receiver, subject, user, moderator):
    endpoint_at(receiver, subject.site, "/all")
    endpoint_at(receiver, subject.site, "/reports", events=["report.created"])
    comment = CommentFactory(subject=subject, author=user, body="first")
    comment_edit(comment=comment, editor=user, body="second")
    reader = UserFactory()
    report_create(
        comment=comment_ref_for_viewer(comment_id=comment.pk, user=reader), reporter=reader, reason="spam", detail="ads"
    )
    comment_moderate(comment_id=comment.pk, actor=moderator, action="shadow")
    settle()

    got = bodies(receiver.at("/all"))
    assert [b["type"] for b in got] == [
        "comment.created",
        "comment.updated",
        "report.created",
        "comment.status_changed",
    ]
    assert got[1]["data"]["comment"]["body"] == "second"
    report = got[2]["data"]["report"]
    assert (report["reason"], report["detail"], report["reporter"]["id"]) == ("spam", "ads", reader.pk)
    assert got[2]["data"]["comment"]["id"] == comment.pk
    changed = got[3]["data"]
    assert (changed["from_status"], changed["to_status"], changed["actor"]["id"]) == (
        "published",
        "shadow",
        moderator.pk,
    )
    assert changed["comment"]["status"] == "shadow"  # the true status, as a moderator sees it
    assert [b["type"] for b in bodies(receiver.at("/reports"))] == ["report.created"]
    assert all(r.verified and r.verified_by_library for r in receiver.received)


def test_a_repeated_report_is_not_an_event(road, receiver, subject, user):
    endpoint_at(receiver, subject.site, "/reports", events=["report.created"])
    comment = CommentFactory(subject=subject)
    for _ in range(2):
        report_create(comment=comment_ref_for_viewer(comment_id=comment.pk, user=user), reporter=user, reason="spam")
    settle()
    assert len(receiver.at("/reports")) == 1


def test_an_event_goes_only_to_the_endpoints_of_its_own_site(road, receiver, subject):
    other_site = SiteFactory()
    endpoint_at(receiver, subject.site, "/ours")
    endpoint_at(receiver, other_site, "/theirs")
    CommentFactory(subject=subject)
    settle()
    assert len(receiver.at("/ours")) == 1
    assert receiver.at("/theirs") == []
    CommentFactory(subject=SubjectFactory(site=other_site))
    settle()
    assert len(receiver.at("/ours")) == 1
    assert len(receiver.at("/theirs")) == 1


def test_a_paused_endpoint_gets_nothing(road, receiver, subject):
    endpoint = endpoint_at(receiver, subject.site, "/paused")
    endpoint.active = False
    endpoint.save()
    CommentFactory(subject=subject)
    settle()
    assert receiver.at("/paused") == [] and not Delivery.objects.exists()


def _due_now(*deliveries) -> None:
    """As if the time of their retry had come."""
    Delivery.objects.filter(pk__in=[d.pk for d in deliveries]).update(
        next_attempt_at=timezone.now() - timedelta(seconds=1)
    )


def test_failing_and_hanging_endpoints_are_retried_and_then_get_the_event_exactly_once(
    road, receiver, subject, settings
):
    settings.WEBHOOKS_TIMEOUT = 0.5
    failing = endpoint_at(receiver, subject.site, "/fails", 500)
    hanging = endpoint_at(receiver, subject.site, "/hangs", HANG)
    before = timezone.now()  # on the task road the first attempts are made inside the post
    CommentFactory(subject=subject)
    settle()

    failed = Delivery.objects.get(endpoint=failing)
    timed_out = Delivery.objects.get(endpoint=hanging)
    assert (failed.state, failed.attempts, failed.response_code, failed.error) == ("pending", 1, 500, "")
    assert failed.response_excerpt.startswith("answer 500")
    assert (timed_out.state, timed_out.attempts, timed_out.response_code, timed_out.error) == (
        "pending",
        1,
        None,
        "timeout",
    )
    for d in (failed, timed_out):  # the first retry: 15-30 s later (WEBHOOKS_RETRY_BASE 30, jittered)
        assert before + timedelta(seconds=15) <= d.next_attempt_at <= timezone.now() + timedelta(seconds=30)

    assert tasks.retry_due() == 0  # not due yet: nothing is sent
    assert len(receiver.at("/fails")) == 1 and len(receiver.at("/hangs")) == 1

    _due_now(failed, timed_out)
    assert tasks.retry_due() == 2
    for d in (failed, timed_out):
        d.refresh_from_db()
        assert (d.state, d.attempts, d.response_code, d.next_attempt_at) == ("delivered", 2, 200, None)
    # Run again, and the tasks of both again, as a broker redelivering them would: nothing more.
    assert tasks.retry_due() == 0
    tasks.deliver(failed.pk)
    tasks.deliver(timed_out.pk)
    for path in ("/fails", "/hangs"):
        attempts = receiver.at(path)
        assert [r.answered for r in attempts] == [500 if path == "/fails" else HANG, 200]
        assert all(r.verified for r in attempts)
        assert attempts[0].headers["webhook-id"] == attempts[1].headers["webhook-id"]  # the same message
        assert attempts[0].body == attempts[1].body


def test_a_retried_event_or_task_posts_nothing_twice(redis_url, receiver, subject):
    endpoint_at(receiver, subject.site, "/hook")
    comment = CommentFactory(subject=subject)
    event = Event.new(EventType.COMMENT_CREATED, comment.pk)
    jobs.event_enqueue(event)
    jobs.event_enqueue(event)  # the same event replayed
    settle()
    tasks.handle_event(event.text())  # and handed on once more as a task
    mine = Delivery.objects.filter(event_id=event.id)
    assert mine.count() == 1
    tasks.deliver(mine.get().pk)
    ids = [r.headers["webhook-id"] for r in receiver.at("/hook")]
    assert ids.count(event.id) == 1
    assert len(ids) == 2  # the post's own event, and this one


def test_retries_back_off_exponentially_with_jitter_for_a_day_then_fail(no_redis, receiver, subject, settings):
    from webhooks import services

    endpoint_at(receiver, subject.site, "/down", *([500] * 40))
    CommentFactory(subject=subject)  # its first attempt is made at once (eager, on the task road)
    delivery = Delivery.objects.get()
    assert delivery.attempts == 1
    gaps = [(delivery.next_attempt_at - delivery.last_attempt_at).total_seconds()]
    while delivery.state == DeliveryState.PENDING:
        assert delivery.attempts < 40
        previous = delivery.last_attempt_at
        services.delivery_attempt(delivery_id=delivery.pk, now=delivery.next_attempt_at)
        delivery.refresh_from_db()
        if delivery.next_attempt_at is not None:
            gaps.append((delivery.next_attempt_at - delivery.last_attempt_at).total_seconds())
        assert previous is None or delivery.last_attempt_at > previous
    assert delivery.state == DeliveryState.FAILED
    assert delivery.last_attempt_at - delivery.chain_started_at <= timedelta(days=1)
    assert delivery.last_attempt_at - delivery.chain_started_at > timedelta(hours=20)
    for n, gap in enumerate(gaps, start=1):
        ceiling = min(30 * 2 ** (n - 1), 7200)
        assert ceiling / 2 <= gap <= ceiling
    assert len(set(gaps)) == len(gaps)  # jittered
    assert len(receiver.at("/down")) == delivery.attempts


def test_where_no_site_has_an_endpoint_a_batch_of_events_costs_one_query(redis_url, subject):
    for _ in range(5):
        CommentFactory(subject=subject)
    with CaptureQueriesContext(connection) as ran:
        assert jobs.events_drain() == []
    assert len(ran.captured_queries) == 1
    assert jobs.events_drain() == []  # handled: acknowledged, not read again


def test_an_answer_of_any_bytes_is_kept_as_text_in_the_log(no_redis, receiver, subject):
    endpoint_at(receiver, subject.site, "/odd", (502, b"bad\x00gateway \xff\xfe" + "网关".encode()))
    CommentFactory(subject=subject)
    delivery = Delivery.objects.get()
    assert (delivery.state, delivery.response_code) == ("pending", 502)
    assert delivery.response_excerpt == "bad\ufffdgateway \ufffd\ufffd网关"


def test_a_signature_made_with_another_secret_or_over_another_body_does_not_verify():
    from webhooks import signing

    from .receiver import verify, verify_by_library

    secret, other = signing.secret_new(), signing.secret_new()
    body = b'{"type":"comment.created"}'
    headers = signing.headers(secret, "evt_1", int(timezone.now().timestamp()), body)
    assert verify(secret, headers, body) and verify_by_library(secret, headers, body)
    for check in (verify, verify_by_library):
        assert not check(other, headers, body)
        assert not check(secret, headers, body + b" ")
        assert not check(secret, {**headers, "webhook-id": "evt_2"}, body)
        assert not check(secret, {**headers, "webhook-timestamp": str(int(headers["webhook-timestamp"]) - 3600)}, body)

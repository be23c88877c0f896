"""Issue 33, F10: 149 replies sent 149 emails to one address in a minute. A reader already sent
``NOTIFICATIONS_EMAIL_HOURLY_LIMIT`` notification emails in the last hour has the rest moved to
their daily digest, counted from the database (what was sent in the last hour, and what other
senders hold claimed), so it holds across runs and senders. Read from a real SMTP server on
loopback."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.utils import timezone

from notifications import mail
from notifications.models import EmailState, Notification

from ..smtp_server import smtp_server  # noqa: F401  (fixture)
from .conftest import post

pytestmark = pytest.mark.django_db(transaction=True)


def email_states(user) -> list[str]:
    return list(Notification.objects.filter(recipient=user).order_by("id").values_list("email", flat=True))


def text_of(message) -> str:
    return next(part.get_content() for part in message.walk() if part.get_content_type() == "text/plain")


def test_replies_past_the_hourly_limit_wait_for_the_digest_which_brings_them(
    smtp_server, settings, subject, alice, bob
):
    settings.NOTIFICATIONS_EMAIL_HOURLY_LIMIT = 3
    parent = post(subject, alice, "Hello")
    for n in range(5):
        post(subject, bob, f"reply number {n}", reply_to=parent)

    assert mail.emails_send() == 3
    singles = smtp_server.wait_for(3)
    assert smtp_server.recipients() == [["alice@example.com"]] * 3
    assert [text_of(m).count("reply number") for m in singles] == [1, 1, 1]
    assert email_states(alice) == [EmailState.SENT] * 3 + [EmailState.DIGEST] * 2

    assert mail.digests_send() == 1
    digest = smtp_server.wait_for(4)[3]
    assert "2 notifications" in digest["Subject"]
    assert "reply number 3" in text_of(digest) and "reply number 4" in text_of(digest)
    assert email_states(alice) == [EmailState.SENT] * 5
    assert len(smtp_server.messages) == 4


def test_the_limit_counts_what_any_run_sent_in_the_last_hour(smtp_server, settings, subject, alice, bob):
    settings.NOTIFICATIONS_EMAIL_HOURLY_LIMIT = 2
    parent = post(subject, alice, "Hello")
    post(subject, bob, "first", reply_to=parent)
    post(subject, bob, "second", reply_to=parent)
    assert mail.emails_send() == 2

    post(subject, bob, "third", reply_to=parent)
    assert mail.emails_send() == 0  # a later run, in the same hour
    assert email_states(alice)[-1] == EmailState.DIGEST

    Notification.objects.filter(recipient=alice, email=EmailState.SENT).update(
        emailed_at=timezone.now() - timedelta(minutes=61)
    )
    post(subject, bob, "fourth", reply_to=parent)
    assert mail.emails_send() == 1  # an hour on, mail goes again
    assert len(smtp_server.wait_for(3)) == 3


def test_emails_another_sender_holds_claimed_count_against_the_limit(smtp_server, settings, subject, alice, bob):
    settings.NOTIFICATIONS_EMAIL_HOURLY_LIMIT = 1
    parent = post(subject, alice, "Hello")
    post(subject, bob, "first", reply_to=parent)
    post(subject, bob, "second", reply_to=parent)
    first = Notification.objects.filter(recipient=alice).order_by("id").first()
    held, _ = mail._claim(Notification.objects.filter(pk=first.pk), batch=1)  # another sender, sending it now
    assert held == [first.pk]

    assert mail.emails_send() == 0
    assert email_states(alice) == [EmailState.SENDING, EmailState.DIGEST]
    assert smtp_server.messages == []


def test_other_readers_are_not_held_back_by_one_readers_limit(smtp_server, settings, subject, alice, bob, carol):
    settings.NOTIFICATIONS_EMAIL_HOURLY_LIMIT = 1
    parent_a, parent_c = post(subject, alice, "Hello"), post(subject, carol, "Hi")
    post(subject, bob, "to alice, once", reply_to=parent_a)
    post(subject, bob, "to alice, twice", reply_to=parent_a)
    post(subject, bob, "to carol", reply_to=parent_c)

    assert mail.emails_send() == 2
    smtp_server.wait_for(2)
    assert sorted(r[0] for r in smtp_server.recipients()) == ["alice@example.com", "carol@example.com"]
    assert email_states(alice) == [EmailState.SENT, EmailState.DIGEST]
    assert email_states(carol) == [EmailState.SENT]

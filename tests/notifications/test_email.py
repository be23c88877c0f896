"""Notification emails through a real SMTP server on loopback: the sender (claim, send, mark),
what it refuses to send, the daily digest, both languages, the one-click unsubscribe (RFC 8058)
read from the received message, and the moderators' review-queue notice."""

from __future__ import annotations

from datetime import timedelta
from urllib.parse import urlsplit

import pytest
from django.core import signing
from django.utils import timezone

from comments import services as comment_services
from comments.models import Status
from moderation import services as moderation_services
from notifications import fanout, mail, services
from notifications.models import EmailState, Kind, Notification, Preferences, Subscription
from notifications.unsubscribe import SALT

from ..factories import SubjectFactory, UserFactory
from ..smtp_server import smtp_server  # noqa: F401  (fixture)
from .conftest import post

pytestmark = pytest.mark.django_db(transaction=True)


def email_states(user) -> list[str]:
    return list(Notification.objects.filter(recipient=user).order_by("id").values_list("email", flat=True))


def parts(message) -> dict[str, str]:
    """``{content type: text}`` of a received message's parts."""
    return {part.get_content_type(): part.get_content() for part in message.walk() if not part.is_multipart()}


def unsubscribe_link(message) -> str:
    """The path and query of the https URL in a received message's ``List-Unsubscribe``."""
    url = message["List-Unsubscribe"].split(",")[0].strip().strip("<>")
    assert url.startswith("https://comments.example.com/")
    address = urlsplit(url)
    return f"{address.path}?{address.query}"


def one_click(client, message, **extra):
    """What a mail client does with RFC 8058's headers: POST ``List-Unsubscribe=One-Click`` to
    the https URL of ``List-Unsubscribe``."""
    assert message["List-Unsubscribe-Post"] == "List-Unsubscribe=One-Click"
    return client.post(
        unsubscribe_link(message),
        "List-Unsubscribe=One-Click",
        content_type="application/x-www-form-urlencoded",
        **extra,
    )


@pytest.fixture(autouse=True)
def _public_address(settings):
    settings.NOTIFICATIONS_BASE_URL = "https://comments.example.com"


# --- the sender ------------------------------------------------------------------------------


def test_a_reply_is_emailed_once_with_text_and_html_parts_and_one_click_unsubscribe(smtp_server, subject, alice, bob):
    parent = post(subject, alice)
    post(subject, bob, "I disagree <b>strongly</b>", reply_to=parent)
    assert email_states(alice) == [EmailState.QUEUED]

    assert mail.emails_send() == 1
    (message,) = smtp_server.wait_for(1)
    assert message["To"] == "alice@example.com"
    assert message["Subject"].strip().startswith("Bob replied to your comment on “")
    body = parts(message)
    assert set(body) == {"text/plain", "text/html"}
    assert "I disagree <b>strongly</b>" in body["text/plain"]
    assert "I disagree &lt;b&gt;strongly&lt;/b&gt;" in body["text/html"]  # the comment's text is escaped
    assert (
        message["List-Unsubscribe"].strip().startswith("<https://comments.example.com/notifications/unsubscribe?token=")
    )
    assert message["List-Unsubscribe-Post"] == "List-Unsubscribe=One-Click"
    assert email_states(alice) == [EmailState.SENT]

    assert mail.emails_send() == 0  # a retried sender sends nothing twice
    assert len(smtp_server.messages) == 1


def test_the_emails_link_opens_the_comment_on_its_page(smtp_server, site, alice, bob):
    subject = SubjectFactory(site=site, url="https://blog.example/cats")
    parent = post(subject, alice)
    reply = post(subject, bob, "Look here", reply_to=parent)
    assert mail.emails_send() == 1
    (message,) = smtp_server.wait_for(1)
    link = f"https://blog.example/cats#comment-{reply.pk}"
    body = parts(message)
    assert f"Open: {link}" in body["text/plain"]
    assert f'<a href="{link}">Open</a>' in body["text/html"]


def test_a_reader_of_simplified_chinese_gets_the_email_in_chinese(smtp_server, subject, alice, bob):
    services.preferences_update(user=alice, language="zh-hans")
    parent = post(subject, alice)
    post(subject, bob, "你好", reply_to=parent)
    mail.emails_send()
    (message,) = smtp_server.wait_for(1)
    assert "回复了你" in message["Subject"]
    assert "退订" not in message["Subject"]
    assert "不再接收此类邮件" in parts(message)["text/plain"]


@pytest.mark.parametrize("to_status", [Status.DELETED, Status.SHADOW, Status.PENDING])
def test_a_comment_no_longer_published_when_the_email_goes_is_not_emailed(smtp_server, subject, alice, bob, to_status):
    parent = post(subject, alice)
    reply = post(subject, bob, "soon gone", reply_to=parent)
    comment_services.comment_set_status(comment_id=reply.pk, to_status=to_status)
    assert mail.emails_send() == 0
    assert email_states(alice) == [EmailState.SKIPPED]
    assert smtp_server.messages == []


def test_nobody_is_emailed_about_their_own_comment_even_if_a_row_says_so(smtp_server, subject, alice):
    own = post(subject, alice)
    Notification.objects.create(
        recipient=alice,
        kind=Kind.MENTION,
        event=f"c{own.pk}",
        subject=subject,
        site=subject.site,
        comment=own,
        actor=alice,
        created_at=timezone.now(),
        email=EmailState.QUEUED,
    )
    assert mail.emails_send() == 0
    assert email_states(alice) == [EmailState.SKIPPED]


def test_what_is_queued_follows_a_preference_changed_since(smtp_server, subject, alice, bob, carol):
    parent_a, parent_c = post(subject, alice), post(subject, carol)
    post(subject, bob, "to alice", reply_to=parent_a)
    post(subject, bob, "to carol", reply_to=parent_c)
    services.preferences_update(user=alice, email={"reply": "never"})
    services.preferences_update(user=carol, email={"reply": "daily"})
    assert mail.emails_send() == 0
    assert (email_states(alice), email_states(carol)) == ([EmailState.SKIPPED], [EmailState.DIGEST])


def test_a_muted_subject_is_not_emailed_about(smtp_server, subject, alice, bob):
    parent = post(subject, alice)
    post(subject, bob, "hello", reply_to=parent)
    services.subscription_set(user=alice, subject_id=subject.pk, state="muted")
    assert mail.emails_send() == 0
    assert email_states(alice) == [EmailState.SKIPPED]


def test_a_live_claim_is_left_alone_and_an_expired_one_is_taken_over(smtp_server, subject, alice, bob):
    parent = post(subject, alice)
    post(subject, bob, "hello", reply_to=parent)
    ids, until = mail._claim(*mail._claimable(), batch=10)  # a sender that then dies
    assert len(ids) == 1
    assert mail.emails_send() == 0
    Notification.objects.filter(pk__in=ids).update(email_claimed_until=timezone.now() - timedelta(seconds=1))
    assert mail.emails_send() == 1
    assert len(smtp_server.wait_for(1)) == 1
    assert mail._mark(ids, until, EmailState.SENT) == 0  # the dead sender's late mark changes nothing


def test_a_mail_server_that_refuses_leaves_the_email_queued_for_the_next_run(smtp_server, subject, alice, bob):
    parent = post(subject, alice)
    post(subject, bob, "hello", reply_to=parent)
    smtp_server.refuse_next(1)
    assert mail.emails_send() == 0
    assert email_states(alice) == [EmailState.QUEUED]
    assert mail.emails_send() == 1
    assert len(smtp_server.wait_for(1)) == 1


def test_many_queued_emails_go_in_batches_each_once(smtp_server, subject, bob):
    readers = [UserFactory(email=f"r{n}@example.com") for n in range(7)]
    for reader in readers:
        services.subscription_set(user=reader, subject_id=subject.pk, state="subscribed")
    post(subject, bob, "news for everyone")
    assert mail.emails_send(batch=3) == 7
    assert sorted(r[0] for r in smtp_server.recipients()) == sorted(r.email for r in readers)


# --- the daily digest ------------------------------------------------------------------------


def test_a_daily_reader_gets_one_digest_of_everything_waiting(smtp_server, subject, alice, bob, carol):
    services.preferences_update(user=alice, email={"reply": "daily", "mention": "daily"})
    parent = post(subject, alice)
    post(subject, bob, "first answer", reply_to=parent)
    post(subject, carol, "hey @alice, second")
    assert mail.emails_send() == 0  # nothing goes on its own
    assert email_states(alice) == [EmailState.DIGEST, EmailState.DIGEST]

    assert mail.digests_send() == 1
    (message,) = smtp_server.wait_for(1)
    assert "2 notifications" in message["Subject"]
    text = parts(message)["text/plain"]
    assert "first answer" in text and "second" in text
    assert email_states(alice) == [EmailState.SENT, EmailState.SENT]
    assert mail.digests_send() == 0
    assert len(smtp_server.messages) == 1


def test_the_digests_unsubscribe_turns_off_the_kinds_it_holds(smtp_server, client, subject, alice, bob, carol):
    services.preferences_update(user=alice, email={"reply": "daily", "mention": "daily"})
    parent = post(subject, alice)
    post(subject, bob, "first answer", reply_to=parent)
    post(subject, carol, "hey @alice")
    mail.digests_send()
    (message,) = smtp_server.wait_for(1)
    assert one_click(client, message).status_code == 200
    preferences = Preferences.objects.get(pk=alice.pk)
    assert (preferences.email_reply, preferences.email_mention, preferences.email_subscription) == (
        "never",
        "never",
        "immediately",
    )


# --- one-click unsubscribe -------------------------------------------------------------------


def test_one_click_unsubscribe_from_the_received_message_turns_that_kind_off(smtp_server, client, subject, alice, bob):
    parent = post(subject, alice)
    post(subject, bob, "hello", reply_to=parent)
    mail.emails_send()
    (message,) = smtp_server.wait_for(1)

    response = one_click(client, message)
    assert response.status_code == 200
    assert response.json() == {"unsubscribed": {"kinds": ["reply"]}}
    assert Preferences.objects.get(pk=alice.pk).email_reply == "never"
    assert Preferences.objects.get(pk=alice.pk).email_mention == "immediately"  # only what it named
    assert one_click(client, message).status_code == 200  # again: no change, no error

    post(subject, bob, "and again", reply_to=parent)
    assert mail.emails_send() == 0


def test_a_followed_subjects_email_unsubscribes_from_that_thread_only(smtp_server, client, subject, alice, bob):
    other = SubjectFactory(site=subject.site)
    for s in (subject, other):
        services.subscription_set(user=alice, subject_id=s.pk, state="subscribed")
    post(subject, bob, "news here")
    mail.emails_send()
    (message,) = smtp_server.wait_for(1)
    assert one_click(client, message).json() == {"unsubscribed": {"subject": subject.pk}}
    states = dict(Subscription.objects.filter(user=alice).values_list("subject_id", "state"))
    assert states == {subject.pk: "muted", other.pk: "subscribed"}


def test_opening_the_link_only_shows_a_button_and_its_form_unsubscribes(smtp_server, client, subject, alice, bob):
    parent = post(subject, alice)
    post(subject, bob, "hello", reply_to=parent)
    mail.emails_send()
    (message,) = smtp_server.wait_for(1)
    link = unsubscribe_link(message)
    page = client.get(link, HTTP_ACCEPT="text/html")
    assert page.status_code == 200
    html = page.content.decode()
    assert '<form method="post">' in html and "<button" in html
    assert "<script" not in html and "style=" not in html
    assert (
        Preferences.objects.filter(pk=alice.pk, email_reply="never").exists() is False
    )  # a scanner's GET changes nothing

    done = client.post(link, {"List-Unsubscribe": "One-Click"}, HTTP_ACCEPT="text/html")
    assert done.status_code == 200
    assert "You are unsubscribed" in done.content.decode()
    assert Preferences.objects.get(pk=alice.pk).email_reply == "never"


def _token(scope: dict) -> str:
    return signing.dumps(scope, salt=SALT)


@pytest.mark.parametrize(
    "token",
    [
        "",
        "garbage",
        "eyJ1Ijo1LCJrIjpbInJlcGx5Il19:forged:signature",
        signing.dumps({"u": 1, "k": ["reply"]}, key="not-the-services-secret", salt=SALT),
        signing.dumps({"u": 1, "k": ["reply"]}, salt="another.purpose"),
    ],
)
@pytest.mark.parametrize("method", ["get", "post"])
def test_a_forged_or_tampered_token_is_refused_in_the_contracts_shape(client, alice, token, method):
    response = getattr(client, method)(
        "/notifications/unsubscribe", {"token": token} if method == "get" else None, QUERY_STRING=f"token={token}"
    )
    assert response.status_code == 400
    assert response.json()["error"]["code"] == "invalid"
    assert set(response.json()["error"]["fields"]) == {"token"}


def test_a_token_altered_to_name_another_reader_is_refused(client, alice, bob):
    token = _token({"u": alice.pk, "k": ["reply"]})
    payload, _, rest = token.partition(":")
    other = signing.b64_encode(f'{{"u":{bob.pk},"k":["reply"]}}'.encode()).decode()
    response = client.post(f"/notifications/unsubscribe?token={other}:{rest}")
    assert response.status_code == 400
    assert response.json()["error"]["code"] == "invalid"
    assert client.post(f"/notifications/unsubscribe?token={token}").status_code == 200
    assert Preferences.objects.filter(pk=bob.pk).exists() is False


def test_a_token_of_a_reader_gone_since_is_not_found(client):
    response = client.post(f"/notifications/unsubscribe?token={_token({'u': 987654, 'k': ['reply']})}")
    assert response.status_code == 404
    assert response.json()["error"]["code"] == "not_found"


# --- moderators ------------------------------------------------------------------------------


def test_moderators_are_emailed_once_a_period_when_the_review_queue_passes_the_threshold(
    smtp_server, settings, subject, moderator, alice
):
    moderator.email = "mod@example.com"
    moderator.save(update_fields=["email"])
    # The notice is for sites whose moderators are not emailed each held comment.
    services.site_moderator_email_update(site=subject.site, actor=moderator, held="off")
    settings.NOTIFICATIONS_QUEUE_THRESHOLD = 3
    held = [post(subject, alice, f"held {n}") for n in range(3)]
    moderation_services.review_task_open(comment_id=held[0].pk, reasons=["report:spam"])
    moderation_services.review_task_open(comment_id=held[1].pk, reasons=["report:spam"])
    assert fanout.review_queues_notify() == 0  # two wait: under the threshold
    moderation_services.review_task_open(comment_id=held[2].pk, reasons=["report:spam"])
    assert fanout.review_queues_notify() == 1
    assert fanout.review_queues_notify() == 0  # at most one per period
    assert (
        fanout.review_queues_notify(now=timezone.now() + timedelta(seconds=settings.NOTIFICATIONS_QUEUE_PERIOD + 1))
        == 1
    )

    assert mail.emails_send() == 2
    first = smtp_server.wait_for(2)[0]
    assert first["To"] == "mod@example.com"
    assert "3 comments wait for review" in first["Subject"]
    assert "https://comments.example.com/console/" in parts(first)["text/plain"]
    assert all(f"held {n}" in parts(first)["text/plain"] for n in range(3))  # what waits, quoted
    assert "held 0" in parts(first)["text/html"]
    assert Notification.objects.filter(recipient=alice, kind=Kind.QUEUE).exists() is False


def test_a_batch_costs_a_fixed_number_of_queries_and_one_mark_per_email(smtp_server, subject, bob):
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    def cost(readers: int) -> int:
        people = [UserFactory(email=f"q{readers}-{n}@example.com") for n in range(readers)]
        for person in people:
            services.subscription_set(user=person, subject_id=subject.pk, state="subscribed")
        post(subject, bob, f"news for {readers}")
        for person in people:
            services.subscription_set(user=person, subject_id=subject.pk, state="none")
        with CaptureQueriesContext(connection) as queries:
            assert mail.emails_send() == readers
        return len(queries)

    assert cost(8) - cost(2) == 6  # each email adds its mark, nothing else


def test_the_management_command_sends_what_is_queued_and_the_digests(smtp_server, subject, alice, bob, carol):
    from io import StringIO

    from django.core.management import call_command

    services.preferences_update(user=carol, email={"reply": "daily"})
    post(subject, bob, "to alice", reply_to=post(subject, alice))
    post(subject, bob, "to carol", reply_to=post(subject, carol))
    out = StringIO()
    call_command("notifications_send", "--digests", stdout=out)
    assert out.getvalue().splitlines() == ["sent 1 email(s)", "sent 1 digest(s)"]
    assert sorted(r[0] for r in smtp_server.recipients()) == ["alice@example.com", "carol@example.com"]

"""A held comment's email to its site's moderators, through a real SMTP server on loopback: the
mail a guest's held comment brings, its approve and reject links followed as a browser would
(GET the confirmation page, POST its CSRF-protected form), the digest past the site's number a
day, the site's choice and a moderator's opt-out, and the attacks on the links
(docs/security.md, "E-mail decision links")."""

from __future__ import annotations

import re
from datetime import timedelta
from html import unescape
from urllib.parse import urlsplit

import pytest
from django.core import signing
from django.db import connection
from django.test import Client
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from comments.models import Comment, Status
from comments.services import site_store
from moderation.actions import comment_moderate
from moderation.models import AuditEntry, ReviewTask, TaskState
from notifications import decision_links, fanout, mail, services
from notifications.models import EmailState, HeldEmail, Kind, Notification

from ..factories import UserFactory
from ..smtp_server import smtp_server  # noqa: F401  (fixture)
from .conftest import settle
from .test_email import one_click, parts

pytestmark = pytest.mark.django_db(transaction=True)

API = "/api/v1"
BASE = "https://comments.example.com"


@pytest.fixture(autouse=True)
def _public_address(settings):
    settings.NOTIFICATIONS_BASE_URL = BASE
    settings.ACCOUNTS_GUEST_FORM_MIN_SECONDS = 0


@pytest.fixture
def guests(site):
    """The site takes guests' comments and holds them for review (its default for guests)."""
    site.signin_guests = True
    site_store(site=site, fields=["signin_guests"])
    assert site.guest_moderation == "pre"
    return site


@pytest.fixture
def moderator(guests):
    mod = UserFactory(username="mod", display_name="Mo Derator", email="mod@example.com")
    guests.moderators.add(mod)
    return mod


def guest_posts(api, site, body="Nice post <b>really</b>", key="post-1") -> Comment:
    form = api.get(f"{API}/guest/form", {"site": site.key}).json()["token"]
    posted = api.post(
        f"{API}/guest/comments",
        {
            "site": site.key,
            "key": key,
            "url": "https://blog.example/1",
            "body": body,
            "name": "Ada",
            "form_token": form,
        },
        format="json",
    )
    assert posted.status_code == 201, posted.content
    settle()
    return Comment.objects.get(pk=posted.json()["comment"]["id"])


def link_in(message, label: str) -> str:
    """The path and query of the link after ``label:`` in the message's text part."""
    found = re.search(rf"^\s*{label}: (\S+)\s*$", parts(message)["text/plain"], re.MULTILINE)
    assert found, parts(message)["text/plain"]
    url = found.group(1)
    assert url.startswith(f"{BASE}/notifications/decide?token=")
    address = urlsplit(url)
    return f"{address.path}?{address.query}"


def browser() -> Client:
    return Client(enforce_csrf_checks=True)


def confirm(client: Client, link: str):
    """What a person does with the page the link opens: POST its form, CSRF token and all."""
    page = client.get(link)
    assert page.status_code == 200, page.content
    token = re.search(r'name="csrfmiddlewaretoken" value="([^"]+)"', page.content.decode())
    assert token, page.content
    return client.post(link, {"csrfmiddlewaretoken": token.group(1)})


def mailed_links(smtp_server, count: int = 1) -> tuple:
    assert mail.emails_send() == count
    message = smtp_server.wait_for(count)[-1]
    return message, link_in(message, "Approve"), link_in(message, "Reject")


# --- the email and its links, followed ---------------------------------------------------------


def test_a_held_guest_comment_is_emailed_and_its_approve_link_approves_it_after_confirmation(
    smtp_server, api, guests, moderator
):
    comment = guest_posts(api, guests)
    assert comment.status == Status.PENDING
    message, approve, _reject = mailed_links(smtp_server)
    assert message["To"] == "mod@example.com"
    assert "waits for your decision" in message["Subject"]
    assert message["List-Unsubscribe-Post"] == "List-Unsubscribe=One-Click"
    text, html = parts(message)["text/plain"], parts(message)["text/html"]
    assert "Ada" in text and "a guest's comment, which the site reviews first" in text
    assert "Nice post <b>really</b>" in text
    assert "Nice post &lt;b&gt;really&lt;/b&gt;" in html  # the comment's text is escaped
    task = ReviewTask.objects.get(comment_id=comment.pk, state=TaskState.OPEN)
    assert f"{BASE}/console/tasks/{task.pk}/" in text

    client = browser()
    page = client.get(approve)
    assert page.status_code == 200
    assert "Nice post &lt;b&gt;really&lt;/b&gt;" in page.content.decode()
    comment.refresh_from_db()
    assert comment.status == Status.PENDING  # looking decides nothing

    done = confirm(client, approve)
    assert done.status_code == 200
    assert "The comment is approved" in unescape(done.content.decode())
    comment.refresh_from_db()
    assert comment.status == Status.PUBLISHED
    entry = AuditEntry.objects.get(comment_id=comment.pk, action="approve")
    assert (entry.actor_id, entry.channel, entry.from_status, entry.to_status) == (
        moderator.pk,
        "email",
        Status.PENDING,
        Status.PUBLISHED,
    )
    assert ReviewTask.objects.get(pk=task.pk).decided_by_id == moderator.pk
    console = Client()
    console.force_login(moderator)
    assert "by e-mail link" in console.get(f"/console/log/?site={guests.key}").content.decode()

    again = client.get(approve)
    assert again.status_code == 409
    assert "Decided by Mo Derator (approve)" in unescape(again.content.decode())
    assert "csrfmiddlewaretoken" not in again.content.decode()


def test_the_reject_link_rejects_it_and_then_the_approve_link_says_it_was_decided(smtp_server, api, guests, moderator):
    comment = guest_posts(api, guests)
    _message, approve, reject = mailed_links(smtp_server)
    done = confirm(browser(), reject)
    assert done.status_code == 200
    assert "The comment is rejected" in done.content.decode()
    comment.refresh_from_db()
    assert comment.status == Status.REJECTED
    assert AuditEntry.objects.filter(comment_id=comment.pk, action="reject", actor=moderator, channel="email").exists()
    settle()  # the author hears the decision as from the console
    decision = Notification.objects.get(recipient_id=comment.author_id, kind=Kind.DECISION)
    assert decision.data == {"decision": "rejected"}

    late = browser().get(approve)
    assert late.status_code == 409
    assert "already decided" in late.content.decode()


def test_a_comment_decided_in_the_console_before_the_email_went_is_not_emailed(smtp_server, api, guests, moderator):
    comment = guest_posts(api, guests)
    comment_moderate(comment_id=comment.pk, actor=moderator, action="approve")
    assert mail.emails_send() == 0
    assert Notification.objects.get(recipient=moderator, kind=Kind.HELD).email == EmailState.SKIPPED


def test_a_comment_held_later_by_reports_is_emailed_too(smtp_server, settings, api, guests, moderator):
    from moderation import services as moderation_services

    from ..factories import CommentFactory, SubjectFactory

    author, readers = UserFactory(), [UserFactory() for _ in range(3)]
    comment = CommentFactory(subject=SubjectFactory(site=guests), author=author, body="spam spam")
    settle()
    from comments.queries import comment_ref_for_viewer

    for reader in readers:
        ref = comment_ref_for_viewer(comment_id=comment.pk, user=reader)
        moderation_services.report_create(comment=ref, reporter=reader, reason="spam")
    settle()
    message, approve, _ = mailed_links(smtp_server)
    assert "reported by readers (spam)" in parts(message)["text/plain"]
    assert confirm(browser(), approve).status_code == 200
    comment.refresh_from_db()
    assert comment.status == Status.PUBLISHED


# --- how much, to whom -------------------------------------------------------------------------


def test_past_the_sites_number_a_day_held_comments_go_to_the_daily_digest_with_their_links(
    smtp_server, api, guests, moderator
):
    services.site_moderator_email_update(site=guests, actor=moderator, held_per_day=1)
    first = guest_posts(api, guests, "alpha")
    second = guest_posts(api, guests, "beta", key="post-2")
    third = guest_posts(api, guests, "gamma", key="post-3")
    states = dict(Notification.objects.filter(recipient=moderator, kind=Kind.HELD).values_list("comment_id", "email"))
    assert states == {first.pk: EmailState.QUEUED, second.pk: EmailState.DIGEST, third.pk: EmailState.DIGEST}

    assert mail.emails_send() == 1
    assert mail.digests_send() == 1
    digest = smtp_server.wait_for(2)[1]
    text = parts(digest)["text/plain"]
    assert "beta" in text and "gamma" in text and "alpha" not in text
    assert text.count("Approve: ") == 2  # each comment with its own links, none mailed twice
    reject_second = link_in(digest, "Reject")
    assert confirm(browser(), reject_second).status_code == 200
    assert {c.pk: c.status for c in Comment.objects.filter(pk__in=[second.pk, third.pk])} == {
        second.pk: Status.REJECTED,
        third.pk: Status.PENDING,
    }


@pytest.mark.parametrize(
    ("choice", "expected"),
    [(HeldEmail.EACH, [EmailState.QUEUED] * 3), (HeldEmail.DIGEST, [EmailState.DIGEST] * 3), (HeldEmail.OFF, [])],
)
def test_the_sites_choice_decides_how_held_comments_are_emailed(api, settings, guests, moderator, choice, expected):
    settings.NOTIFICATIONS_HELD_PER_DAY = 1  # "each" ignores it
    services.site_moderator_email_update(site=guests, actor=moderator, held=choice)
    for n in range(3):
        guest_posts(api, guests, f"held {n}", key=f"post-{n}")
    assert list(Notification.objects.filter(recipient=moderator).order_by("id").values_list("email", flat=True)) == (
        expected
    )


def test_a_moderator_who_unsubscribed_is_not_emailed_while_another_still_is(
    smtp_server, client, api, guests, moderator
):
    other = UserFactory(username="other", email="other@example.com")
    guests.moderators.add(other)
    guest_posts(api, guests, "one")
    assert mail.emails_send() == 2
    mine = next(m for m in smtp_server.wait_for(2) if m["To"] == "mod@example.com")
    assert one_click(client, mine).status_code == 200

    guest_posts(api, guests, "two", key="post-2")
    assert mail.emails_send() == 1
    assert smtp_server.recipients()[-1] == ["other@example.com"]


def test_the_author_and_readers_are_not_told_and_the_widget_inbox_shows_nothing(api, guests, moderator, client_for):
    bystander = UserFactory(email="reader@example.com")
    comment = guest_posts(api, guests)
    assert set(Notification.objects.filter(comment_id=comment.pk).values_list("recipient_id", flat=True)) == {
        moderator.pk
    }
    assert bystander.pk not in set(Notification.objects.values_list("recipient_id", flat=True))
    assert client_for(moderator).get(f"{API}/notifications").json()["items"] == []


def test_the_review_queue_notice_is_left_to_sites_that_turned_held_comment_emails_off(settings, api, guests, moderator):
    settings.NOTIFICATIONS_QUEUE_THRESHOLD = 2
    for n in range(2):
        guest_posts(api, guests, f"held {n}", key=f"post-{n}")
    assert fanout.review_queues_notify() == 0  # each was emailed already
    services.site_moderator_email_update(site=guests, actor=moderator, held=HeldEmail.OFF)
    assert fanout.review_queues_notify() == 1


def test_the_fan_out_costs_the_same_queries_however_many_moderators(api, guests, moderator):
    def cost(moderators: int, n: int) -> int:
        extra = [UserFactory(email=f"m{n}-{i}@example.com") for i in range(moderators)]
        guests.moderators.add(*extra)
        comment = guest_posts(api, guests, f"held {n}", key=f"post-{n}")
        Notification.objects.filter(comment_id=comment.pk).delete()
        with CaptureQueriesContext(connection) as queries:
            assert fanout.held_notify(comment_id=comment.pk, hold=f"again-{n}") == moderators + 1
        guests.moderators.remove(*extra)
        return len(queries)

    assert cost(1, 1) == cost(8, 2) <= 4


# --- the attacks on the links (docs/security.md, "E-mail decision links") ----------------------


def held_link(comment: Comment, moderator, decision: str = "approve") -> decision_links.DecisionLink:
    task = ReviewTask.objects.get(comment_id=comment.pk, state=TaskState.OPEN)
    return decision_links.DecisionLink(
        moderator_id=moderator.pk, site_id=task.site_id, comment_id=comment.pk, task_id=task.pk, decision=decision
    )


def path_of(url: str) -> str:
    address = urlsplit(url)
    return f"{address.path}?{address.query}"


def still_held(comment: Comment) -> bool:
    comment.refresh_from_db()
    return comment.status == Status.PENDING


def test_a_forged_signature_is_refused(api, guests, moderator):
    comment = guest_posts(api, guests)
    token = decision_links.token_for(held_link(comment, moderator))
    task = ReviewTask.objects.get(comment_id=comment.pk)
    forged = signing.dumps(
        {"m": moderator.pk, "s": guests.pk, "c": comment.pk, "t": task.pk, "d": "approve"},
        key="a guess",
        salt=decision_links.SALT,
    )
    for bad in (forged, token[:-3] + "xyz", "", "x" * 600):
        response = browser().get(f"/notifications/decide?token={bad}")
        assert response.status_code == 400, bad
        assert "not valid" in response.content.decode()
    assert still_held(comment)


def test_a_token_altered_to_name_another_comment_is_refused(api, guests, moderator):
    mine = guest_posts(api, guests, "mine")
    other = guest_posts(api, guests, "other", key="post-2")
    token = decision_links.token_for(held_link(mine, moderator))
    _payload, _, rest = token.partition(":")
    task = ReviewTask.objects.get(comment_id=other.pk, state=TaskState.OPEN)
    altered = signing.b64_encode(
        f'{{"m":{moderator.pk},"s":{guests.pk},"c":{other.pk},"t":{task.pk},"d":"approve"}}'.encode()
    ).decode()
    assert browser().get(f"/notifications/decide?token={altered}:{rest}").status_code == 400
    assert still_held(other)


def test_a_link_for_a_task_of_another_comment_decides_nothing(api, guests, moderator):
    mine = guest_posts(api, guests, "mine")
    other = guest_posts(api, guests, "other", key="post-2")
    crossed = decision_links.DecisionLink(
        moderator_id=moderator.pk,
        site_id=guests.pk,
        comment_id=mine.pk,
        task_id=ReviewTask.objects.get(comment_id=other.pk).pk,
        decision="approve",
    )
    response = browser().get(path_of(decision_links.decision_url(crossed)))
    assert response.status_code == 404
    assert still_held(mine) and still_held(other)


def test_a_link_naming_another_site_is_refused(api, guests, moderator):
    from ..factories import SiteFactory

    elsewhere = SiteFactory()
    elsewhere.moderators.add(moderator)
    comment = guest_posts(api, guests)
    link = held_link(comment, moderator)
    moved = decision_links.DecisionLink(**{**link.__dict__, "site_id": elsewhere.pk})
    client = browser()
    assert client.get(path_of(decision_links.decision_url(moved))).status_code == 404
    assert still_held(comment)


def test_a_used_link_replayed_decides_nothing_more(smtp_server, api, guests, moderator):
    comment = guest_posts(api, guests)
    _message, approve, reject = mailed_links(smtp_server)
    client = browser()
    assert confirm(client, approve).status_code == 200
    page = client.get(approve)
    csrf = client.cookies["csrftoken"].value
    # The page offers no form any more; a replayed POST (with a good CSRF token) is refused too.
    assert client.post(approve, {"csrfmiddlewaretoken": csrf}).status_code == 409
    assert client.post(reject, {"csrfmiddlewaretoken": csrf}).status_code == 409
    assert page.status_code == 409
    comment.refresh_from_db()
    assert comment.status == Status.PUBLISHED
    assert AuditEntry.objects.filter(comment_id=comment.pk, channel="email").count() == 1


def test_an_expired_link_is_refused(settings, api, guests, moderator):
    comment = guest_posts(api, guests)
    url = decision_links.decision_url(held_link(comment, moderator))
    settings.NOTIFICATIONS_DECISION_LINK_DAYS = 0
    response = browser().get(path_of(url))
    assert response.status_code == 410
    assert "expired" in response.content.decode()
    assert still_held(comment)


def test_a_moderator_removed_since_the_email_cannot_decide(smtp_server, api, guests, moderator):
    comment = guest_posts(api, guests)
    _message, approve, _ = mailed_links(smtp_server)
    client = browser()
    page = client.get(approve)
    token = re.search(r'name="csrfmiddlewaretoken" value="([^"]+)"', page.content.decode()).group(1)
    guests.moderators.remove(moderator)
    refused = client.post(approve, {"csrfmiddlewaretoken": token})
    assert refused.status_code == 403
    assert "no longer moderate" in refused.content.decode()
    assert still_held(comment)


def test_getting_the_link_never_decides_and_a_post_without_the_csrf_token_is_refused(
    smtp_server, api, guests, moderator
):
    comment = guest_posts(api, guests)
    _message, approve, reject = mailed_links(smtp_server)
    for _ in range(3):  # a mail scanner fetching every link, more than once
        assert browser().get(approve).status_code == 200
        assert browser().get(reject).status_code == 200
        assert browser().head(approve).status_code == 405
    assert browser().post(approve).status_code == 403
    assert still_held(comment)
    assert not AuditEntry.objects.filter(comment_id=comment.pk, actor__isnull=False).exists()


def test_two_moderators_racing_leave_one_decision(smtp_server, api, guests, moderator):
    other = UserFactory(username="other", display_name="Otto", email="other@example.com")
    guests.moderators.add(other)
    comment = guest_posts(api, guests)
    assert mail.emails_send() == 2
    by = {m["To"]: m for m in smtp_server.wait_for(2)}
    assert confirm(browser(), link_in(by["other@example.com"], "Reject")).status_code == 200
    late = browser()
    page = late.get(link_in(by["mod@example.com"], "Approve"))
    assert page.status_code == 409
    assert "Decided by Otto (reject)" in unescape(page.content.decode())
    comment.refresh_from_db()
    assert comment.status == Status.REJECTED


def test_held_notify_writes_nothing_again_for_the_same_hold(api, guests, moderator):
    comment = guest_posts(api, guests)
    hold = Notification.objects.get(comment_id=comment.pk).event.split(":")[1]
    assert fanout.held_notify(comment_id=comment.pk, hold=hold) == 0
    assert fanout.held_notify(comment_id=comment.pk, hold=hold, now=timezone.now() + timedelta(days=2)) == 0


# --- the site's setting ------------------------------------------------------------------------


def test_a_sites_moderators_read_and_change_how_they_are_emailed_through_the_api(client_for, guests, moderator, user):
    url = f"{API}/sites/{guests.key}/moderator_emails"
    mine = client_for(moderator)
    assert mine.get(url).json() == {
        "site": guests.key,
        "held": "auto",
        "held_per_day": None,
        "default_held_per_day": 20,
    }
    changed = mine.patch(url, {"held": "digest", "held_per_day": 5}, format="json")
    assert changed.status_code == 200
    assert changed.json()["held"] == "digest" and changed.json()["held_per_day"] == 5
    assert mine.patch(url, {"held_per_day": None}, format="json").json()["held_per_day"] is None
    assert mine.get(url).json()["held"] == "digest"  # left out, left as it was

    for bad in ({"held": "sometimes"}, {"held_per_day": -1}, {"held_per_day": "5"}, {"held_per_day": True}, {"x": 1}):
        refused = mine.patch(url, bad, format="json")
        assert refused.status_code == 400, bad
    assert client_for(user).get(url).status_code == 403
    assert client_for(user).patch(url, {"held": "off"}, format="json").status_code == 403
    assert mine.get(f"{API}/sites/no-such-site/moderator_emails").status_code == 404
    assert mine.get(url).json()["held"] == "digest"


def test_a_moderator_reading_chinese_gets_the_email_and_the_page_in_chinese(smtp_server, api, guests, moderator):
    services.preferences_update(user=moderator, language="zh-hans")
    guest_posts(api, guests)
    assert mail.emails_send() == 1
    (message,) = smtp_server.wait_for(1)
    approve = link_in(message, "通过")
    assert "等待你的审核" in message["Subject"]
    assert "访客评论，站点会先审核" in parts(message)["text/plain"]
    assert "通过这条评论？" in browser().get(approve).content.decode()

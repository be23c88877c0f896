"""A small blog's owner hears about a held guest comment (issue 39, A5), in a real browser: the
email reaches the real SMTP server, the owner opens its Approve link, sees the comment and a
button on a page of the service (nothing decided by looking), clicks it, and the comment is
published and audited as theirs; the link a second time says it was decided."""

from __future__ import annotations

import re

import pytest
from playwright.sync_api import expect
from rest_framework.test import APIClient

from comments.models import Comment, Status
from comments.services import site_store
from moderation.models import AuditEntry
from notifications import mail
from tests.browser.conftest import assert_seen_by_a_person, click
from tests.factories import SiteFactory, UserFactory
from tests.notifications.conftest import settle
from tests.notifications.test_email import parts
from tests.smtp_server import smtp_server  # noqa: F401  (fixture)


@pytest.fixture
def blog(live_server, transactional_db, settings):
    settings.NOTIFICATIONS_BASE_URL = live_server.url
    settings.ACCOUNTS_GUEST_FORM_MIN_SECONDS = 0
    site = SiteFactory(key="blog", name="A small blog")
    site.signin_guests = True
    site_store(site=site, fields=["signin_guests"])
    owner = UserFactory(username="owner", display_name="Olive Owner", email="olive@example.com")
    site.moderators.add(owner)
    return site, owner


def a_guest_posts(site) -> Comment:
    api = APIClient()
    form = api.get("/api/v1/guest/form", {"site": site.key}).json()["token"]
    posted = api.post(
        "/api/v1/guest/comments",
        {"site": site.key, "key": "/first-post/", "body": "Lovely post, thank you!", "name": "Ada", "form_token": form},
        format="json",
    )
    assert posted.status_code == 201, posted.content
    settle()
    return Comment.objects.get(pk=posted.json()["comment"]["id"])


def test_the_owner_approves_a_held_comment_from_the_email(page, blog, smtp_server, shot):
    site, owner = blog
    comment = a_guest_posts(site)
    assert comment.status == Status.PENDING

    assert mail.emails_send() == 1
    (message,) = smtp_server.wait_for(1)
    assert message["To"] == "olive@example.com"
    (approve,) = re.findall(r"^\s*Approve: (\S+)\s*$", parts(message)["text/plain"], re.MULTILINE)

    page.goto(approve)
    assert_seen_by_a_person(page.get_by_role("heading", name="Approve this comment?"))
    assert_seen_by_a_person(page.get_by_text("Lovely post, thank you!"))
    shot(page, "confirmation")
    comment.refresh_from_db()
    assert comment.status == Status.PENDING  # opening the link decided nothing

    click(page.get_by_role("button", name="Approve"))
    assert_seen_by_a_person(page.get_by_role("heading", name="The comment is approved"))
    shot(page, "approved")
    comment.refresh_from_db()
    assert comment.status == Status.PUBLISHED
    entry = AuditEntry.objects.get(comment_id=comment.pk, action="approve")
    assert (entry.actor_id, entry.channel) == (owner.pk, "email")
    assert [p for p in page.problems if "favicon" not in p] == []  # no CSP refusal, no script error

    # The link a second time: a 409 page that says so, with nothing to click.
    page.goto(approve)
    assert_seen_by_a_person(page.get_by_role("heading", name="This comment was already decided"))
    expect(page.get_by_text("Decided by Olive Owner (approve).")).to_be_visible()
    expect(page.get_by_role("button", name="Approve")).to_have_count(0)

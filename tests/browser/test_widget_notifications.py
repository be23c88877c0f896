"""The widget's notifications for a signed-in reader, in a real browser: the unread badge, the
list it opens, "Mark read" and "Mark all read", all over the notifications API."""

from __future__ import annotations

import time

from playwright.sync_api import expect

from comments.models import Comment, User
from comments.sso import sign_payload
from notifications.models import Notification
from tests.browser.conftest import assert_seen_by_a_person, click, type_into
from tests.browser.test_signin import serve_static_page
from tests.browser.test_widget import host, no_problems, signed_in_as, wait_until, widget  # noqa: F401  (host: a fixture)
from tests.factories import CommentFactory, SubjectFactory, UserFactory
from tests.notifications.conftest import settle


def test_a_reader_who_gets_replies_sees_the_badge_opens_the_list_and_marks_them_read(host, page, shot):
    subject = SubjectFactory(site=host.site, key="article:notified", title="Notified")
    page.goto(host.url(subject.key, user="alice"))
    frame = widget(page)
    signed_in_as(frame, "Alice")
    toggle = frame.get_by_role("button", name="Notifications")
    assert_seen_by_a_person(toggle)
    expect(frame.locator("#cw-nt-badge")).to_be_hidden()  # nothing unread yet

    type_into(frame.locator("#cw-body"), "What do you all think?")
    click(frame.get_by_role("button", name="Post"))
    expect(frame.locator(".cw-c", has_text="What do you all think?")).to_be_visible()
    mine = Comment.objects.get(subject=subject)
    CommentFactory(subject=subject, author=UserFactory(display_name="Bob"), reply_to=mine, body="Bob thinks so too")
    CommentFactory(subject=subject, author=UserFactory(display_name="Cat"), reply_to=mine, body="Cat does not")
    settle()

    page.reload()
    frame = widget(page)
    signed_in_as(frame, "Alice")
    badge = frame.locator("#cw-nt-badge")
    assert_seen_by_a_person(badge)
    expect(badge).to_have_text("2")
    shot(page, "badge")

    click(frame.get_by_role("button", name="Notifications"))
    bob = frame.locator(".cw-nt-item", has_text="Bob replied to your comment")
    assert_seen_by_a_person(bob)
    expect(bob).to_contain_text("Bob thinks so too")
    assert_seen_by_a_person(frame.locator(".cw-nt-item", has_text="Cat replied to your comment"))
    shot(page, "list")

    click(bob.get_by_role("button", name="Mark read"))
    expect(badge).to_have_text("1")
    expect(bob.get_by_role("button", name="Mark read")).to_be_hidden()
    assert Notification.objects.filter(recipient=mine.author, read_at__isnull=True).count() == 1

    click(frame.get_by_role("button", name="Mark all read"))
    expect(badge).to_be_hidden()
    assert Notification.objects.filter(recipient=mine.author, read_at__isnull=True).count() == 0
    no_problems(page)


def test_a_reader_signed_in_before_the_notifications_script_ran_still_gets_the_badge(host, page):
    """The widget's scripts are deferred: a sign-in the service answers before notifications.js
    has run (a fast SSO, a slow script) must still reach it. The script is held until the SSO's
    answer is in, the order a loaded server or a slow network can give."""
    subject = SubjectFactory(site=host.site, key="article:slow-script", title="Slow script")
    held: list = []
    page.route("**/comments/notifications*.js", lambda route: held.append(route))
    signed_in: list = []
    page.on("response", lambda r: signed_in.append(r.status) if r.url.endswith("/api/v1/auth/sso") else None)

    page.goto(host.url(subject.key, user="alice"), wait_until="commit")  # "load" waits for the script
    wait_until(page, lambda: signed_in and held)
    assert signed_in == [200]
    held[0].continue_()

    frame = widget(page)
    signed_in_as(frame, "Alice")
    assert_seen_by_a_person(frame.get_by_role("button", name="Notifications"))
    no_problems(page)


def test_a_reader_signed_in_by_their_host_turns_emails_on_and_off_at_the_hosts_address(
    page, live_server, transactional_db, shot
):
    """Issue 39, A8: the address in the host's SSO payload is offered, never used unasked."""
    secret = "notifications-sso-secret"
    claims = {"id": "reader-9", "name": "Ada", "email": "ada@host.example", "exp": int(time.time()) + 600}
    url, server = serve_static_page(live_server, sso=sign_payload(secret, claims), sso_secret=secret)
    try:
        page.goto(url)
        frame = page.frame_locator("iframe")
        assert_seen_by_a_person(frame.locator("#cw-me"))
        click(frame.get_by_role("button", name="Notifications"))
        offer = frame.locator("#cw-nt-mail")
        assert_seen_by_a_person(offer)
        expect(offer).to_contain_text("Also by email, at ada@host.example?")
        assert User.objects.get(display_name="Ada").email == ""

        click(frame.get_by_role("button", name="Email me"))
        expect(offer).to_contain_text("Also emailed to ada@host.example.")
        shot(page, "emails-on")
        assert User.objects.get(display_name="Ada").email == "ada@host.example"

        click(frame.get_by_role("button", name="Stop emails"))
        expect(offer).to_contain_text("Also by email, at ada@host.example?")
        assert User.objects.get(display_name="Ada").email == ""
    finally:
        server.shutdown()
        server.server_close()

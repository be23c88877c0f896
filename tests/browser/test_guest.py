"""Guest comments in a real browser: a static page on another origin with only the two embed
tags, whose site takes guests. A reader with no account types a name and a comment into the
fields they see and clicks Post (the widget waits out the form's time-to-submit); the comment
shows as theirs, marked "Guest" and under review; a moderator approves it and everyone sees it,
marked; the browser that posted edits it (back under review: guests are pre-moderated) and
replies to it as the same guest, while another browser is offered no Edit, and a reader there
replies as a guest of their own. Where the browser lets the frame keep storage, the hold
outlives a reload. The "latest comments" sidebar marks a guest too."""

from __future__ import annotations

import json
from datetime import timedelta

import pytest
from django.utils import timezone
from playwright.sync_api import expect

from accounts.guests import form_token_issue, guest_comment_post
from accounts.models import Guest
from comments.models import ApiToken, Comment, Status
from comments.services import site_store
from moderation.actions import comment_moderate
from tests.browser.conftest import assert_seen_by_a_person, click, type_into
from tests.browser.test_latest_widget import hosted  # noqa: F401  (fixture)
from tests.browser.test_signin import serve_static_page
from tests.conftest import CHROMIUM, CHROMIUM_ARGS
from tests.factories import CommentFactory, SubjectFactory, UserFactory


@pytest.fixture
def guest_host(live_server, transactional_db):
    """A static blog taking guests and nothing else (no server to sign SSO payloads)."""
    url, server = serve_static_page(
        live_server, sso_secret="", signin_sso=False, signin_email=False, signin_guests=True
    )
    yield url
    server.shutdown()
    server.server_close()


def test_a_guest_comments_is_approved_and_edits_from_the_same_browser(page, browser, guest_host, shot):
    page.goto(guest_host)
    widget = page.frame_locator("iframe")
    guest_form = widget.locator("#cw-guest")
    expect(widget.get_by_role("button", name="Sign in")).to_have_count(0)  # the site offers no sign-in
    type_into(guest_form.get_by_label("Name"), "Grace")
    type_into(guest_form.get_by_label("Email"), "grace@example.com")
    type_into(guest_form.get_by_label("Your comment"), "A guest's first words.")
    click(guest_form.get_by_role("button", name="Post"))

    posted = widget.locator(".cw-c", has_text="A guest's first words.")
    assert_seen_by_a_person(posted)
    assert_seen_by_a_person(posted.locator(".cw-badge-guest"))
    expect(posted.locator(".cw-badge-guest")).to_have_text("Guest")
    expect(posted.locator(".cw-badge-review")).to_have_text("Under review")
    expect(guest_form.locator(".cw-note")).to_have_text("Your comment was posted and is waiting for review.")
    expect(widget.locator("#cw-me")).to_contain_text("Signed in as Grace (guest)")
    # Held as a guest, the form asks for the comment alone, and nothing a guest cannot use
    # (notifications, an account's data) is offered.
    assert_seen_by_a_person(guest_form.get_by_label("Your comment"))
    expect(guest_form.get_by_label("Your comment")).to_have_value("")
    expect(guest_form.get_by_label("Name")).to_be_hidden()
    expect(guest_form.get_by_label("Email")).to_be_hidden()
    expect(widget.get_by_role("button", name="Notifications")).to_be_hidden()
    expect(widget.get_by_role("button", name="Your data")).to_be_hidden()
    shot(page, "posted-under-review")

    comment = Comment.objects.select_related("author").get()
    assert comment.status == Status.PENDING and comment.author.is_guest
    assert Guest.objects.get(user=comment.author).email == "grace@example.com"
    moderator = UserFactory(is_staff=True)
    comment_moderate(comment_id=comment.pk, actor=moderator, action="approve", reason="")

    # Everyone sees it now, marked as a guest's; a browser that did not post it may not edit it.
    other = browser.new_context()
    try:
        elsewhere = other.new_page()
        elsewhere.goto(guest_host)
        seen = elsewhere.frame_locator("iframe").locator(".cw-c", has_text="A guest's first words.")
        assert_seen_by_a_person(seen)
        expect(seen.locator(".cw-badge-guest")).to_have_text("Guest")
        expect(seen.locator(".cw-badge-review")).to_have_count(0)
        expect(seen.get_by_role("button", name="Edit")).to_have_count(0)
        # A reader there, not signed in, replies as a guest: the reply form asks for a name.
        click(seen.get_by_role("button", name="Reply"))
        reply_form = elsewhere.frame_locator("iframe").locator(".cw-reply-form")
        click(reply_form.get_by_role("button", name="Reply"))
        expect(reply_form.locator(".cw-err")).to_have_text("Please write the name to show with your comment.")
        type_into(reply_form.get_by_label("Name"), "Bob")
        type_into(reply_form.get_by_label("Your reply"), "Bob answers as a guest.")
        shot(elsewhere, "a-reader-replies-as-a-guest")
        click(reply_form.get_by_role("button", name="Reply"))
        bobs = elsewhere.frame_locator("iframe").locator(".cw-c", has_text="Bob answers as a guest.")
        assert_seen_by_a_person(bobs)
        expect(bobs.locator(".cw-name")).to_have_text("Bob")
        expect(bobs.locator(".cw-badge-guest")).to_have_text("Guest")
        expect(bobs.locator(".cw-badge-review")).to_have_text("Under review")
    finally:
        other.close()

    # The browser that posted reads the list again (a sort): approved, and still its own to edit.
    click(widget.get_by_role("link", name="Newest"))
    posted = widget.locator(".cw-c", has_text="A guest's first words.")
    assert_seen_by_a_person(posted)
    expect(posted.locator(".cw-badge-review")).to_have_count(0)
    expect(posted.locator(".cw-badge-guest")).to_have_text("Guest")
    click(posted.get_by_role("button", name="Edit"))
    # The form's own buttons take the action row's place while it is open.
    expect(posted.get_by_role("button", name="Reply")).to_be_hidden()
    assert_seen_by_a_person(posted.get_by_role("button", name="Cancel"))
    shot(page, "editing")
    type_into(posted.get_by_label("Your comment"), "A guest's first words, edited.")
    click(posted.get_by_role("button", name="Save"))
    edited = widget.locator(".cw-c", has_text="A guest's first words, edited.")
    assert_seen_by_a_person(edited)
    expect(edited).to_contain_text("(edited)")
    expect(edited.locator(".cw-badge-review")).to_have_text("Under review")  # an edit is reviewed again
    assert Comment.objects.get(pk=comment.pk).status == Status.PENDING

    # The guest replies as the same guest, the guest's way.
    click(edited.get_by_role("button", name="Reply"))
    reply_form = widget.locator(".cw-reply-form")
    type_into(reply_form.get_by_label("Your reply"), "And a reply from the guest.")
    click(reply_form.get_by_role("button", name="Reply"))
    reply = widget.locator(".cw-c", has_text="And a reply from the guest.")
    assert_seen_by_a_person(reply)
    expect(reply.locator(".cw-badge-guest")).to_have_text("Guest")
    expect(reply.locator(".cw-badge-review")).to_have_text("Under review")
    shot(page, "edited-and-replied")
    first, bobs, answer = Comment.objects.order_by("id")
    assert bobs.reply_to_id == first.pk and bobs.author.display_name == "Bob" and bobs.author.is_guest
    assert answer.reply_to_id == first.pk and answer.author_id == first.author_id

    assert [p for p in page.problems if "favicon" not in p] == []

    # The hold ran out sooner than the frame's clock says: the next comment comes from a new guest.
    ApiToken.objects.filter(user_id=first.author_id).update(expires_at=timezone.now() - timedelta(seconds=1))
    type_into(guest_form.get_by_label("Your comment"), "Words after the window.")
    click(guest_form.get_by_role("button", name="Post"))
    assert_seen_by_a_person(widget.locator(".cw-c", has_text="Words after the window."))
    assert Comment.objects.get(pk__gt=answer.pk).author_id not in (first.author_id, None)
    assert [p for p in page.problems if "favicon" not in p] == [
        "console.error: Failed to load resource: the server responded with a status of 401 (Unauthorized)"
    ]


def test_a_reload_keeps_the_hold_where_the_browser_lets_the_frame_keep_storage(browser, guest_host, tmp_path):
    """A browser profile that lets a frame of another site keep storage (partitioned by the
    host page's site), as Firefox and Safari do and Chromium does unless third-party cookies
    are blocked, which its contexts for tests and this version's defaults do: there the frame
    keeps the hold for the page's life only (the test above)."""
    (tmp_path / "profile" / "Default").mkdir(parents=True)
    allow_frame_storage = {"profile": {"cookie_controls_mode": 0, "block_third_party_cookies": False}}
    (tmp_path / "profile" / "Default" / "Preferences").write_text(json.dumps(allow_frame_storage))
    profile = browser.browser_type.launch_persistent_context(
        str(tmp_path / "profile"), executable_path=CHROMIUM, headless=True, args=CHROMIUM_ARGS, locale="en-US"
    )
    try:
        page = profile.new_page()
        page.goto(guest_host)
        guest_form = page.frame_locator("iframe").locator("#cw-guest")
        type_into(guest_form.get_by_label("Name"), "Grace")
        type_into(guest_form.get_by_label("Your comment"), "Typo here.")
        click(guest_form.get_by_role("button", name="Post"))
        assert_seen_by_a_person(page.frame_locator("iframe").locator(".cw-c", has_text="Typo here."))

        page.reload()
        widget = page.frame_locator("iframe")
        expect(widget.locator("#cw-me")).to_contain_text("Signed in as Grace (guest)")
        posted = widget.locator(".cw-c", has_text="Typo here.")
        click(posted.get_by_role("button", name="Delete"))
        click(posted.get_by_role("button", name="Delete? Click again to confirm"))
        assert_seen_by_a_person(widget.get_by_text("Comment deleted."))
        assert Comment.objects.get().status == Status.DELETED

        click(widget.get_by_role("button", name="Sign out"))  # the guest is forgotten
        page.reload()
        assert_seen_by_a_person(page.frame_locator("iframe").locator("#cw-guest").get_by_label("Name"))
        expect(page.frame_locator("iframe").locator("#cw-me")).to_be_hidden()
    finally:
        profile.close()


def test_the_latest_comments_sidebar_marks_a_guest(hosted, page, settings):
    settings.ACCOUNTS_GUEST_FORM_MIN_SECONDS = 0
    origin, site = hosted('<div data-comments-latest data-site="blog"></div>')
    site.signin_guests, site.guest_moderation = True, "post"
    site_store(site=site)
    subject = SubjectFactory(site=site, title="Cats")
    CommentFactory(subject=subject, author=UserFactory(display_name="Ada"), body="a member's words")
    guest_comment_post(
        site=site, key=subject.key, body="a guest's words", name="Ada", form_token=form_token_issue(site=site).token
    )
    page.goto(origin + "/")
    items = page.locator(".comments-latest-item")
    expect(items).to_have_count(2)
    guest, member = items.all()
    assert_seen_by_a_person(guest)
    expect(guest.locator(".comments-latest-author")).to_have_text("Ada (guest)")
    expect(member.locator(".comments-latest-author")).to_have_text("Ada")

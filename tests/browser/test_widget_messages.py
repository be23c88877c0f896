"""The widget's status and error messages show next to what caused them (issue 13, defect 2).

The widget is as tall as its thread (the host page sizes the frame to it), so a message at its
bottom is off-screen on a long thread: a person who liked, reported, deleted or replied to a
comment half-way down saw nothing happen. Each test here acts on a thread several screens high,
far from its top and its bottom, and checks that the message is on the screen beside the action
without anybody scrolling to it, that it says the right thing, and that the next action takes
it away (messages do not pile up).
"""

from __future__ import annotations

from playwright.sync_api import FloatRect, Locator, expect

from comments import services
from comments.models import Mode
from moderation import services as moderation
from tests.browser.conftest import assert_seen_by_a_person, choose, click, type_into
from tests.browser.test_widget import frame_height, host, no_problems, signed_in_as, snap, widget  # noqa: F401 (host: a fixture)
from tests.factories import CommentFactory, SubjectFactory, UserFactory

BODY = "{}\n\nA second paragraph, so that each comment takes some room.\n\nAnd a third one."
NEAR = 250  # px: how far from where the person acted the message may be


def flat_thread(site, n=24, mine=10):
    """A flat thread (oldest first) of ``n`` comments, the ``mine``-th by Alice (the host's
    signed-in "alice"), each of the others by Ann, Ben or Cat; Alice's has a reply."""
    subject = SubjectFactory(site=site, key="article:long", title="A long discussion", mode=Mode.FLAT)
    people = [UserFactory(display_name=name) for name in ("Ann", "Ben", "Cat")]
    alice = services.sso_user_upsert(site=site, external_id="demo-alice", name="Alice")
    comments = []
    for i in range(n):
        author = alice if i == mine else people[i % 3]
        comments.append(CommentFactory(subject=subject, author=author, body=BODY.format(f"Comment {i}")))
        if i == mine:
            CommentFactory(subject=subject, author=people[0], reply_to=comments[-1], body="A reply to Alice.")
    return subject, comments, alice


def two_level_thread(site, roots=22):
    """A two-level thread of ``roots`` threads, one reply each; the newest has five."""
    subject = SubjectFactory(site=site, key="article:long-2l", title="A long discussion", mode=Mode.TWO_LEVEL)
    people = [UserFactory(display_name=name) for name in ("Ann", "Ben", "Cat")]
    made = []
    for i in range(roots):
        root = CommentFactory(subject=subject, author=people[i % 3], body=BODY.format(f"Thread {i}"))
        made.append(root)
        for k in range(5 if i == roots - 1 else 1):
            CommentFactory(
                subject=subject, author=people[(i + k + 1) % 3], reply_to=root, body=f"Reply {k} in thread {i}"
            )
    return subject, made


def is_long(page):
    """The widget is several screens high: a message at its top or bottom is far away."""
    page.wait_for_function("document.querySelector('#comments iframe').offsetHeight > 2 * innerHeight")


def act(control: Locator) -> FloatRect:
    """Click ``control`` as a person does; returns where it was on the screen then (host page
    viewport coordinates)."""
    assert_seen_by_a_person(control)
    box = control.bounding_box()
    click(control)
    return box


def message(frame, text: str, *, error: bool = False) -> Locator:
    """The message saying ``text``, wherever it is in the widget."""
    return frame.get_by_role("alert" if error else "status").filter(has_text=text)


def shown_messages(frame) -> Locator:
    return frame.locator("[role=status]:not(:empty), [role=alert]:not([hidden]):not(:empty)")


def said_where_they_acted(page, frame, text: str, acted: FloatRect, *, error: bool = False) -> Locator:
    """``text`` is said (a status, or an alert for an ``error``), the only message shown, on the
    screen as it is (nobody scrolls to it) within ``NEAR`` px of where the person acted, and a
    person sees it there."""
    said = message(frame, text, error=error)
    expect(said).to_have_text(text)
    expect(shown_messages(frame)).to_have_count(1)
    height = page.viewport_size["height"]
    scrolled = page.evaluate("scrollY")
    box = said.bounding_box()
    where = (
        f"{text!r} is at y {box['y']:.0f} to {box['y'] + box['height']:.0f} of a {height} px high screen, "
        f"the action at y {acted['y']:.0f}"
    )
    assert box["y"] >= 0 and box["y"] + box["height"] <= height, f"off-screen: {where}"
    assert abs(box["y"] - acted["y"]) <= NEAR, f"far from the action: {where}"
    assert_seen_by_a_person(said)
    assert page.evaluate("scrollY") == scrolled, f"the person had to scroll to see it: {where}"
    return said


def said_beside(frame, text: str, control: Locator) -> Locator:
    """``text`` is said within ``NEAR`` px of ``control`` and a person sees it. For a request to
    sign in, which the host page answers by moving to its own sign-in: there is no staying put."""
    said = message(frame, text)
    expect(said).to_have_text(text)
    expect(shown_messages(frame)).to_have_count(1)
    box, beside = said.bounding_box(), control.bounding_box()
    assert abs(box["y"] - beside["y"]) <= NEAR, (
        f"{text!r} is at y {box['y']:.0f}, what was clicked at y {beside['y']:.0f}"
    )
    assert_seen_by_a_person(said)
    return said


def height_is_told(page):
    """The host page still sizes the frame to the widget, messages and all."""
    inner = lambda: page.frames[1].evaluate("Math.ceil(document.body.getBoundingClientRect().height)")  # noqa: E731
    page.wait_for_function(
        "h => Math.abs(document.querySelector('#comments iframe').offsetHeight - h) <= 2",
        arg=inner(),
    )
    assert abs(frame_height(page) - inner()) <= 2


def test_signing_in_posting_and_signing_out_are_told_by_the_post_box_and_the_sign_in(host, page, shot):
    subject, _, _ = flat_thread(host.site)
    page.goto(host.url(subject.key, user="alice"))
    frame = widget(page)
    signed_in_as(frame, "Alice")
    is_long(page)
    # The host signed Alice in as its page loaded, not at a click of hers here: the widget shows
    # who is signed in and says nothing more (no "Signed in." line left standing, issue 39).
    assert_seen_by_a_person(frame.locator("#cw-me"))
    expect(frame.locator("#cw-status")).to_have_text("")
    snap(page, shot, "signed-in")

    type_into(frame.locator("#cw-body"), "A new comment on a long thread")
    posted = said_where_they_acted(
        page, frame, "Your comment was posted.", act(frame.get_by_role("button", name="Post"))
    )
    expect(frame.locator("#cw-form")).to_contain_text("Your comment was posted.")  # in the form, by its button
    expect(frame.locator(".cw-c", has_text="A new comment on a long thread")).to_be_visible()
    height_is_told(page)
    snap(page, shot, "posted")

    # Posting again with nothing written: the error replaces the status.
    said_where_they_acted(
        page, frame, "Please write something first.", act(frame.get_by_role("button", name="Post")), error=True
    )
    expect(posted).to_have_count(0)
    snap(page, shot, "empty")

    said_where_they_acted(page, frame, "Signed out.", act(frame.get_by_role("button", name="Sign out")))
    expect(frame.get_by_role("alert").filter(has_text="Please write something first.")).to_have_count(0)
    snap(page, shot, "signed-out")
    no_problems(page)


def test_an_empty_then_a_real_reply_far_down_then_deleting_it_are_told_beside_it(host, page, shot):
    subject, _ = two_level_thread(host.site)
    page.goto(host.url(subject.key, user="alice"))
    frame = widget(page)
    signed_in_as(frame, "Alice")
    click(frame.get_by_role("link", name="Newest"))
    threads = frame.locator(".cw-items > .cw-thread")
    expect(threads.first).to_contain_text("Thread 21")
    is_long(page)
    middle = threads.nth(10)
    expect(middle).to_contain_text("Thread 11")
    root = middle.locator(":scope > .cw-c")

    act(root.get_by_role("button", name="Reply"))
    form = frame.locator(".cw-reply-form")
    said_where_they_acted(
        page, frame, "Please write something first.", act(form.get_by_role("button", name="Reply")), error=True
    )
    expect(form.get_by_role("alert")).to_have_text("Please write something first.")  # in the form
    snap(page, shot, "empty-reply")

    type_into(form.get_by_label("Your reply"), "A reply half-way down")
    said = said_where_they_acted(page, frame, "Your comment was posted.", act(form.get_by_role("button", name="Reply")))
    reply = middle.locator(".cw-reply-list .cw-c", has_text="A reply half-way down")
    expect(reply.get_by_role("status")).to_have_text("Your comment was posted.")  # beside the new reply
    expect(frame.get_by_text("Please write something first.")).to_have_count(0)
    height_is_told(page)
    snap(page, shot, "replied")

    act(reply.get_by_role("button", name="Delete"))
    expect(said).to_have_count(0)  # the next action took it away
    said_where_they_acted(
        page, frame, "Comment deleted.", act(reply.get_by_role("button", name="Delete? Click again to confirm"))
    )
    expect(reply).to_have_count(0)
    expect(middle.get_by_role("status")).to_have_text("Comment deleted.")  # where the reply was
    snap(page, shot, "deleted")
    no_problems(page)


def test_likes_reports_deletes_and_refusals_far_down_are_told_beside_the_comment(host, page, shot):
    subject, comments, alice = flat_thread(host.site)
    page.goto(host.url(subject.key))
    frame = widget(page)
    expect(frame.locator(".cw-items > li")).to_have_count(20)
    is_long(page)

    # Not signed in: liking asks for a sign-in, beside the like.
    ninth = frame.locator(f"#c-{comments[9].id}")
    act(ninth.locator(".cw-like"))
    expect(page.locator("#user")).to_be_focused()  # the host page's sign-in, which it scrolls to
    said_beside(frame, "Sign in to take part in the discussion.", ninth.locator(".cw-like"))
    expect(ninth.get_by_role("status")).to_have_text("Sign in to take part in the discussion.")
    snap(page, shot, "sign-in-first")

    page.goto(host.url(subject.key, user="alice"))
    frame = widget(page)
    signed_in_as(frame, "Alice")
    is_long(page)

    # A report, then a like: the thanks goes with the next action.
    eleventh = frame.locator(f"#c-{comments[11].id}")
    act(eleventh.get_by_role("button", name="Report"))
    choose(eleventh.get_by_label("Why are you reporting this comment?"), "spam")
    thanks = said_where_they_acted(
        page,
        frame,
        "Thanks, a moderator will look at it.",
        act(eleventh.locator(".cw-report").get_by_role("button", name="Report")),
    )
    snap(page, shot, "reported")
    like = eleventh.locator(".cw-like")
    act(like)
    expect(like).to_have_attribute("aria-pressed", "true")
    expect(thanks).to_have_count(0)
    expect(shown_messages(frame)).to_have_count(0)

    # Alice deletes her own comment (it has a reply, so a placeholder stays): told beside it.
    mine = frame.locator(f"#c-{comments[10].id}")
    act(mine.get_by_role("button", name="Delete"))
    said_where_they_acted(
        page, frame, "Comment deleted.", act(mine.get_by_role("button", name="Delete? Click again to confirm"))
    )
    expect(mine).to_contain_text("This comment was deleted.")
    expect(mine.get_by_role("status")).to_have_text("Comment deleted.")
    snap(page, shot, "deleted")

    # A moderator bans Alice meanwhile: her next like is refused, said beside it, undone.
    moderation.sanction_create(actor=UserFactory(is_staff=True), site=host.site, user_id=alice.pk, kind="ban")
    thirteenth = frame.locator(f"#c-{comments[13].id}")
    said_where_they_acted(
        page,
        frame,
        "You cannot take part in discussions on this site.",
        act(thirteenth.locator(".cw-like")),
        error=True,
    )
    expect(thirteenth.get_by_role("alert")).to_have_text("You cannot take part in discussions on this site.")
    expect(thirteenth.locator(".cw-like")).to_have_attribute("aria-pressed", "false")
    expect(frame.get_by_text("Comment deleted.")).to_have_count(0)
    height_is_told(page)
    snap(page, shot, "like-refused")


def test_loading_more_is_told_where_the_new_comments_begin_and_the_sign_in_at_the_top(host, page, shot):
    subject, roots = two_level_thread(host.site)
    page.goto(host.url(subject.key))
    frame = widget(page)
    click(frame.get_by_role("link", name="Newest"))
    threads = frame.locator(".cw-items > .cw-thread")
    expect(threads.first).to_contain_text("Thread 21")
    is_long(page)

    newest = roots[-1]
    said = said_where_they_acted(
        page, frame, "More comments loaded.", act(frame.get_by_role("link", name="View all 5 replies"))
    )
    expect(frame.locator(f"#replies-{newest.id} .cw-c")).to_have_count(5)
    expect(frame.locator(f"#replies-{newest.id}").get_by_role("status")).to_have_text("More comments loaded.")
    snap(page, shot, "replies-expanded")

    said_where_they_acted(
        page, frame, "More comments loaded.", act(frame.get_by_role("link", name="Load more comments"))
    )
    expect(threads).to_have_count(22)
    expect(said).to_have_count(1)  # the one by the link, not the one by the replies as well
    snap(page, shot, "loaded-more")

    act(frame.get_by_role("link", name="Hot"))  # sorting again: the message goes
    expect(shown_messages(frame)).to_have_count(0)
    act(frame.get_by_role("button", name="Sign in"))
    said_beside(frame, "Sign in to take part in the discussion.", frame.get_by_role("button", name="Sign in"))
    expect(frame.locator(".cw-user").get_by_role("status")).to_have_text("Sign in to take part in the discussion.")
    snap(page, shot, "sign-in-at-the-top")
    no_problems(page)

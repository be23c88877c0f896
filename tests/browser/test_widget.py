"""The embeddable widget in a real browser: a customer's page on one origin (127.0.0.1) frames
the service on another (localhost), exactly as the README's demo does.

``SCREENSHOTS_DIR=docs/screenshots`` also copies the README's screenshots there
(``widget-two_level.png``, ``widget-flat.png``, ``widget-stacked.png``, ``widget-dark.png``,
``widget-mobile.png``).
"""

from __future__ import annotations

import os
import re
import shutil
import threading
from pathlib import Path

import pytest
from django.contrib.auth.models import AnonymousUser
from playwright.sync_api import expect

from comments import services
from comments.models import Comment, Mode, Site, Subject
from demo.management.commands.demo_host import host_app, make_host_server
from likes import queries as likes_queries
from tests.browser.conftest import assert_seen_by_a_person, click, type_into
from tests.factories import CommentFactory, SiteFactory, SubjectFactory, UserFactory

SECRET = "browser-sso-secret"
README_SHOTS = os.environ.get("SCREENSHOTS_DIR")


@pytest.fixture
def host(live_server, transactional_db):
    """The host site's server on 127.0.0.1 (its own origin), the demo site allowing it, and
    ``host.url(key, **params)`` for an article page embedding the widget."""
    server = make_host_server(lambda environ, start_response: app(environ, start_response), "127.0.0.1", 0)  # type: ignore[has-type]  # app: set below, before it serves
    origin = f"http://127.0.0.1:{server.server_port}"
    site = SiteFactory(key="demo", sso_secret=SECRET, allowed_origins=[origin], signin_email=False)  # the host signs in
    app = host_app(service=live_server.url, site=site.key, secret=SECRET, users=["alice", "bob"])
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()

    class Host:
        origin: str
        site: Site
        service: str

        def url(self, key, **params):
            query = "&".join(f"{k}={v}" for k, v in params.items())
            return f"{origin}/a/{key}?{query}"

    h = Host()
    h.origin, h.site, h.service = origin, site, live_server.url
    yield h
    server.shutdown()
    server.server_close()


def snap(page, shot, name: str) -> Path:
    """``shot`` with the viewport grown to the whole page first: Chromium paints a cross-origin
    frame only inside the viewport, so a plain full-page shot would cut the widget off.

    The viewport is put back in two steps. Put back in one, Chromium now and then kept routing
    presses meant for the widget's out-of-process frame to the host page's ``<iframe>``
    element, for good (one run in five of a test clicking after snapshots lost a click; none
    in thirty since)."""
    size = page.viewport_size
    height = page.evaluate("document.documentElement.scrollHeight")
    page.set_viewport_size({"width": size["width"], "height": min(max(height, size["height"]), 6000)})
    try:
        return shot(page, name, full_page=False)  # the viewport is the page now
    finally:
        page.set_viewport_size({"width": size["width"], "height": size["height"] + 1})
        page.set_viewport_size(size)


def readme_shot(page, name: str, shot) -> None:
    path = snap(page, shot, name)
    if README_SHOTS:
        target = Path(README_SHOTS) / f"{name}.png"
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(path, target)


def widget(page):
    return page.frame_locator("#comments iframe")


def frame_height(page) -> float:
    return page.locator("#comments iframe").bounding_box()["height"]


def no_problems(page):
    assert not [p for p in page.problems if "favicon" not in p], page.problems


def signed_in_as(frame, name):
    """Wait until the widget has signed ``name`` in and re-rendered the list for them (their
    liked flags, their edit buttons). The name is shown as the list's reload starts (it is busy
    from then on), so the list is theirs once it is no longer busy. Clicking sooner would hit
    the list that is about to be replaced."""
    expect(frame.locator("#cw-me-name")).to_have_text(name)
    expect(frame.locator("#cw-list")).to_have_attribute("aria-busy", "false")


def wait_until(page, condition, seconds=5):
    """Poll ``condition`` while Playwright waits (route and response handlers run meanwhile)."""
    for _ in range(seconds * 10):
        if condition():
            return
        page.wait_for_timeout(100)
    assert condition()


def two_level_subject(site, roots=3, replies=0):
    subject = SubjectFactory(site=site, key="article:2l", title="Two-level", mode=Mode.TWO_LEVEL)
    people = [UserFactory(display_name=n) for n in ("Ann", "Ben", "Cat")]
    first = None
    for n in range(roots):
        root = CommentFactory(subject=subject, author=people[n % 3], body=f"Top-level comment {n}")
        first = first or root
    for n in range(replies):
        CommentFactory(subject=subject, author=people[(n + 1) % 3], reply_to=first, body=f"Reply number {n}")
    return subject, first


def test_the_widget_loads_on_another_origin_and_sizes_itself(host, page, shot):
    subject, _ = two_level_subject(host.site, roots=6)
    page.goto(host.url(subject.key))
    frame = widget(page)
    expect(frame.get_by_text("Top-level comment 5")).to_be_visible()
    expect(frame.locator("#cw-count")).to_have_text("6 comments")
    # The frame grows to its content (no inner scrollbar), told through postMessage.
    page.wait_for_function("document.querySelector('#comments iframe').offsetHeight > 400")
    inner = page.frames[1].evaluate("Math.ceil(document.body.getBoundingClientRect().height)")
    assert abs(frame_height(page) - inner) <= 2
    # One counts call fills the page's count.
    expect(page.locator("article [data-comment-count]")).to_have_text("6")
    assert page.frames[1].url.startswith(host.service + "/embed/")
    expect(frame.get_by_text("Sign in to join the discussion.")).to_be_visible()
    snap(page, shot, "loaded")
    no_problems(page)


def test_a_listing_page_with_only_the_loader_and_count_tags_shows_the_counts(host, page, shot):
    """The demo blog's front page lists its articles with their counts and embeds no widget:
    the loader's script tag and the count tags, as the README documents them, fill them."""
    flat = SubjectFactory(site=host.site, key="article:flat", title="Flat", mode=Mode.FLAT)
    for _ in range(3):
        CommentFactory(subject=flat)
    page.goto(f"{host.origin}/")
    expect(page.locator("[data-comment-count='article:flat']")).to_have_text("3")
    expect(page.locator("[data-comment-count='article:two-level']")).to_have_text("0")
    assert page.locator("[data-comments]").count() == 0
    assert "site=" not in page.locator("script[src$='embed.js']").get_attribute("src")
    snap(page, shot, "listing-counts")
    no_problems(page)


def test_sign_in_by_sso_then_post_reply_like_and_unlike(host, page, shot):
    subject, first = two_level_subject(host.site, roots=2)
    page.goto(host.url(subject.key, user="alice"))
    frame = widget(page)
    expect(frame.get_by_text("Signed in as")).to_be_visible()
    signed_in_as(frame, "Alice")
    expect(page.locator("#who")).to_have_text("Alice")
    snap(page, shot, "signed-in")

    type_into(frame.locator("#cw-body"), "Hello from **Alice**")
    click(frame.get_by_role("button", name="Post"))
    mine = frame.locator(".cw-c", has_text="Hello from Alice")
    expect(mine.locator("strong")).to_have_text("Alice")
    expect(frame.locator("#cw-form").get_by_role("status")).to_have_text(
        "Your comment was posted."
    )  # by its Post button
    expect(frame.locator("#cw-count")).to_have_text("3 comments")
    expect(page.locator("article [data-comment-count]")).to_have_text("3")
    snap(page, shot, "posted")

    target = frame.locator(f"#c-{first.id}")
    click(target.get_by_role("button", name="Reply"))
    reply_box = frame.get_by_label("Your reply")
    expect(reply_box).to_be_focused()
    type_into(reply_box, "A reply by keyboard")
    snap(page, shot, "reply-typed")
    page.keyboard.press("Control+Enter")
    expect(frame.locator(f"#replies-{first.id} .cw-c", has_text="A reply by keyboard")).to_be_visible()
    # Under the comment it answers, as the thread's other replies to it are: no "reply to".
    expect(frame.locator(f"#replies-{first.id} .cw-c", has_text="A reply by keyboard").locator(".cw-to")).to_have_count(
        0
    )
    snap(page, shot, "replied")

    like = target.locator(".cw-like")
    click(like)
    expect(like).to_have_attribute("aria-pressed", "true")
    expect(like.locator(".cw-like-count")).to_have_text("1")
    snap(page, shot, "liked")
    click(like)
    expect(like).to_have_attribute("aria-pressed", "false")
    expect(like.locator(".cw-like-count")).to_have_text("0")

    assert Comment.objects.filter(subject=subject, reply_to_id=first.id).count() == 1
    no_problems(page)


def test_a_threads_reply_count_follows_a_reply_and_a_delete(host, page, shot):
    """Two-level mode folds a long thread behind "View all N replies": a reply posted or deleted
    in it changed N on the server and nowhere on the page."""
    subject, first = two_level_subject(host.site, roots=2, replies=5)
    page.goto(host.url(subject.key, user="alice"))
    frame = widget(page)
    signed_in_as(frame, "Alice")
    expand = frame.locator(f"#replies-{first.id} .cw-expand")
    expect(expand).to_have_text("View all 5 replies")
    click(frame.locator(f"#c-{first.id}").get_by_role("button", name="Reply"))
    type_into(frame.get_by_label("Your reply"), "One more answer")
    click(frame.locator(".cw-reply-form").get_by_role("button", name="Reply"))
    mine = frame.locator(f"#replies-{first.id} .cw-c", has_text="One more answer")
    expect(mine).to_be_visible()
    expect(expand).to_have_text("View all 6 replies")
    expect(frame.locator("#cw-count")).to_have_text("8 comments")
    snap(page, shot, "replied")

    click(mine.get_by_role("button", name="Delete"))
    click(mine.get_by_role("button", name="Delete? Click again to confirm"))
    expect(mine).to_have_count(0)
    expect(expand).to_have_text("View all 5 replies")
    click(expand)
    expect(frame.locator(f"#replies-{first.id} .cw-c")).to_have_count(5)
    snap(page, shot, "expanded-after-delete")
    no_problems(page)


def looks_like_the_post_box(frame, box):
    """``box`` is drawn as the widget's main box is (border, corners, padding, type, colours)."""
    looks = """el => {
        const s = getComputedStyle(el);
        return [s.borderTopWidth, s.borderTopStyle, s.borderTopColor, s.borderRadius, s.paddingLeft,
                s.paddingTop, s.fontSize, s.fontFamily, s.color, s.backgroundColor, s.minHeight];
    }"""
    assert box.evaluate(looks) == frame.locator("#cw-body").evaluate(looks)


def test_a_reader_sees_the_reply_box_and_what_they_type_in_it(host, page, shot):
    """The reply box once sat inside its visually hidden label, clipped with it to nothing: only
    code could fill it, and a reader typed blind."""
    subject, first = two_level_subject(host.site, roots=2)
    page.goto(host.url(subject.key, user="alice"))
    frame = widget(page)
    signed_in_as(frame, "Alice")
    click(frame.locator(f"#c-{first.id}").get_by_role("button", name="Reply"))
    reply_box = frame.locator(".cw-reply-form textarea")
    expect(reply_box).to_be_focused()
    assert_seen_by_a_person(reply_box)
    expect(reply_box).to_have_accessible_name("Your reply")  # its label, for screen readers
    expect(reply_box).to_have_attribute("placeholder", "Your reply")
    looks_like_the_post_box(frame, reply_box)
    assert reply_box.bounding_box()["width"] > 600  # the width of the column, not a sliver
    snap(page, shot, "reply-box-open")

    type_into(reply_box, "I can see what I type")
    snap(page, shot, "reply-typed")
    click(frame.locator(".cw-reply-form").get_by_role("button", name="Reply"))
    expect(frame.locator(f"#replies-{first.id} .cw-c", has_text="I can see what I type")).to_be_visible()
    expect(frame.locator(".cw-reply-form")).to_have_count(0)
    snap(page, shot, "replied")
    assert Comment.objects.get(reply_to_id=first.id).content.body == "I can see what I type"
    no_problems(page)


def test_a_reader_sees_the_edit_box_and_what_they_type_in_it(host, page, shot):
    """The edit box was the reply box's copy, hidden the same way."""
    page.goto(host.url("article:typo", user="bob"))
    frame = widget(page)
    signed_in_as(frame, "Bob")
    type_into(frame.locator("#cw-body"), "Helo, world")
    click(frame.get_by_role("button", name="Post"))
    expect(frame.locator(".cw-c", has_text="Helo, world")).to_be_visible()
    posted = Comment.objects.get(content__body="Helo, world")
    mine = frame.locator(f"#c-{posted.id}")

    click(mine.get_by_role("button", name="Edit"))
    editor = mine.locator("textarea")
    expect(editor).to_be_focused()
    expect(editor).to_have_value("Helo, world")
    assert_seen_by_a_person(editor)
    expect(editor).to_have_accessible_name("Your comment")  # its label, for screen readers
    looks_like_the_post_box(frame, editor)
    assert editor.bounding_box()["width"] > 600
    snap(page, shot, "edit-box-open")

    type_into(editor, "Hello, world")
    snap(page, shot, "edit-typed")
    click(mine.get_by_role("button", name="Save"))
    expect(mine.get_by_text("(edited)")).to_be_visible()
    expect(mine.locator(".cw-body")).to_have_text("Hello, world")
    snap(page, shot, "edited")
    assert Comment.objects.get(pk=posted.pk).content.body == "Hello, world"
    no_problems(page)


def test_quick_like_then_unlike_ends_unliked_even_when_the_like_is_answered_late(host, page):
    """A second click while the first request is still out must not race it: the browser may
    send two requests on two connections, and the server would apply them in either order."""
    subject, first = two_level_subject(host.site, roots=1)
    held: list = []

    def hold_the_first_like(route):
        if route.request.method == "PUT" and not held:
            held.append(route)  # answered below, after the second click
        else:
            route.continue_()

    page.route("**/api/v1/comments/*/like", hold_the_first_like)
    answered = []
    page.on("response", lambda r: answered.append(r.request.method) if r.url.endswith("/like") else None)
    page.goto(host.url(subject.key, user="alice"))
    frame = widget(page)
    signed_in_as(frame, "Alice")
    like = frame.locator(f"#c-{first.id} .cw-like")
    click(like)
    expect(like).to_have_attribute("aria-pressed", "true")
    wait_until(page, lambda: held)
    click(like)
    expect(like).to_have_attribute("aria-pressed", "false")
    held[0].continue_()
    wait_until(page, lambda: sorted(answered) == ["DELETE", "PUT"])
    expect(like.locator(".cw-like-count")).to_have_text("0")
    expect(like).to_have_attribute("aria-pressed", "false")

    kept = likes_queries.likers(comment_id=first.pk, user=AnonymousUser(), limit=10, cursor=None)
    assert kept.items == []  # what the server kept
    no_problems(page)


def test_a_comment_posted_while_the_list_reloads_stays_shown(host, page, shot):
    """A reader who picks another order and posts at once: the list the new order reads may
    have been read before the comment was written, and must not take the comment away when it
    arrives. The list's answer is read from the server first and handed over after the post."""
    subject, _ = two_level_subject(host.site, roots=2)
    held: list = []

    def hold_the_reloaded_list(route):
        if "sort=new" in route.request.url and not held:
            held.append(route)  # read and answered below, around the post
        else:
            route.continue_()

    page.route("**/embed/fragments/comments?*", hold_the_reloaded_list)
    page.goto(host.url(subject.key, user="alice"))
    frame = widget(page)
    signed_in_as(frame, "Alice")
    click(frame.get_by_role("link", name="Newest"))
    wait_until(page, lambda: held)
    read_before_the_post = held[0].fetch()
    assert "Posted during the reload" not in read_before_the_post.text()

    type_into(frame.locator("#cw-body"), "Posted during the reload")
    post = frame.get_by_role("button", name="Post")
    click(post)
    wait_until(page, lambda: Comment.objects.filter(content__body="Posted during the reload").exists())
    try:  # a widget that shows the comment at once does so now (and frees its button) ...
        expect(post).to_be_enabled(timeout=2000)
    except AssertionError:  # ... this one waits for the list
        pass
    held[0].fulfill(response=read_before_the_post)
    expect(frame.locator("#cw-list")).to_have_attribute("aria-busy", "false")
    expect(frame.get_by_text("Top-level comment 1")).to_be_visible()  # the reloaded list is in

    posted = frame.locator(".cw-c", has_text="Posted during the reload")
    assert_seen_by_a_person(posted)
    expect(posted).to_have_count(1)
    expect(frame.locator("#cw-count")).to_have_text("3 comments")
    snap(page, shot, "posted-during-reload")
    no_problems(page)


def test_a_post_whose_answer_was_lost_is_sent_again_and_stored_once(host, page, shot):
    """The service stores the post but its answer never reaches the reader (a timeout, a
    dropped connection); the reader presses Post again. The widget sends the same
    Idempotency-Key with the same words, so the service answers as the first time and the
    comment is there once."""
    subject, _ = two_level_subject(host.site, roots=1)
    lost: list = []

    def lose_the_first_answer(route):
        if route.request.method == "POST" and not lost:
            lost.append(route.request.headers.get("idempotency-key"))
            route.fetch()  # the service gets it and stores it ...
            route.abort("connectionreset")  # ... and its answer is lost on the way back
        else:
            lost.append(route.request.headers.get("idempotency-key"))
            route.continue_()

    page.route(f"**/api/v1/subjects/{subject.pk}/comments", lose_the_first_answer)
    page.goto(host.url(subject.key, user="alice"))
    frame = widget(page)
    signed_in_as(frame, "Alice")
    type_into(frame.locator("#cw-body"), "Said once, whatever the network")
    post = frame.get_by_role("button", name="Post")
    click(post)
    assert_seen_by_a_person(frame.locator("#cw-form").get_by_role("alert"))
    assert Comment.objects.filter(content__body="Said once, whatever the network").count() == 1
    expect(frame.locator("#cw-body")).to_have_value("Said once, whatever the network")  # kept to send again
    click(post)
    posted = frame.locator(".cw-c", has_text="Said once, whatever the network")
    assert_seen_by_a_person(posted)
    expect(posted).to_have_count(1)
    assert len(lost) == 2 and lost[0] and lost[0] == lost[1]
    assert Comment.objects.filter(content__body="Said once, whatever the network").count() == 1
    snap(page, shot, "posted-once")


def test_a_new_subject_is_created_by_its_first_comment_and_can_be_edited_and_deleted(host, page, shot):
    page.goto(host.url("article:brand-new", user="bob"))
    frame = widget(page)
    expect(frame.get_by_text("Be the first to comment")).to_be_visible()
    signed_in_as(frame, "Bob")
    type_into(frame.locator("#cw-body"), "First!")
    click(frame.get_by_role("button", name="Post"))
    mine = frame.locator(".cw-c", has_text="First!")
    expect(mine).to_be_visible()
    subject = Subject.objects.get(site=host.site, key="article:brand-new")
    assert subject.title == "article:brand-new" and subject.url.startswith(host.origin)

    click(mine.get_by_role("button", name="Edit"))
    editor = mine.get_by_label("Your comment")
    expect(editor).to_have_value("First!")
    type_into(editor, "First, edited")
    snap(page, shot, "edit-typed")
    click(mine.get_by_role("button", name="Save"))
    edited = frame.locator(".cw-c", has_text="First, edited")
    expect(edited.get_by_text("(edited)")).to_be_visible()
    snap(page, shot, "edited")

    click(edited.get_by_role("button", name="Delete"))
    click(edited.get_by_role("button", name="Delete? Click again to confirm"))
    expect(frame.locator(".cw-c", has_text="First, edited")).to_have_count(0)
    expect(frame.locator("#cw-count")).to_have_text("0 comments")
    no_problems(page)


def test_readers_who_are_not_signed_in_are_asked_to_sign_in(host, page, shot):
    subject, first = two_level_subject(host.site, roots=1)
    page.goto(host.url(subject.key))
    frame = widget(page)
    expect(frame.locator("#cw-form")).to_be_hidden()
    click(frame.locator(f"#c-{first.id} .cw-like"))
    expect(frame.locator(f"#c-{first.id}").get_by_role("status")).to_have_text(
        "Sign in to take part in the discussion."
    )
    # The host page hears the request and points at its own sign-in.
    expect(page.locator("#user")).to_be_focused()
    expect(frame.locator(f"#c-{first.id} .cw-like-count")).to_have_text("0")
    snap(page, shot, "sign-in-prompt")


def test_two_level_loads_more_and_expands_replies(host, page, shot):
    subject, first = two_level_subject(host.site, roots=24, replies=5)
    page.goto(host.url(subject.key))
    frame = widget(page)
    threads = frame.locator(".cw-items > .cw-thread")
    expect(threads).to_have_count(20)
    expect(frame.locator(f"#replies-{first.id} .cw-c")).to_have_count(3)
    expect(frame.locator(f"#c-{first.id} .cw-floor-no")).to_have_text("#1")
    expect(frame.locator(f"#replies-{first.id} .cw-floor-no")).to_have_text(
        ["#1 · reply 1", "#1 · reply 2", "#1 · reply 3"]
    )
    readme_shot(page, "widget-two_level", shot)

    click(frame.get_by_role("link", name="View all 5 replies"))
    expect(frame.locator(f"#replies-{first.id} .cw-c")).to_have_count(5)
    expect(frame.locator(f"#replies-{first.id} .cw-floor-no")).to_have_text([f"#1 · reply {n}" for n in range(1, 6)])
    snap(page, shot, "replies-expanded")

    click(frame.get_by_role("link", name="Load more comments"))
    expect(threads).to_have_count(24)
    expect(frame.get_by_role("link", name="Load more comments")).to_have_count(0)
    expect(frame.locator(".cw-items").get_by_role("status")).to_have_text("More comments loaded.")  # where they begin
    snap(page, shot, "loaded-more")

    click(frame.get_by_role("link", name="Newest"))
    expect(threads.first).to_contain_text("Top-level comment 23")
    no_problems(page)


def test_flat_mode_is_one_list_with_reply_to_names(host, page, shot):
    subject = SubjectFactory(site=host.site, key="article:flat", title="Flat", mode=Mode.FLAT)
    ann, ben = UserFactory(display_name="Ann"), UserFactory(display_name="Ben")
    first = CommentFactory(subject=subject, author=ann, body="Is this flat?")
    second = CommentFactory(subject=subject, author=ben, reply_to=first, body="It is.")
    CommentFactory(subject=subject, author=ann, reply_to=second, body="Thanks, Ben.")
    CommentFactory(subject=subject, author=ben, body="Another top-level one.")
    page.goto(host.url(subject.key))
    frame = widget(page)
    expect(frame.locator(".cw-items.mode-flat > li")).to_have_count(4)
    expect(frame.locator(".cw-c", has_text="Thanks, Ben.").locator(".cw-to")).to_have_text("reply to @Ben")
    # A reply to a top-level comment is not under it in a flat list either: it says whom it answers.
    expect(frame.locator(".cw-c", has_text="It is.").locator(".cw-to")).to_have_text("reply to @Ann")
    expect(frame.locator(".cw-c", has_text="Another top-level one.").locator(".cw-to")).to_have_count(0)
    # Numbers say what they count: the discussion's floors, and a reply's place in its floor's
    # thread.
    expect(frame.locator(".cw-items > li > .cw-c .cw-floor-no")).to_have_text(
        ["#1", "#1 · reply 1", "#1 · reply 2", "#2"]
    )
    expect(frame.locator(f"#c-{second.id} .cw-floor-no")).to_have_attribute("title", "Thread of floor 1, reply 1")
    expect(frame.locator(f"#c-{first.id} .cw-floor-no")).to_have_attribute("title", "Floor 1 of the discussion")
    readme_shot(page, "widget-flat", shot)
    page.goto(host.url(subject.key, lang="zh-hans"))
    expect(widget(page).locator(".cw-items > li > .cw-c .cw-floor-no")).to_have_text(
        ["1楼", "1楼 · 回复1", "1楼 · 回复2", "2楼"]
    )
    snap(page, shot, "flat-zh-hans")
    no_problems(page)


def test_stacked_mode_shows_each_comment_under_its_folded_chain(host, page, shot):
    subject = SubjectFactory(site=host.site, key="article:stacked", title="Stacked", mode=Mode.STACKED)
    people = [UserFactory(display_name=n) for n in ("Ann", "Ben", "Cat")]
    parent = CommentFactory(subject=subject, author=people[0], body="Floor 1: start")
    for n in range(2, 13):
        parent = CommentFactory(subject=subject, author=people[n % 3], reply_to=parent, body=f"Floor {n}: climbing")
    page.goto(host.url(subject.key))
    frame = widget(page)
    click(frame.get_by_role("link", name="Newest"))
    newest = frame.locator(".cw-stack").first
    expect(newest.locator(".cw-c")).to_contain_text("Floor 12")
    expect(newest.get_by_role("link", name="Show 6 hidden floors")).to_be_visible()
    expect(newest.locator(".cw-floor")).to_have_count(5)
    # The top-level comment is floor 1 of the discussion; everything under it counts in its thread.
    expect(newest.locator(".cw-c .cw-floor-no")).to_have_text("#1 · reply 11")
    expect(newest.locator(".cw-floor .cw-floor-no")).to_have_text(
        ["#1", "#1 · reply 1", "#1 · reply 8", "#1 · reply 9", "#1 · reply 10"]
    )
    readme_shot(page, "widget-stacked", shot)
    click(newest.get_by_role("link", name="Show 6 hidden floors"))
    expect(newest.locator(".cw-floor")).to_have_count(11)
    expect(newest.locator(".cw-floor .cw-floor-no")).to_have_text(["#1"] + [f"#1 · reply {n}" for n in range(1, 11)])
    snap(page, shot, "unfolded")
    no_problems(page)


def test_a_deleted_comment_with_replies_stays_as_a_placeholder(host, page, shot):
    subject, first = two_level_subject(host.site, roots=2, replies=2)
    services.comment_soft_delete(comment=Comment.objects.get(pk=first.id), actor=first.author)
    page.goto(host.url(subject.key))
    frame = widget(page)
    placeholder = frame.locator(f"#c-{first.id}")
    expect(placeholder).to_have_text(re.compile("This comment was deleted."))
    expect(placeholder).not_to_contain_text("Top-level comment 0")
    expect(frame.locator(f"#replies-{first.id} .cw-c")).to_have_count(2)
    snap(page, shot, "placeholder")


def test_a_heading_in_a_comment_is_the_size_of_its_text_and_a_quote_is_set_off(host, page, shot):
    subject = SubjectFactory(site=host.site, key="article:md", title="Markdown", mode=Mode.FLAT)
    comment = CommentFactory(subject=subject, body="# Big news\n\n> what you said\n\nAnd my answer.")
    page.goto(host.url(subject.key))
    body = widget(page).locator(f"#c-{comment.id} .cw-body")
    expect(body.locator("h1")).to_have_text("Big news")
    sizes = body.evaluate(
        """(el) => ({
            heading: parseFloat(getComputedStyle(el.querySelector('h1')).fontSize),
            text: parseFloat(getComputedStyle(el.querySelector('p')).fontSize),
            quoteBorder: parseFloat(getComputedStyle(el.querySelector('blockquote')).borderLeftWidth),
            quoteIndent: el.querySelector('blockquote').getBoundingClientRect().left - el.getBoundingClientRect().left
                + parseFloat(getComputedStyle(el.querySelector('blockquote')).paddingLeft),
        })"""
    )
    assert sizes["heading"] <= sizes["text"] * 1.2, sizes
    assert sizes["quoteBorder"] >= 2 and sizes["quoteIndent"] >= 8, sizes
    snap(page, shot, "markdown-heading-and-quote")


@pytest.mark.parametrize("chosen", [None, "light", "dark"])
def test_the_demo_pages_theme_picker_shows_the_theme_the_widget_has(host, page, shot, chosen):
    subject, _ = two_level_subject(host.site, roots=1)
    page.goto(host.url(subject.key, **({"theme": chosen} if chosen else {})))
    expect(widget(page).locator("#cw-count")).to_have_text("1 comment")
    picked = page.locator("select[name='theme']").input_value()
    assert picked == (chosen or "auto")
    assert page.frames[1].evaluate("document.documentElement.dataset.theme") == picked
    snap(page, shot, f"theme-{picked}")


def test_dark_theme(host, page, shot):
    subject, _ = two_level_subject(host.site, roots=3, replies=2)
    page.goto(host.url(subject.key, theme="dark", user="alice"))
    frame = widget(page)
    signed_in_as(frame, "Alice")
    background = page.frames[1].evaluate("getComputedStyle(document.body).backgroundColor")
    assert background == "rgb(13, 17, 23)"
    readme_shot(page, "widget-dark", shot)
    no_problems(page)


def test_a_360_pixel_wide_phone(host, context, shot):
    page = context.new_page()
    page.problems = []
    page.set_viewport_size({"width": 360, "height": 740})
    subject, _ = two_level_subject(host.site, roots=4, replies=4)
    page.goto(host.url(subject.key, user="alice"))
    frame = widget(page)
    signed_in_as(frame, "Alice")
    overflow = page.frames[1].evaluate("document.documentElement.scrollWidth - document.documentElement.clientWidth")
    assert overflow <= 0
    like = frame.locator(".cw-like").first
    assert_seen_by_a_person(like)  # scrolled to, laid out, so it has a box to measure
    box = like.bounding_box()
    assert box is not None and box["width"] >= 24
    readme_shot(page, "widget-mobile", shot)


def test_chinese_with_relative_dates(host, page, shot):
    subject, _ = two_level_subject(host.site, roots=2)
    page.goto(host.url(subject.key, lang="zh-hans"))
    frame = widget(page)
    expect(frame.locator("#cw-count")).to_have_text("2 条评论")
    expect(frame.locator("time").first).to_have_text(re.compile("现在|秒"))
    snap(page, shot, "zh-hans")


def test_without_data_lang_the_widget_speaks_the_readers_language_not_the_host_pages(host, browser, shot):
    """The host page is in English (<html lang="en">); a reader whose browser asks for Chinese
    reads the widget in Chinese, as docs/embedding.md promises, unless the host names a language."""
    subject, _ = two_level_subject(host.site, roots=2)
    reader = browser.new_context(viewport={"width": 1100, "height": 900}, locale="zh-CN")
    try:
        page = reader.new_page()
        page.goto(host.url(subject.key))
        assert page.evaluate("document.documentElement.lang") == "en"
        expect(widget(page).locator("#cw-count")).to_have_text("2 条评论")
        snap(page, shot, "reader-in-chinese")
        page.goto(host.url(subject.key, lang="en"))  # data-lang="en" wins
        expect(widget(page).locator("#cw-count")).to_have_text("2 comments")
    finally:
        reader.close()

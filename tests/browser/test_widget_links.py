"""A link to one comment, as feeds, emails and the latest-comments sidebar make them
("<the host's page>#comment-<id>"), in a real browser on a host page of another origin: the
widget marks the comment where the list shows it, or shows it above the list with the floors
it answers, and the host page scrolls to it; a later change of the address's fragment does the
same without reloading."""

from __future__ import annotations

from playwright.sync_api import expect

from comments.models import Mode
from tests.browser.test_widget import host, no_problems, snap, widget  # noqa: F401 (host: a fixture)
from tests.factories import CommentFactory, SubjectFactory, UserFactory


def flat_subject(site, comments=30):
    subject = SubjectFactory(site=site, key="article:linked", title="Linked", mode=Mode.FLAT)
    author = UserFactory(display_name="Ann")
    made = [CommentFactory(subject=subject, author=author, body=f"Comment number {n}") for n in range(comments)]
    return subject, made


def in_view(page, locator) -> bool:
    box = locator.bounding_box()
    return box is not None and box["y"] >= 0 and box["y"] + min(box["height"], 40) <= page.viewport_size["height"]


def test_a_link_to_a_comment_on_the_first_page_marks_it_and_scrolls_to_it(host, page, shot):
    subject, made = flat_subject(host.site)
    target = made[17]  # far down the first page of 20, below the fold
    page.goto(host.url(subject.key) + f"#comment-{target.pk}")
    frame = widget(page)
    linked = frame.locator(f"#c-{target.pk}")
    expect(linked).to_have_class("cw-c cw-linked-c")
    expect(frame.locator(".cw-linked")).to_have_count(0)  # shown where it is
    page.wait_for_function("window.scrollY > 0")
    expect(linked).to_be_in_viewport()
    assert in_view(page, linked)
    snap(page, shot, "marked-in-place")

    # Another link on the same page, without a reload: the fragment of the address changes.
    other = made[2]
    page.evaluate(f"location.hash = '#comment-{other.pk}'")
    expect(frame.locator(f"#c-{other.pk}")).to_have_class("cw-c cw-linked-c")
    expect(frame.locator(".cw-linked-c")).to_have_count(1)
    no_problems(page)


def test_a_link_to_a_comment_beyond_the_first_page_shows_it_above_the_list_with_what_it_answers(host, page, shot):
    subject, made = flat_subject(host.site)
    answer = CommentFactory(
        subject=subject, author=UserFactory(display_name="Ben"), reply_to=made[3], body="The linked answer"
    )
    page.goto(host.url(subject.key) + f"#comment-{answer.pk}")
    frame = widget(page)
    box = frame.locator(".cw-linked")
    expect(box.get_by_role("heading")).to_have_text("The comment you followed a link to")
    expect(box.locator(f"#c-{answer.pk}")).to_contain_text("The linked answer")
    expect(box).to_contain_text("Comment number 3")  # the floor it answers
    expect(frame.locator(f"#cw-list #c-{answer.pk}")).to_have_count(0)  # not on the first page
    expect(box.locator(f"#c-{answer.pk}")).to_be_in_viewport()
    snap(page, shot, "shown-above-the-list")
    no_problems(page)

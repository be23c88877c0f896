"""The moderation console in a real browser: signing in, approving and rejecting from the
queue (in place, through the page's script), the keyboard shortcuts, a task in context and the
dashboard. A screenshot of each page state goes to test-output/browser/; with
``SCREENSHOTS_DIR=docs/screenshots`` the queue and dashboard shots are also saved there as
``console-queue.png`` and ``console-dashboard.png`` (the README's pictures)."""

from __future__ import annotations

import os
import re
import shutil
from datetime import timedelta
from pathlib import Path

import pytest
from django.utils import timezone
from playwright.sync_api import expect

from comments.models import Comment, Status
from comments.services import site_store
from moderation.models import AuditEntry, ReviewTask, TaskState
from moderation.services import comment_hold, review_task_open
from tests.browser.conftest import choose, click, type_into
from tests.factories import CommentFactory, SubjectFactory, UserFactory

pytestmark = pytest.mark.django_db(transaction=True)

SCREENSHOTS_DIR = os.environ.get("SCREENSHOTS_DIR")

BODIES = [
    (
        "Buy cheap watches at http://spam.example and http://spam.example/2 and http://spam.example/3 and more!",
        ["spam:links"],
    ),
    ("You are all idiots and this article is garbage.", ["report:abuse", "word:idiots"]),
    ("I think the author misread the second study; the sample size was only 40.", ["policy:pre"]),
    ("Same comment again, same comment again, same comment again.", ["spam:repeat"]),
]


def keep(path: Path, name: str) -> None:
    """Copy a screenshot to ``SCREENSHOTS_DIR`` when that is set (the README's pictures)."""
    if SCREENSHOTS_DIR:
        target = Path(SCREENSHOTS_DIR)
        target.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(path, target / name)


def hold(comment, reasons):
    comment_hold(comment_id=comment.id, site_id=comment.subject.site_id, why="test")
    return review_task_open(comment_id=comment.id, reasons=reasons)


@pytest.fixture
def queue(site, moderator):
    """A site with a small, realistic review queue; returns the held comments, queue order."""
    site.name = "The Daily Example"
    site_store(site=site)
    subject = SubjectFactory(site=site, title="Why the new bridge is late")
    held = []
    for index, (body, reasons) in enumerate(BODIES):
        author = UserFactory(username=f"reader{index}", display_name=["Max", "Troll Lord", "Ana", "Copy Cat"][index])
        comment = CommentFactory(subject=subject, author=author, body=body)
        task = hold(comment, reasons)
        # waiting for a while, as a real queue does
        waited = timezone.now() - timedelta(minutes=[95, 40, 1500, 7][index])
        Comment.objects.filter(pk=comment.id).update(created_at=waited)
        ReviewTask.objects.filter(pk=task.pk).update(created_at=waited)
        held.append((task, comment))
    held.sort(key=lambda pair: (-pair[0].priority, pair[0].pk))
    return [comment for _, comment in held]


def sign_in(page, live_server, username="mod", password="pw-123456", target="/console/"):
    page.goto(f"{live_server.url}/console/login/?next={target}")
    type_into(page.get_by_label("Username"), username)
    type_into(page.get_by_label("Password"), password)
    click(page.get_by_role("button", name="Sign in"))
    expect(page).to_have_url(f"{live_server.url}{target}")


def row(page, comment):
    return page.locator(f'li.task[data-comment="{comment.id}"]')


def test_approve_and_reject_from_the_queue(page, live_server, shot, queue, moderator):
    page.goto(f"{live_server.url}/console/")
    expect(page).to_have_url(f"{live_server.url}/console/login/?next=/console/")
    shot(page, "login")
    sign_in(page, live_server)
    expect(page.locator("li.task")).to_have_count(len(queue))
    keep(shot(page, "queue"), "console-queue.png")

    first, second = queue[0], queue[1]
    click(row(page, first).get_by_role("button", name="Approve"))
    expect(row(page, first)).to_have_class(has_class("is-done"))
    expect(row(page, first).locator(".badge.st-published")).to_have_text("published")
    expect(page.locator(".flash")).to_have_text("Approved 1 comment.")
    shot(page, "after-approve")

    click(row(page, second).get_by_role("button", name="Reject"))
    expect(row(page, second)).to_have_class(has_class("is-done"))
    expect(row(page, second).locator(".badge.st-rejected")).to_have_text("rejected")
    shot(page, "after-reject")

    assert Comment.objects.get(pk=first.id).status == Status.PUBLISHED
    assert Comment.objects.get(pk=second.id).status == Status.REJECTED
    assert set(AuditEntry.objects.filter(actor=moderator).values_list("action", "comment_id")) == {
        ("approve", first.id),
        ("reject", second.id),
    }
    # reloaded, the open queue holds only the undecided ones
    page.reload()
    expect(page.locator("li.task")).to_have_count(len(queue) - 2)
    shot(page, "queue-reloaded")
    assert page.problems == []


def test_bulk_reject_of_checked_comments(page, live_server, shot, queue):
    sign_in(page, live_server)
    for comment in queue[:3]:
        checkbox = row(page, comment).get_by_role("checkbox")
        click(checkbox)
        expect(checkbox).to_be_checked()
    shot(page, "three-checked")
    choose(page.get_by_label("With the selected"), "reject")
    click(page.get_by_role("button", name="Apply to selected"))
    for comment in queue[:3]:
        expect(row(page, comment)).to_have_class(has_class("is-done"))
    expect(page.locator(".flash")).to_have_text("Rejected 3 comments.")
    shot(page, "after-bulk-reject")
    assert {Comment.objects.get(pk=c.id).status for c in queue[:3]} == {Status.REJECTED}
    assert Comment.objects.get(pk=queue[3].id).status == Status.PENDING
    assert page.problems == []


def test_keyboard_moves_claims_and_approves(page, live_server, shot, queue, moderator):
    sign_in(page, live_server)
    page.keyboard.press("j")
    current = row(page, queue[0])
    expect(current).to_have_class(has_class("is-selected"))
    expect(current.locator("[data-claim]")).to_have_text("You are working on this task")
    shot(page, "selected-with-j")
    task = ReviewTask.objects.get(comment_id=queue[0].id)
    assert task.claimed_by == moderator

    page.keyboard.press("j")
    expect(row(page, queue[1])).to_have_class(has_class("is-selected"))
    expect(row(page, queue[1]).locator("[data-claim]")).to_have_text("You are working on this task")
    expect(current.locator("[data-claim]")).to_have_text("")  # given back when moving on
    page.keyboard.press("k")
    expect(current).to_have_class(has_class("is-selected"))

    page.keyboard.press("a")
    expect(current).to_have_class(has_class("is-done"))
    expect(row(page, queue[1])).to_have_class(has_class("is-selected"))  # moved on to the next
    shot(page, "approved-with-a")
    assert Comment.objects.get(pk=queue[0].id).status == Status.PUBLISHED

    page.keyboard.press("r")
    expect(row(page, queue[1])).to_have_class(has_class("is-done"))
    assert Comment.objects.get(pk=queue[1].id).status == Status.REJECTED

    page.keyboard.press("?")
    expect(page.get_by_role("dialog")).to_be_visible()
    shot(page, "shortcut-help")
    page.keyboard.press("Escape")
    expect(page.get_by_role("dialog")).to_be_hidden()
    assert page.problems == []


def test_a_task_claimed_by_another_moderator_is_refused(page, live_server, shot, queue, site):
    other = UserFactory(username="other", display_name="Olga")
    site.moderators.add(other)
    task = ReviewTask.objects.get(comment_id=queue[0].id)
    ReviewTask.objects.filter(pk=task.pk).update(
        claimed_by=other, claim_expires_at=timezone.now() + timedelta(minutes=5)
    )
    sign_in(page, live_server)
    target = row(page, queue[0])
    expect(target.locator("[data-claim]")).to_have_text("Claimed by Olga")
    page.keyboard.press("j")
    page.keyboard.press("a")
    expect(page.locator(".flash")).to_contain_text("Olga is working on this task.")
    shot(page, "claimed-by-another")
    assert Comment.objects.get(pk=queue[0].id).status == Status.PENDING
    # the refused claim and the refused action are the only failed requests
    assert page.problems and all("status of 403" in p for p in page.problems), page.problems


def test_task_in_context_and_the_dashboard(page, live_server, shot, queue, site, moderator):
    # a thread around the first held comment, and some decisions over the past days
    thread = SubjectFactory(site=site, title="Budget 2027")
    parent = CommentFactory(subject=thread, body="The budget doubles the rail spending.")
    held = CommentFactory(subject=thread, reply_to=parent, body="Doubling it is a scandal, the minister should resign.")
    CommentFactory(subject=thread, reply_to=held, body="Resign over a budget line? Come on.")
    task = hold(held, ["report:abuse"])
    now = timezone.now()
    for day in range(14):
        for n in range((day * 7) % 5 + 1):
            done = hold(CommentFactory(subject=thread), ["spam:links"])
            decided = now - timedelta(days=day, minutes=n)
            ReviewTask.objects.filter(pk=done.pk).update(
                state=TaskState.DONE,
                decision="approve",
                decided_by=moderator,
                decided_at=decided,
                created_at=decided - timedelta(minutes=5 + (day * 13) % 40 + n * 3),
            )

    sign_in(page, live_server, target=f"/console/tasks/{task.pk}/")
    expect(page.locator(".comment.is-focus")).to_contain_text("minister should resign")
    expect(page.locator(".chain .comment")).to_contain_text("rail spending")
    expect(page.locator(".replies .comment")).to_contain_text("Come on.")
    expect(page.locator("[data-claim]")).to_have_text("You are working on this task")
    shot(page, "task-in-context")
    page.keyboard.press("r")  # on the task page, r rejects this comment (a plain form post)
    expect(page.locator(".message.success")).to_have_text("Rejected 1 comment.")
    shot(page, "task-rejected")
    assert Comment.objects.get(pk=held.id).status == Status.REJECTED

    click(page.get_by_role("link", name="Dashboard"))
    expect(page.locator("svg.chart rect.bar")).to_have_count(14)
    expect(page.locator("svg.chart polyline.line")).to_have_count(1)
    expect(page.locator("[data-open-total]")).to_have_text(str(len(queue)))
    keep(shot(page, "dashboard"), "console-dashboard.png")
    assert page.problems == []


def test_dismissing_the_reports_of_a_published_comment_from_its_task_page(page, live_server, shot, site, moderator):
    from comments.queries import comment_ref_for_viewer
    from moderation.services import report_create

    subject = SubjectFactory(site=site, title="Why the new bridge is late")
    comment = CommentFactory(subject=subject, body="The contractor's own report says the steel came late.")
    reader = UserFactory(username="touchy", display_name="Touchy Reader")
    report_create(
        comment=comment_ref_for_viewer(comment_id=comment.id, user=reader),
        reporter=reader,
        reason="abuse",
        detail="rude to the contractor",
    )
    task = ReviewTask.objects.get(comment_id=comment.id)
    sign_in(page, live_server, target=f"/console/tasks/{task.pk}/")
    expect(page.locator(".reports")).to_contain_text("rude to the contractor")
    type_into(page.locator("#task-form").get_by_label("Reason"), "a fair point, not abuse")
    shot(page, "task-with-a-report")
    click(page.get_by_role("button", name="Dismiss reports"))
    expect(page.locator(".message.success")).to_have_text("Dismissed the reports of 1 comment.")
    expect(page.get_by_role("button", name="Dismiss reports")).to_have_count(0)
    shot(page, "reports-dismissed")
    assert Comment.objects.get(pk=comment.id).status == Status.PUBLISHED
    entry = AuditEntry.objects.get(action="dismiss", comment_id=comment.id)
    assert entry.actor == moderator and entry.reason == "a fair point, not abuse; reports dismissed: 1 abuse"
    assert page.problems == []


def has_class(name: str):
    """A regular expression matching a class attribute that contains ``name``."""
    return re.compile(rf"(^|\s){re.escape(name)}(\s|$)")


def test_word_list_sanctions_and_audit_log_pages(page, live_server, shot, site, moderator):
    UserFactory(username="troll", display_name="Troll Lord")
    sign_in(page, live_server, target="/console/words/")
    type_into(page.get_by_label("Word or phrase"), "idiots")
    choose(page.get_by_label("Action"), "review")
    click(page.get_by_role("button", name="Add"))
    expect(page.locator(".message.success")).to_contain_text("idiots")
    expect(page.locator("table.grid tbody tr")).to_have_count(1)
    shot(page, "word-added")

    click(page.get_by_role("link", name="Sanctions"))
    type_into(page.get_by_label("User (id or username)"), "nobody")
    click(page.get_by_role("button", name="Apply"))
    expect(page.locator(".field-error")).to_have_text("No user with this id or username.")
    shot(page, "sanction-error")
    type_into(page.get_by_label("User (id or username)"), "troll")
    type_into(page.get_by_label("Reason", exact=True), "insults")
    click(page.get_by_role("button", name="Apply"))
    expect(page.locator("table.grid tbody tr")).to_contain_text("Troll Lord")
    shot(page, "sanction-added")

    click(page.get_by_role("link", name="Audit log"))
    expect(page.locator("table.log tbody tr")).to_have_count(2)
    expect(page.locator("table.log")).to_contain_text("sanction_ban")
    expect(page.locator("table.log")).to_contain_text("word_add")
    shot(page, "audit-log")
    # the form sent back with its error is a 400 page, which the browser logs; nothing else
    assert len(page.problems) == 1 and "status of 400" in page.problems[0], page.problems

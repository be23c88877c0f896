"""The XSS corpus in the moderation console and the Django admin, in Chromium, as a moderator
signed in sees it: every payload a held comment's body, its author's display name (the host's
SSO), its subject's title and URL (``POST /api/v1/subjects``), the name of the moderator who
claimed it, the details of readers' reports and the reasons of moderators' decisions; on every
page of the review queue, of the audit log and of the admin's change lists of comments, users
and subjects, and on the task pages and change forms of samples (``corpus.SAMPLE``,
``FORMS_SAMPLE``). Nothing may run, and no link may lead to ``javascript:`` (``harness.Watch``)."""

from __future__ import annotations

import math

import pytest
from playwright.sync_api import expect
from rest_framework.test import APIClient

from comments import services
from comments.models import ModerationPolicy, Subject
from comments.queries import comment_ref_for_viewer
from moderation.actions import comment_moderate
from moderation.models import ReportReason, ReviewTask, TaskState
from moderation.services import report_create, review_task_claim
from tests.browser.conftest import click, type_into
from tests.factories import CommentFactory, SiteFactory, SubjectFactory, UserFactory

from . import inputs
from .corpus import PAYLOADS, SAMPLE

pytestmark = pytest.mark.django_db(transaction=True)

SITE = "xss"
# The admin's change forms put each text in a field's value or its text (an <input>, a
# <textarea>) or in plain text: they are opened for the payloads of the sample that break out of
# those, and one plain element. (Each is a fifth of a second of the server's time or more.)
FORMS_SAMPLE = [p for p in SAMPLE if p.text.startswith(('"', "'", "</", "<img"))]


@pytest.fixture
def queue(live_server):
    """A site whose every comment waits for review (pre-moderation): one by each payload's
    reader, on a page titled by that payload, claimed by a moderator named by it; five comments
    of the moderator's, each reported by a fifth of the readers, whose reports' details are the
    payloads. The site and the signed-in moderator are named by payloads too."""
    site = SiteFactory(key=SITE, name=PAYLOADS[0].name, moderation=ModerationPolicy.PRE)
    mod = UserFactory(username="mod", display_name=PAYLOADS[1].name, is_staff=True, is_superuser=True)
    readers = {
        p.number: services.sso_user_upsert(site=site, external_id=f"xss-{p.number}", name=p.name) for p in PAYLOADS
    }
    api = APIClient()
    token, _ = services.token_issue(user=mod, site=site)
    comments = {}
    for p in PAYLOADS:
        subject_id = inputs.subject_create(api, token=token, site=SITE, key=p.key, title=p.title, url=p.url)
        comments[p.number] = CommentFactory(
            subject=Subject.objects.get(pk=subject_id), author=readers[p.number], body=p.text
        ).pk
    site.moderators.add(*readers.values())
    tasks = dict(ReviewTask.objects.filter(state=TaskState.OPEN).values_list("comment_id", "pk"))
    assert set(tasks) == set(comments.values())
    for p in PAYLOADS:
        review_task_claim(task_id=tasks[comments[p.number]], moderator=readers[p.number])

    reported_on = SubjectFactory(site=site, key="reported", title="Reported comments")
    reported = [CommentFactory(subject=reported_on, author=mod, body=f"Reported {n}") for n in range(5)]
    reasons = list(ReportReason)
    for p in PAYLOADS:
        reader = readers[p.number]
        target = comment_ref_for_viewer(comment_id=reported[p.number % len(reported)].pk, user=reader)
        report_create(comment=target, reporter=reader, reason=reasons[p.number % len(reasons)], detail=p.text)
    return {"site": site, "readers": readers, "comments": comments, "reported": [c.pk for c in reported]}


def pages(page, url: str, *, next_link: str):
    """``url``, then each page its ``next_link`` leads to."""
    page.goto(url)
    yield page.url
    for _ in range(len(PAYLOADS)):  # a bound: never more pages than that
        if not page.locator(next_link).count():
            return
        page.goto(page.locator(next_link).first.evaluate("(a) => a.href"))
        yield page.url
    raise AssertionError(f"more pages than the payloads could fill: {page.url}")


def test_no_payload_runs_in_the_console_or_the_admin(page, watch, live_server, queue, shot):
    service = live_server.url
    page.goto(f"{service}/console/login/?next=/console/")
    type_into(page.get_by_label("Username"), "mod")
    type_into(page.get_by_label("Password"), "pw-123456")
    click(page.get_by_role("button", name="Sign in"))
    expect(page).to_have_url(f"{service}/console/")

    # the review queue, every page: bodies, authors, subjects' titles, claims, reasons
    seen = 0
    for url in pages(page, f"{service}/console/?site={SITE}", next_link="a[rel=next]"):
        seen += page.locator("li.task").count()
        watch.check(f"console queue {url}", page)
    assert seen == len(PAYLOADS) + len(queue["reported"])
    shot(page, "queue")

    # a task in context: the reports' details and reporters, the subject's title and link
    task_ids = dict(ReviewTask.objects.values_list("comment_id", "pk"))
    for comment_id in queue["reported"]:
        page.goto(f"{service}/console/tasks/{task_ids[comment_id]}/")
        assert page.locator("ul.reports > li").count() >= len(PAYLOADS) // 5
        watch.check(f"console task of reported comment {comment_id}", page)
    for p in SAMPLE:
        page.goto(f"{service}/console/tasks/{task_ids[queue['comments'][p.number]]}/")
        watch.check(f"console task of {p}", page)

    # the decisions, each with a payload as its reason, in the audit log
    for p in PAYLOADS:
        comment_moderate(
            comment_id=queue["comments"][p.number], actor=queue["readers"][p.number], action="approve", reason=p.text
        )
    seen = 0
    for url in pages(page, f"{service}/console/log/?site={SITE}", next_link="a[rel=next]"):
        seen += page.locator("table.log tbody tr").count()
        watch.check(f"console audit log {url}", page)
    assert seen >= len(PAYLOADS)
    page.goto(f"{service}/console/?site={SITE}&state=done")
    watch.check("console queue of decided tasks", page)

    # the admin's change lists, every page, and the change forms of the sample
    for model, count in (("comment", len(PAYLOADS) + 5), ("user", len(PAYLOADS) + 1), ("subject", len(PAYLOADS) + 1)):
        for number in range(1, math.ceil(count / 100) + 1):
            page.goto(f"{service}/admin/comments/{model}/?p={number}")
            expect(page.locator("#result_list")).to_be_visible()
            watch.check(f"admin {model} list, page {number}", page)
    assert len(FORMS_SAMPLE) >= 6
    for p in FORMS_SAMPLE:
        comment = queue["comments"][p.number]
        for model, pk in (
            ("comment", comment),
            ("user", queue["readers"][p.number].pk),
            ("subject", Subject.objects.get(site=queue["site"], key=p.key).pk),
        ):
            page.goto(f"{service}/admin/comments/{model}/{pk}/change/")
            expect(page.locator("#content-main form")).to_be_visible()
            watch.check(f"admin {model} form of {p}", page)
    shot(page, "admin-form")
    watch.assert_clean()

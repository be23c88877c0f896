"""The admin, the console and the API docs in a real browser under the service's
Content-Security-Policy (issue 33, F11): a person signs in and uses each, its scripts and styles
run, the browser reports no violation of the policy, and inline code that a page did not mark
with its nonce does not run. And a host page with a strict policy of its own (the demo host's)
embeds the widget. Screenshots go to test-output/browser/."""

from __future__ import annotations

import re

import pytest
from django.utils import timezone
from playwright.sync_api import expect

from comments.models import User
from demo.management.commands.demo_host import host_csp
from moderation.services import comment_hold, review_task_open
from tests.browser.conftest import assert_seen_by_a_person, click, type_into
from tests.browser.test_widget import host, two_level_subject, widget  # noqa: F401 (host: a fixture)
from tests.factories import CommentFactory, SubjectFactory, UserFactory

pytestmark = pytest.mark.django_db(transaction=True)

# Records what the browser refuses under the page's policy, in every document, before any of the
# page's own scripts run (Playwright's init scripts are not subject to the page's policy).
WATCH_VIOLATIONS = """
window.__violations = [];
document.addEventListener('securitypolicyviolation', (e) => {
  window.__violations.push(`${e.effectiveDirective} refused ${e.blockedURI || 'inline code'}`);
});
"""
INJECT_INLINE_SCRIPT = """() => {
  const script = document.createElement('script');
  script.textContent = 'window.__inlineRan = true;';
  document.head.appendChild(script);
  return new Promise((done) => setTimeout(() => done(window.__inlineRan === true), 50));
}"""


@pytest.fixture
def watched(page):
    page.context.add_init_script(WATCH_VIOLATIONS)
    return page


def assert_no_violation(page) -> None:
    assert page.evaluate("window.__violations") == []
    assert [p for p in page.problems if "Content Security Policy" in p] == []


def assert_inline_code_is_refused(page) -> None:
    """The policy is in force: a script written into the page without the nonce does not run
    (the one violation the browser then reports is this test's own, and is cleared)."""
    assert page.evaluate(INJECT_INLINE_SCRIPT) is False
    assert page.evaluate("window.__violations.splice(0)") == ["script-src-elem refused inline"]
    page.problems[:] = [p for p in page.problems if "Content Security Policy" not in p]


def test_the_admin_works_under_the_policy(watched, live_server, shot):
    page = watched
    failed: list[str] = []
    page.on("response", lambda r: failed.append(r.url) if r.status >= 400 else None)
    UserFactory(username="root", is_staff=True, is_superuser=True)
    editor = UserFactory(username="editor", display_name="Edith")
    page.goto(f"{live_server.url}/admin/login/?next=/admin/")
    type_into(page.get_by_label("Username"), "root")
    type_into(page.get_by_label("Password"), "pw-123456")
    click(page.get_by_role("button", name="Log in"))
    expect(page).to_have_url(f"{live_server.url}/admin/")
    assert_no_violation(page)

    # a change list, with its filters' script
    click(page.get_by_role("link", name="Users", exact=True))
    expect(page).to_have_url(f"{live_server.url}/admin/comments/user/")
    shot(page, "admin-change-list")
    click(page.get_by_role("link", name="editor", exact=True))
    expect(page).to_have_url(re.compile(rf"/admin/comments/user/{editor.pk}/change/"))

    # a change form's date and time widgets, drawn by the admin's scripts
    date, time = page.locator("#id_date_joined_0"), page.locator("#id_date_joined_1")
    date_shortcuts = page.locator("#id_date_joined_0 + .datetimeshortcuts")
    time_shortcuts = page.locator("#id_date_joined_1 + .datetimeshortcuts")
    type_into(date, "2020-01-02")
    click(date_shortcuts.get_by_role("link", name="Today"))
    expect(date).to_have_value(timezone.localdate().isoformat())
    click(date_shortcuts.get_by_role("link", name="Choose a Date"))
    calendar = page.locator(".calendarbox").filter(visible=True)
    assert_seen_by_a_person(calendar)
    shot(page, "admin-calendar")
    click(calendar.get_by_role("link", name="15", exact=True))
    expect(date).to_have_value(timezone.localdate().replace(day=15).isoformat())
    click(time_shortcuts.get_by_role("link", name="Choose a Time"))
    click(page.locator(".clockbox").filter(visible=True).get_by_role("link", name="Noon"))
    expect(time).to_have_value("12:00:00")
    # the permission picker (two lists and a filter, built by SelectFilter2.js)
    assert_seen_by_a_person(page.locator("#id_user_permissions_filter"))
    assert_no_violation(page)
    assert_inline_code_is_refused(page)

    click(page.get_by_role("button", name="Save and continue editing"))
    expect(page.locator(".messagelist .success")).to_contain_text("was changed successfully")
    shot(page, "admin-change-form-saved")
    joined = timezone.localtime(User.objects.get(pk=editor.pk).date_joined)
    assert (joined.day, joined.hour, joined.minute) == (15, 12, 0)
    assert_no_violation(page)
    # Every resource of the pages loaded; the one 404 in the console is Chromium's own request
    # for /favicon.ico, which the admin names no other icon for.
    assert failed == []
    assert set(page.problems) <= {
        "console.error: Failed to load resource: the server responded with a status of 404 (Not Found)"
    }


def test_the_console_works_under_the_policy(watched, live_server, shot, site, moderator):
    page = watched
    subject = SubjectFactory(site=site, title="Why the new bridge is late")
    comment = CommentFactory(subject=subject, body="Buy cheap watches at http://spam.example now")
    comment_hold(comment_id=comment.id, site_id=site.id, why="test")
    review_task_open(comment_id=comment.id, reasons=["spam:links"])

    page.goto(f"{live_server.url}/console/login/?next=/console/")
    assert_no_violation(page)
    type_into(page.get_by_label("Username"), "mod")
    type_into(page.get_by_label("Password"), "pw-123456")
    click(page.get_by_role("button", name="Sign in"))
    expect(page).to_have_url(f"{live_server.url}/console/")
    # console.js runs: the keyboard selects and claims the task
    page.keyboard.press("j")
    task = page.locator(f'li.task[data-comment="{comment.id}"]')
    expect(task).to_have_class(re.compile(r"(^|\s)is-selected(\s|$)"))
    expect(task.locator("[data-claim]")).to_have_text("You are working on this task")
    shot(page, "console-queue")
    assert_no_violation(page)
    assert_inline_code_is_refused(page)

    click(page.get_by_role("link", name="Dashboard"))
    expect(page).to_have_url(re.compile(r"/console/dashboard/"))
    shot(page, "console-dashboard")
    assert_no_violation(page)
    assert page.problems == []


def test_the_api_docs_render_under_the_policy(watched, live_server, shot):
    page = watched
    page.goto(f"{live_server.url}/api/v1/docs/")
    operation = page.get_by_text("Log in with a password")
    assert_seen_by_a_person(operation)
    click(operation)
    assert_seen_by_a_person(page.get_by_role("button", name="Try it out"))
    shot(page, "api-docs")
    assert_no_violation(page)
    assert_inline_code_is_refused(page)
    assert page.problems == []


def test_a_host_page_with_a_strict_policy_of_its_own_embeds_the_widget(watched, host, shot):
    """The demo host page's policy (demo_host.host_csp) allows the service's loader, its counts
    call and its frame, and no inline code: the widget works under it, page after page."""
    page = watched
    subject, _ = two_level_subject(host.site, roots=2)
    for lang, count in (("en", "2 comments"), ("zh-hans", "2 条评论")):
        response = page.goto(host.url(subject.key, lang=lang))
        assert response is not None and response.headers["content-security-policy"] == host_csp(host.service)
        expect(widget(page).locator("#cw-count")).to_have_text(count)
        expect(page.locator(f'[data-comment-count="{subject.key}"]')).to_have_text("2")
        assert_no_violation(page)
    shot(page, "host-page")
    assert_inline_code_is_refused(page)
    assert [p for p in page.problems if "favicon" not in p] == []

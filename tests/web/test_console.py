"""The moderation console (/console/): who may use it, each page, the queue's filters, single
and bulk actions with their audit entries, claims between two moderators, the word list,
sanctions, the audit log and the dashboard's figures. Django's test client, real database."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.test import Client
from django.utils import timezone

from comments.models import Comment, Status
from moderation import queries
from moderation.models import AuditEntry, ReviewTask, Sanction, TaskState, WordEntry
from moderation.services import comment_hold, review_task_open

from ..factories import CommentFactory, SiteFactory, SubjectFactory, UserFactory

CONSOLE = "/console/"


def held(subject, *, reasons=("report:spam",), body=None):
    """A comment held for review (pending) with its open task."""
    comment = CommentFactory(subject=subject, **({"body": body} if body else {}))
    comment_hold(comment_id=comment.id, site_id=subject.site_id, why="test")
    task = review_task_open(comment_id=comment.id, reasons=list(reasons))
    return comment, task


def status_of(comment) -> str:
    return Comment.objects.get(pk=comment.id).status


def signed_in(user) -> Client:
    client = Client()
    client.force_login(user)
    return client


@pytest.fixture
def mod(moderator):
    return signed_in(moderator)


# --- who may use it ------------------------------------------------------------------------

PAGES = ["", "dashboard/", "words/", "sanctions/", "log/"]


@pytest.mark.parametrize("page", PAGES)
def test_anonymous_visitors_are_sent_to_the_console_login(db, page):
    response = Client().get(CONSOLE + page)
    assert response.status_code == 302
    assert response["Location"].startswith("/console/login/?next=/console/")


def test_login_page_signs_a_moderator_in_and_lands_on_the_queue(site, moderator):
    client = Client()
    page = client.get("/console/login/")
    assert page.status_code == 200 and b'name="password"' in page.content
    wrong = client.post("/console/login/", {"username": "mod", "password": "nope"})
    assert wrong.status_code == 200 and wrong.context["user"].is_anonymous
    response = client.post("/console/login/", {"username": "mod", "password": "pw-123456", "next": "/console/log/"})
    assert response.status_code == 302 and response["Location"] == "/console/log/"
    # an outside "next" is ignored
    client.logout()
    response = client.post(
        "/console/login/", {"username": "mod", "password": "pw-123456", "next": "https://evil.example/"}
    )
    assert response["Location"] == "/console/"


@pytest.mark.parametrize("page", PAGES)
def test_users_who_moderate_nothing_get_403(site, page):
    response = signed_in(UserFactory()).get(CONSOLE + page)
    assert response.status_code == 403
    assert b"Only site moderators and staff" in response.content


def test_a_moderator_of_one_site_cannot_see_or_touch_another(site, subject, mod):
    other_site = SiteFactory()
    foreign, task = held(SubjectFactory(site=other_site))
    for page in PAGES[:1] + PAGES[2:]:
        assert mod.get(CONSOLE + page, {"site": other_site.key}).status_code == 403, page
    assert mod.get(f"/console/tasks/{task.pk}/").status_code == 403
    assert mod.post(f"/console/tasks/{task.pk}/claim").status_code == 403
    response = mod.post("/console/actions", {"do": f"reject:{foreign.id}"}, follow=True)
    assert "Only moderators of this site" in response.content.decode()
    assert status_of(foreign) == Status.PENDING
    assert ReviewTask.objects.get(pk=task.pk).state == TaskState.OPEN
    assert not AuditEntry.objects.filter(comment_id=foreign.id, actor__isnull=False).exists()
    assert mod.post("/console/words/", {"site": other_site.key, "word": "spam", "action": "block"}).status_code == 403
    assert not WordEntry.objects.exists()
    assert mod.get(CONSOLE, {"site": "no-such-site"}).status_code == 404


def test_staff_see_every_site(site, subject):
    other = SiteFactory(name="Other site")
    held(SubjectFactory(site=other))
    staff = signed_in(UserFactory(is_staff=True))
    page = staff.get(CONSOLE, {"site": other.key})
    assert page.status_code == 200
    assert [s.key for s, _ in page.context["sites"]] == sorted([site.key, other.key])
    assert len(page.context["tasks"]) == 1


def test_posts_need_the_csrf_token(site, subject, moderator):
    comment, _ = held(subject)
    client = Client(enforce_csrf_checks=True)
    client.force_login(moderator)
    assert client.post("/console/actions", {"do": f"approve:{comment.id}"}).status_code == 403
    assert status_of(comment) == Status.PENDING


# --- the queue -----------------------------------------------------------------------------


def test_queue_lists_open_tasks_highest_priority_first_with_the_comment(site, subject, mod):
    low, _ = held(subject, reasons=["policy:pre"], body="a quiet one")
    high, _ = held(subject, reasons=["word:darn", "spam:links"], body="a loud one")
    page = mod.get(CONSOLE)
    assert page.status_code == 200
    assert [t["comment"]["id"] for t in page.context["tasks"]] == [high.id, low.id]
    html = page.content.decode()
    assert "a loud one" in html and "word:darn" in html and subject.title in html
    assert f'value="approve:{high.id}"' in html


def test_queue_filters_by_reason_age_and_state(site, subject, mod):
    reported, _ = held(subject, reasons=["report:abuse"])
    worded, old_task = held(subject, reasons=["word:darn"])
    ReviewTask.objects.filter(pk=old_task.pk).update(created_at=timezone.now() - timedelta(hours=30))

    def ids(**params):
        response = mod.get(CONSOLE, params)
        assert response.status_code == 200
        return [t["comment"]["id"] for t in response.context["tasks"]]

    assert ids(reason="report") == [reported.id]
    assert ids(reason="word") == [worded.id]
    assert ids(reason="spam") == []
    assert ids(age="24h") == [worded.id]
    assert ids(age="1h", reason="report") == []
    assert ids(state="done") == []
    mod.post("/console/actions", {"do": f"approve:{reported.id}"})
    assert ids(state="done") == [reported.id]
    assert ids() == [worded.id]


@pytest.mark.parametrize(
    "params",
    [
        {"state": "sideways"},
        {"age": "3y"},
        {"reason": "gossip"},
        {"cursor": "not-a-cursor"},
        {"site": "x" * 100},
    ],
)
def test_bad_filters_are_a_clear_400(site, subject, mod, params):
    held(subject)
    response = mod.get(CONSOLE, params)
    assert response.status_code == 400
    assert b"That request did not work" in response.content


def test_queue_pages_follow_the_cursor(site, subject, mod, monkeypatch):
    monkeypatch.setattr("moderation.views.QUEUE_PAGE", 2)
    made = [held(subject)[0].id for _ in range(3)]
    first = mod.get(CONSOLE)
    assert len(first.context["tasks"]) == 2 and first.context["next_url"]
    second = mod.get(first.context["next_url"])
    seen = [t["comment"]["id"] for t in first.context["tasks"] + second.context["tasks"]]
    assert sorted(seen) == sorted(made) and second.context["next_url"] is None


def test_task_page_shows_the_comment_in_context(site, subject, mod):
    top = CommentFactory(subject=subject, body="the top comment")
    middle = CommentFactory(subject=subject, reply_to=top, body="the middle comment")
    comment = CommentFactory(subject=subject, reply_to=middle, body="the held comment")
    CommentFactory(subject=subject, reply_to=comment, body="a direct reply")
    comment_hold(comment_id=comment.id, site_id=site.pk, why="3 reports")
    task = review_task_open(comment_id=comment.id, reasons=["report:abuse"])
    page = mod.get(f"/console/tasks/{task.pk}/")
    assert page.status_code == 200
    assert [c["id"] for c in page.context["chain"]] == [top.id, middle.id]
    assert [c["body"] for c in page.context["replies"]] == ["a direct reply"]
    assert page.context["comment"]["status"] == Status.PENDING  # the true status
    html = page.content.decode()
    for text in ("the top comment", "the middle comment", "the held comment", "a direct reply"):
        assert text in html
    assert f'value="approve:{comment.id}"' in html
    assert mod.get("/console/tasks/999999/").status_code == 404


# --- actions -------------------------------------------------------------------------------


def test_approve_from_a_row_publishes_closes_the_task_and_audits(site, subject, mod, moderator):
    comment, task = held(subject)
    response = mod.post("/console/actions", {"do": f"approve:{comment.id}", "next": "/console/?state=open"})
    assert response.status_code == 302 and response["Location"] == "/console/?state=open"
    assert status_of(comment) == Status.PUBLISHED
    task.refresh_from_db()
    assert task.state == TaskState.DONE and task.decision == "approve" and task.decided_by == moderator
    entry = AuditEntry.objects.get(comment_id=comment.id, actor=moderator)
    assert (entry.action, entry.from_status, entry.to_status) == ("approve", "pending", "published")


def test_bulk_reject_acts_on_every_checked_comment_with_one_audit_entry_each(site, subject, mod, moderator):
    comments = [held(subject)[0] for _ in range(3)]
    response = mod.post(
        "/console/actions",
        {"action": "reject", "comment": [c.id for c in comments], "reason": "off topic"},
        follow=True,
    )
    assert "Rejected 3 comments." in response.content.decode()
    assert {status_of(c) for c in comments} == {Status.REJECTED}
    entries = AuditEntry.objects.filter(actor=moderator, action="reject")
    assert sorted(e.comment_id for e in entries) == sorted(c.id for c in comments)
    assert {e.reason for e in entries} == {"off topic"}
    assert not ReviewTask.objects.filter(state=TaskState.OPEN).exists()


@pytest.mark.parametrize(
    "action, check",
    [
        ("pin", lambda c: c.pinned),
        ("feature", lambda c: c.featured),
        ("delete", lambda c: c.status == Status.DELETED),
    ],
)
def test_pin_feature_and_delete_from_the_console(site, subject, mod, moderator, action, check):
    comment = CommentFactory(subject=subject)
    mod.post("/console/actions", {"action": action, "comment": [comment.id]})
    assert check(Comment.objects.get(pk=comment.id))
    assert AuditEntry.objects.filter(comment_id=comment.id, action=action, actor=moderator).count() == 1


def test_one_refused_comment_in_a_bulk_action_leaves_the_others_done(site, subject, mod):
    fine, _ = held(subject)
    foreign, _ = held(SubjectFactory(site=SiteFactory()))
    response = mod.post(
        "/console/actions", {"action": "approve", "comment": [fine.id, foreign.id]}, HTTP_ACCEPT="application/json"
    )
    assert response.status_code == 200
    results = {r["comment_id"]: r for r in response.json()["results"]}
    assert results[fine.id]["ok"] and results[fine.id]["status"] == "published"
    assert not results[foreign.id]["ok"] and results[foreign.id]["code"] == "permission_denied"
    assert status_of(fine) == Status.PUBLISHED and status_of(foreign) == Status.PENDING


@pytest.mark.parametrize(
    "data",
    [
        {},
        {"action": "approve"},
        {"action": "explode", "comment": ["1"]},
        {"action": "approve", "comment": ["abc"]},
        {"do": "approve:xyz"},
        {"do": "nuke:5"},
        {"action": "approve", "comment": ["9" * 30]},
    ],
)
def test_bad_action_posts_are_refused_plainly(site, subject, mod, data):
    response = mod.post("/console/actions", data, HTTP_ACCEPT="application/json")
    assert response.status_code == 400 and response.json()["error"]["code"] == "invalid"
    assert mod.post("/console/actions", data).status_code == 302  # back, with a message


def reported(comment, *reasons):
    """``comment`` reported once for each reason, each time by another reader."""
    from comments.queries import comment_ref_for_viewer
    from moderation.services import report_create

    for reason in reasons:
        reader = UserFactory()
        report_create(
            comment=comment_ref_for_viewer(comment_id=comment.id, user=reader),
            reporter=reader,
            reason=reason,
            detail=f"it is {reason}",
        )
    return ReviewTask.objects.get(comment_id=comment.id, state=TaskState.OPEN)


def test_the_reports_of_a_published_comment_are_dismissed_from_its_task_page_and_audited(site, subject, mod, moderator):
    from moderation.models import Report

    comment = CommentFactory(subject=subject, body="A sharp but fair point")
    task = reported(comment, "abuse", "spam")
    page = mod.get(f"/console/tasks/{task.pk}/")
    html = page.content.decode()
    assert [r["reason"] for r in page.context["reports"]] == ["abuse", "spam"]
    assert "it is abuse" in html  # what the reader said, to judge by
    assert f'value="dismiss:{comment.id}"' in html and "Dismiss reports" in html

    response = mod.post(
        "/console/actions",
        {"do": f"dismiss:{comment.id}", "reason": "fair criticism", "next": f"/console/tasks/{task.pk}/"},
        follow=True,
    )
    assert "Dismissed the reports of 1 comment." in response.content.decode()
    assert status_of(comment) == Status.PUBLISHED
    task.refresh_from_db()
    assert task.state == TaskState.DONE and task.decision == "dismiss" and task.decided_by == moderator
    entry = AuditEntry.objects.get(comment_id=comment.id, actor=moderator)
    assert entry.action == "dismiss" and (entry.from_status, entry.to_status) == (None, None)
    assert entry.reason == "fair criticism; reports dismissed: 1 abuse, 1 spam"
    assert not Report.objects.filter(comment_id=comment.id).exists()  # they count towards no threshold again
    assert "Dismiss reports" not in mod.get(f"/console/tasks/{task.pk}/").content.decode()  # nothing left to dismiss


def test_reports_are_dismissed_only_on_a_published_comment_that_has_some(site, subject, mod):
    pending = CommentFactory(subject=subject)
    task = reported(pending, "spam")
    comment_hold(comment_id=pending.id, site_id=site.pk, why="held for review")
    assert f'value="dismiss:{pending.id}"' not in mod.get(f"/console/tasks/{task.pk}/").content.decode()
    refused = mod.post("/console/actions", {"do": f"dismiss:{pending.id}"}, HTTP_ACCEPT="application/json")
    assert refused.status_code == 400 and "published" in refused.json()["results"][0]["error"]
    unreported = CommentFactory(subject=subject)
    refused = mod.post("/console/actions", {"do": f"dismiss:{unreported.id}"}, HTTP_ACCEPT="application/json")
    assert refused.status_code == 400 and "no reports" in refused.json()["results"][0]["error"]
    assert not AuditEntry.objects.filter(action="dismiss").exists()


def test_an_action_the_comment_does_not_allow_is_reported(site, subject, mod):
    comment = CommentFactory(subject=subject)
    response = mod.post("/console/actions", {"do": f"restore:{comment.id}"}, HTTP_ACCEPT="application/json")
    assert response.status_code == 400
    assert "cannot be given" in response.json()["results"][0]["error"]


def test_unknown_comment_is_reported_not_a_500(site, mod):
    response = mod.post("/console/actions", {"do": "approve:12345"}, HTTP_ACCEPT="application/json")
    assert response.status_code == 404


def test_get_on_post_only_endpoints_is_405(site, mod):
    assert mod.get("/console/actions").status_code == 405


def test_a_domain_error_keeps_its_status_and_code_in_the_console(site, subject, mod, monkeypatch):
    # Any refusal of a service, not only the three the console once listed, answers with its own
    # status and code (comments.exceptions), the same as the API's: never a 500, never a code
    # guessed from the status.
    from comments.exceptions import RateLimited
    from moderation import services

    _, task = held(subject)

    def over_the_limit(**kwargs):
        raise RateLimited("Slow down.", retry_after=5)

    monkeypatch.setattr(services, "review_task_claim", over_the_limit)
    refused = mod.post(f"/console/tasks/{task.pk}/claim", HTTP_ACCEPT="application/json")
    assert refused.status_code == 429
    assert refused.json() == {"error": {"code": "rate_limited", "message": "Slow down."}}
    page = mod.post(f"/console/tasks/{task.pk}/claim")
    assert page.status_code == 429 and "Slow down." in page.content.decode()


# --- claims --------------------------------------------------------------------------------


def test_a_claimed_task_shows_its_holder_and_refuses_the_other_moderator(site, subject, moderator):
    second = UserFactory(username="second")
    site.moderators.add(second)
    comment, task = held(subject)
    first_client, second_client = signed_in(moderator), signed_in(second)

    claim = first_client.post(f"/console/tasks/{task.pk}/claim", HTTP_ACCEPT="application/json")
    assert claim.status_code == 200 and claim.json()["claimed_by"]["name"] == moderator.public_name

    refused = second_client.post(f"/console/tasks/{task.pk}/claim", HTTP_ACCEPT="application/json")
    assert refused.status_code == 403 and refused.json()["claimed_by"]["id"] == moderator.pk
    page = second_client.get(CONSOLE)
    assert f"Claimed by {moderator.public_name}" in page.content.decode()
    detail = second_client.get(f"/console/tasks/{task.pk}/")
    assert detail.context["claimed_by_other"] and "disabled" in detail.content.decode()

    acted = second_client.post("/console/actions", {"do": f"reject:{comment.id}"}, HTTP_ACCEPT="application/json")
    assert acted.status_code == 403 and "is working on this task" in acted.json()["results"][0]["error"]
    assert status_of(comment) == Status.PENDING
    assert not AuditEntry.objects.filter(actor=second).exists()

    # the holder may act; a released claim frees the task for the other
    assert first_client.post(f"/console/tasks/{task.pk}/release", HTTP_ACCEPT="application/json").status_code == 200
    assert second_client.post(f"/console/tasks/{task.pk}/claim").status_code == 302
    assert ReviewTask.objects.get(pk=task.pk).claimed_by == second
    second_client.post("/console/actions", {"do": f"reject:{comment.id}"})
    assert status_of(comment) == Status.REJECTED


def test_a_lapsed_claim_no_longer_blocks(site, subject, moderator):
    second = UserFactory(username="second")
    site.moderators.add(second)
    comment, task = held(subject)
    signed_in(moderator).post(f"/console/tasks/{task.pk}/claim")
    ReviewTask.objects.filter(pk=task.pk).update(claim_expires_at=timezone.now() - timedelta(seconds=1))
    signed_in(second).post("/console/actions", {"do": f"approve:{comment.id}"})
    assert status_of(comment) == Status.PUBLISHED


# --- word list -----------------------------------------------------------------------------


def test_word_list_editor_adds_and_removes_words_with_audit_entries(site, mod, moderator):
    page = mod.get("/console/words/")
    assert page.status_code == 200
    response = mod.post(f"/console/words/?site={site.key}", {"site": site.key, "word": "Darn", "action": "review"})
    assert response.status_code == 302
    entry = WordEntry.objects.get(site=site)
    assert (entry.word, entry.action) == ("Darn", "review")
    assert AuditEntry.objects.filter(action="word_add", actor=moderator, site=site).count() == 1
    assert "Darn" in mod.get("/console/words/").content.decode()

    again = mod.post("/console/words/", {"site": site.key, "word": "darn", "action": "block"})
    assert again.status_code == 400 and "Already in the list." in again.content.decode()

    mod.post(f"/console/words/{entry.pk}/delete")
    assert not WordEntry.objects.exists()
    assert AuditEntry.objects.filter(action="word_remove", actor=moderator).count() == 1


def test_the_word_list_page_is_paged(site, mod, moderator, monkeypatch):
    from moderation import views

    monkeypatch.setattr(views, "WORDS_PAGE", 2)
    for word in ("apple", "berry", "cherry"):
        WordEntry.objects.create(site=site, word=word, normalized=word, action="block", created_by=moderator)
    first = mod.get(f"/console/words/?site={site.key}")
    html = first.content.decode()
    assert "apple" in html and "berry" in html and "cherry" not in html
    more = first.context["next_url"]
    second = mod.get(more).content.decode()
    assert "cherry" in second and "apple" not in second
    assert mod.get(more).context["next_url"] is None
    assert mod.get(more).context["first_url"] == f"/console/words/?site={site.key}"


def test_only_staff_may_add_a_word_for_every_site(site, mod):
    response = mod.post("/console/words/", {"site": "*", "word": "darn", "action": "block"})
    assert response.status_code == 403 and not WordEntry.objects.exists()
    staff = signed_in(UserFactory(is_staff=True))
    assert staff.post("/console/words/", {"site": "*", "word": "darn", "action": "block"}).status_code == 302
    assert WordEntry.objects.get().site is None


def test_word_form_errors_are_shown_not_raised(site, mod):
    response = mod.post("/console/words/", {"site": site.key, "word": "", "action": "shout"})
    assert response.status_code == 400
    assert set(response.context["form"].errors) == {"word", "action"}


# --- sanctions -----------------------------------------------------------------------------


def test_sanctions_are_added_by_username_and_lifted_with_audit_entries(site, mod, moderator):
    target = UserFactory(username="troll")
    response = mod.post("/console/sanctions/", {"site": site.key, "user": "troll", "kind": "ban", "reason": "spam"})
    assert response.status_code == 302
    sanction = Sanction.objects.get(user=target, site=site)
    assert sanction.kind == "ban" and sanction.created_by == moderator
    assert AuditEntry.objects.filter(action="sanction_ban", actor=moderator).count() == 1
    page = mod.get("/console/sanctions/")
    assert "Troll" in page.content.decode()

    mod.post(f"/console/sanctions/{sanction.pk}/delete")
    assert not Sanction.objects.exists()
    assert AuditEntry.objects.filter(action="sanction_ban_lifted", actor=moderator).count() == 1


def test_a_sanction_by_user_id_with_an_end(site, mod):
    target = UserFactory()
    until = (timezone.now() + timedelta(days=2)).strftime("%Y-%m-%dT%H:%M")
    assert (
        mod.post(
            "/console/sanctions/", {"site": site.key, "user": str(target.pk), "kind": "shadow_ban", "until": until}
        ).status_code
        == 302
    )
    assert Sanction.objects.get(user=target).until is not None


@pytest.mark.parametrize(
    "data, field",
    [
        ({"user": "nobody-here", "kind": "ban"}, "user"),
        ({"user": "mod", "kind": "ban"}, "user"),  # oneself
        ({"user": "troll", "kind": "exile"}, "kind"),
        ({"user": "troll", "kind": "ban", "until": "2001-01-01T00:00"}, "until"),
        ({"user": "troll", "kind": "ban", "until": "soon"}, "until"),
    ],
)
def test_sanction_form_errors_are_shown_not_raised(site, mod, data, field):
    UserFactory(username="troll")
    response = mod.post("/console/sanctions/", {"site": site.key, **data})
    assert response.status_code == 400
    assert field in response.context["form"].errors
    assert not Sanction.objects.exists()


def test_sanction_on_another_site_is_refused(site, mod):
    other = SiteFactory()
    target = UserFactory()
    response = mod.post("/console/sanctions/", {"site": other.key, "user": str(target.pk), "kind": "ban"})
    assert response.status_code == 403 and not Sanction.objects.exists()


# --- audit log -----------------------------------------------------------------------------


def test_audit_log_page_lists_decisions_newest_first(site, subject, mod, moderator):
    first, _ = held(subject)
    second, _ = held(subject)
    mod.post("/console/actions", {"do": f"approve:{first.id}", "reason": "looks fine"})
    mod.post("/console/actions", {"do": f"reject:{second.id}"})
    page = mod.get("/console/log/")
    assert page.status_code == 200
    mine = [e for e in page.context["entries"] if e["actor"]]
    assert [(e["action"], e["comment_id"]) for e in mine] == [("reject", second.id), ("approve", first.id)]
    assert "looks fine" in page.content.decode()
    assert mod.get("/console/log/", {"cursor": "junk"}).status_code == 400


# --- dashboard -----------------------------------------------------------------------------


def _decided(subject, *, day_offset: int, seconds: int):
    comment, task = held(subject)
    decided = timezone.now().replace(hour=12, minute=0) - timedelta(days=day_offset)
    ReviewTask.objects.filter(pk=task.pk).update(
        state=TaskState.DONE, decided_at=decided, created_at=decided - timedelta(seconds=seconds), decision="approve"
    )


def test_dashboard_counts_open_tasks_and_computes_decisions_and_medians_per_day(site, subject, moderator, mod):
    other = SiteFactory()
    other.moderators.add(moderator)
    held(subject)
    held(subject)
    held(SubjectFactory(site=other))
    for seconds in (60, 600, 120):
        _decided(subject, day_offset=0, seconds=seconds)
    for seconds in (60, 120, 180, 6000):
        _decided(subject, day_offset=1, seconds=seconds)
    _decided(subject, day_offset=20, seconds=5)  # outside the window

    figures = queries.moderation_dashboard(user=moderator, sites=[site, other], days=14)
    assert figures["open_total"] == 3
    assert {o["site"].key: o["open"] for o in figures["open_tasks"]} == {site.key: 2, other.key: 1}
    days = figures["days"]
    assert len(days) == 14 and days[-1].day == timezone.now().date()
    assert (days[-1].decisions, round(days[-1].median_seconds)) == (3, 120)
    assert (days[-2].decisions, round(days[-2].median_seconds)) == (4, 150)
    assert all(d.decisions == 0 and d.median_seconds is None for d in days[:-2])

    page = mod.get("/console/dashboard/")
    assert page.status_code == 200
    html = page.content.decode()
    assert html.count('class="bar"') == 14 and "<polyline" in html and "<svg" in html
    assert page.context["decisions_total"] == 7
    only = mod.get("/console/dashboard/", {"site": other.key})
    assert only.context["open_total"] == 1


def test_the_dashboard_switches_to_one_site_or_all_and_site_pages_to_one(site, moderator, mod):
    other = SiteFactory()
    other.moderators.add(moderator)
    dashboard = mod.get("/console/dashboard/").content.decode()
    assert '<option value="">All your sites</option>' in dashboard
    assert f'<option value="{other.key}"' in dashboard
    words = mod.get("/console/words/").content.decode()
    assert f'<option value="{other.key}"' in words and "All your sites" not in words


def test_dashboard_refuses_a_site_the_user_does_not_moderate(site, mod):
    assert mod.get("/console/dashboard/", {"site": SiteFactory().key}).status_code == 403


def test_pages_carry_no_inline_script_or_style(site, subject, mod):
    _, task = held(subject)
    for url in [
        CONSOLE,
        f"/console/tasks/{task.pk}/",
        "/console/words/",
        "/console/sanctions/",
        "/console/log/",
        "/console/dashboard/",
        "/console/login/",
    ]:
        html = mod.get(url).content.decode()
        assert "style=" not in html and "<style" not in html, url
        assert " onclick=" not in html and "<script>" not in html, url
        for tag in html.split("<script")[1:]:
            assert "src=" in tag.split(">")[0], url


def test_queue_task_and_dashboard_pages_cost_the_same_queries_whatever_the_size(site, subject, moderator, mod):
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    def cost(url):
        with CaptureQueriesContext(connection) as captured:
            assert mod.get(url).status_code == 200
        return len(captured)

    _, task = held(subject)
    small = (cost(CONSOLE), cost(f"/console/tasks/{task.pk}/"), cost("/console/dashboard/"))
    for _ in range(8):
        held(subject)
        CommentFactory(subject=subject)
    for seconds in (30, 90):
        _decided(subject, day_offset=2, seconds=seconds)
    large = (cost(CONSOLE), cost(f"/console/tasks/{task.pk}/"), cost("/console/dashboard/"))
    assert small == large

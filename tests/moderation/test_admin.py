"""The Django admin of moderation: usable lists, and changes that go through the services."""

from __future__ import annotations

import re

import pytest
from django.test import Client

from comments.models import Comment
from comments.services import comment_set_status
from moderation.models import AuditEntry, ReviewTask, WordEntry
from moderation.services import review_task_open

from ..factories import CommentFactory, UserFactory

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def browser(db):
    client = Client()
    client.force_login(UserFactory(username="root", is_staff=True, is_superuser=True))
    return client


@pytest.mark.parametrize("model", ["wordentry", "sanction", "report", "reviewtask", "auditentry"])
def test_every_moderation_list_opens(browser, model, subject):
    assert browser.get(f"/admin/moderation/{model}/").status_code == 200


def test_a_word_added_in_the_admin_goes_through_the_service(browser, site):
    response = browser.post("/admin/moderation/wordentry/add/", {"site": site.pk, "word": "Scam", "action": "block"})
    assert response.status_code == 302
    entry = WordEntry.objects.get()
    assert (entry.word, entry.normalized) == ("Scam", "scam")
    assert AuditEntry.objects.get().action == "word_add"


def test_tasks_are_decided_in_bulk_from_the_admin(browser, subject):
    comments = [CommentFactory(subject=subject) for _ in range(2)]
    tasks = []
    for comment in comments:
        comment_set_status(comment_id=comment.id, to_status="pending")
        tasks.append(review_task_open(comment_id=comment.id, reasons=["policy:pre"]))
    response = browser.post(
        "/admin/moderation/reviewtask/",
        {"action": "decide_approve", "_selected_action": [t.pk for t in tasks]},
    )
    assert response.status_code == 302
    assert set(Comment.objects.filter(pk__in=[c.id for c in comments]).values_list("status", flat=True)) == {
        "published"
    }
    assert set(ReviewTask.objects.values_list("state", flat=True)) == {"done"}
    assert AuditEntry.objects.filter(action="approve").count() == 2


def test_the_admin_names_every_model_in_plain_english_plurals(browser):
    import re

    from django.apps import apps

    # Django adds an "s": "entry" would become "entrys" unless the model says otherwise.
    wrong = {
        model._meta.label: str(model._meta.verbose_name_plural)
        for model in apps.get_models()
        if model._meta.app_label in {"comments", "likes", "moderation"}
        and re.search(r"[^aeiou]ys$", str(model._meta.verbose_name_plural))
    }
    assert wrong == {}
    index = browser.get("/admin/").content.decode()
    assert "Audit entries" in index and "Word entries" in index and "entrys" not in index


def test_comments_are_moderated_in_bulk_through_moderations_rules_and_audited(browser, subject):
    """The comment list's actions once set statuses bare: no audit entry, no review task closed,
    any transition allowed."""
    held = CommentFactory(subject=subject)
    comment_set_status(comment_id=held.id, to_status="pending")
    task = review_task_open(comment_id=held.id, reasons=["policy:pre"])
    deleted = CommentFactory(subject=subject)
    comment_set_status(comment_id=deleted.id, to_status="deleted")

    response = browser.post(
        "/admin/comments/comment/", {"action": "moderate_approve", "_selected_action": [held.id, deleted.id]}
    )

    assert response.status_code == 302
    assert Comment.objects.get(pk=held.id).status == "published"
    assert Comment.objects.get(pk=deleted.id).status == "deleted"  # approving a deleted comment is refused
    assert ReviewTask.objects.get(pk=task.pk).state == "done"
    entry = AuditEntry.objects.get()
    assert (entry.action, entry.comment_id, entry.from_status, entry.to_status, entry.actor.username) == (
        "approve",
        held.id,
        "pending",
        "published",
        "root",
    )
    messages = [m.message for m in response.wsgi_request._messages]
    assert f"comment {deleted.id}: A deleted comment cannot be given 'approve'." in messages
    assert "approve: 1 comment(s)" in messages


def test_the_comment_list_offers_moderators_actions_only(browser):
    response = browser.get("/admin/comments/comment/")
    offered = set(re.findall(r'<option value="(moderate_\w+|mark_\w+)"', response.content.decode()))
    assert offered == {
        f"moderate_{name}"
        for name in ("approve", "reject", "delete", "restore", "shadow", "pin", "unpin", "feature", "unfeature")
    }


def test_the_comment_list_shows_each_comments_text_and_finds_comments_by_text_or_author(browser, subject):
    """The list a moderator searches: by words of the text (read from its own table), by the
    author's name, by id, and within the filters already chosen."""
    spam = CommentFactory(subject=subject, body="Cheap watches here", author=UserFactory(username="mallory"))
    kind = CommentFactory(subject=subject, body="A kind word about watches")
    comment_set_status(comment_id=kind.pk, to_status="pending")
    other = CommentFactory(subject=subject, body="Nothing to see", author=UserFactory(username="trent"))

    def listed(query: str) -> set[int]:
        page = browser.get(f"/admin/comments/comment/?{query}")
        assert page.status_code == 200
        return {int(pk) for pk in re.findall(r'name="_selected_action" value="(\d+)"', page.content.decode())}

    assert listed("") == {spam.pk, kind.pk, other.pk}
    assert "Cheap watches here" in browser.get("/admin/comments/comment/").content.decode()
    assert listed("q=watches") == {spam.pk, kind.pk}
    assert listed("q=watches&status__exact=pending") == {kind.pk}
    assert listed("q=trent") == {other.pk}
    assert listed(f"q={spam.pk}") == {spam.pk}

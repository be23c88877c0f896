"""The moderation API of API.md: who may use it, what each action does to listings, counts
and visibility, the audit log, reports, the queue and its claims, words and sanctions."""

from __future__ import annotations

import threading
from datetime import timedelta

import pytest
from django.db import connections
from django.utils import timezone

from comments.models import Comment, Subject
from comments.services import site_store
from moderation import queries
from moderation.models import AuditEntry, Report, ReviewTask

from ..api.conftest import API, assert_comment_shape, assert_error
from ..clocks import shifted_clock
from ..factories import CommentFactory, SiteFactory, SubjectFactory, UserFactory

# Real commits: the word list change, review tasks and second checks run on commit, as in
# production.
pytestmark = pytest.mark.django_db(transaction=True)


def act(client, comment, action, reason=""):
    return client.post(
        f"{API}/moderation/comments/{comment.id}/actions", {"action": action, "reason": reason}, format="json"
    )


def listed_ids(client, subject, mode="flat"):
    return [i["id"] for i in client.get(f"{API}/subjects/{subject.id}/comments", {"mode": mode}).json()["items"]]


def counts(subject):
    subject = Subject.objects.get(pk=subject.pk)
    return subject.comment_count, subject.root_count


@pytest.fixture
def mod_client(moderator, client_for):
    return client_for(moderator)


# --- who may moderate ----------------------------------------------------------------------


def test_moderation_endpoints_need_a_moderator_of_that_site(api, client_for, site, subject, moderator):
    comment = CommentFactory(subject=subject)
    other_site = SiteFactory()
    other_mod = UserFactory()
    other_site.moderators.add(other_mod)
    reader = client_for(UserFactory())
    for client, status, code in (
        (api, 401, "not_authenticated"),
        (reader, 403, "permission_denied"),
        (client_for(other_mod), 403, "permission_denied"),
    ):
        assert_error(client.get(f"{API}/moderation/queue", {"site": site.key}), status, code)
        assert_error(client.get(f"{API}/moderation/log", {"site": site.key}), status, code)
        assert_error(act(client, comment, "reject"), status, code)
        assert_error(
            client.post(
                f"{API}/moderation/words", {"site": site.key, "word": "spam", "action": "block"}, format="json"
            ),
            status,
            code,
        )
        assert_error(
            client.post(
                f"{API}/moderation/sanctions",
                {"site": site.key, "user_id": comment.author_id, "kind": "ban"},
                format="json",
            ),
            status,
            code,
        )
    assert Comment.objects.get(pk=comment.pk).status == "published"
    assert not AuditEntry.objects.exists()


def test_an_unknown_action_or_comment_is_refused_in_the_contracts_shape(mod_client, subject):
    comment = CommentFactory(subject=subject)
    assert_error(act(mod_client, comment, "explode"), 400, "invalid")
    assert_error(
        mod_client.post(f"{API}/moderation/comments/999999999/actions", {"action": "reject"}, format="json"),
        404,
        "not_found",
    )
    assert_error(mod_client.get(f"{API}/moderation/queue", {"site": "nope"}), 404, "not_found")
    assert_error(
        mod_client.get(f"{API}/moderation/queue", {"site": subject.site.key, "state": "maybe"}), 400, "invalid"
    )


# --- actions -------------------------------------------------------------------------------


def test_reject_hides_a_comment_and_its_counts_and_restore_brings_them_back(mod_client, api, subject, moderator):
    comment = CommentFactory(subject=subject)
    CommentFactory(subject=subject)
    assert counts(subject) == (2, 2)

    body = act(mod_client, comment, "reject", "off topic").json()
    assert_comment_shape(body)
    assert body["status"] == "rejected"
    assert comment.id not in listed_ids(api, subject)
    assert counts(subject) == (1, 1)

    assert act(mod_client, comment, "restore").json()["status"] == "published"
    assert comment.id in listed_ids(api, subject)
    assert counts(subject) == (2, 2)
    log = list(
        AuditEntry.objects.order_by("id").values_list("action", "from_status", "to_status", "reason", "actor_id")
    )
    assert log == [
        ("reject", "published", "rejected", "off topic", moderator.pk),
        ("restore", "rejected", "published", "", moderator.pk),
    ]


def test_deleting_a_comment_with_replies_leaves_a_placeholder(mod_client, api, subject):
    root = CommentFactory(subject=subject)
    CommentFactory(subject=subject, reply_to=root)
    act(mod_client, root, "delete")
    items = api.get(f"{API}/subjects/{subject.id}/comments", {"mode": "flat"}).json()["items"]
    placeholder = next(i for i in items if i["id"] == root.id)
    assert (placeholder["status"], placeholder["author"], placeholder["body"]) == ("deleted", None, "")


def test_approving_a_pending_comment_publishes_it_and_closes_its_task(mod_client, api, client_for, subject):
    subject.site.moderation = "pre"
    site_store(site=subject.site)
    author = UserFactory()
    posted = client_for(author).post(f"{API}/subjects/{subject.id}/comments", {"body": "hello"}, format="json").json()
    assert posted["status"] == "pending"
    assert posted["id"] not in listed_ids(api, subject)
    task = ReviewTask.objects.get(comment_id=posted["id"], state="open")
    assert "policy:pre" in task.reasons

    comment = Comment.objects.get(pk=posted["id"])
    assert act(mod_client, comment, "approve").json()["status"] == "published"
    assert posted["id"] in listed_ids(api, subject)
    task.refresh_from_db()
    assert (task.state, task.decision) == ("done", "approve")


def test_shadow_keeps_a_comment_visible_to_its_author_only(mod_client, api, client_for, subject):
    author = UserFactory()
    comment = CommentFactory(subject=subject, author=author)
    act(mod_client, comment, "shadow")
    assert comment.id not in listed_ids(api, subject)
    own = client_for(author).get(f"{API}/comments/{comment.id}").json()
    assert own["status"] == "published"
    assert counts(subject) == (0, 0)


def test_pin_and_feature_show_in_list_one_and_are_capped(mod_client, api, subject, settings):
    settings.COMMENTS_PINNED_LIMIT = 1
    first, second, reply_target = (CommentFactory(subject=subject) for _ in range(3))
    reply = CommentFactory(subject=subject, reply_to=reply_target)
    assert act(mod_client, second, "pin").json()["pinned"] is True
    assert act(mod_client, first, "feature").json()["featured"] is True
    items = api.get(f"{API}/subjects/{subject.id}/comments", {"mode": "two_level", "sort": "new"}).json()["items"]
    assert items[0]["id"] == second.id and items[0]["pinned"] is True
    assert next(i for i in items if i["id"] == first.id)["featured"] is True
    assert_error(act(mod_client, first, "pin"), 400, "invalid")  # the cap
    assert_error(act(mod_client, reply, "pin"), 400, "invalid")  # replies are not pinned
    assert act(mod_client, second, "unpin").json()["pinned"] is False
    assert act(mod_client, first, "unfeature").json()["featured"] is False


@pytest.mark.parametrize("action", ["approve", "reject", "delete", "shadow", "pin", "unpin", "feature", "unfeature"])
def test_every_action_leaves_exactly_one_audit_entry(mod_client, subject, action):
    comment = CommentFactory(subject=subject)
    response = act(mod_client, comment, action, "why")
    assert response.status_code == 200, response.content
    entries = list(AuditEntry.objects.filter(comment_id=comment.pk))
    assert len(entries) == 1 and entries[0].action == action and entries[0].reason == "why"


def test_the_audit_log_lists_newest_first_and_paginates(mod_client, subject):
    comments = [CommentFactory(subject=subject) for _ in range(3)]
    for comment in comments:
        act(mod_client, comment, "feature")
    first = mod_client.get(f"{API}/moderation/log", {"site": subject.site.key, "limit": 2}).json()
    rest = mod_client.get(f"{API}/moderation/log", {"site": subject.site.key, "cursor": first["next_cursor"]}).json()
    seen = [e["comment_id"] for e in first["items"] + rest["items"]]
    assert seen == [c.id for c in reversed(comments)]
    assert rest["next_cursor"] is None
    assert first["items"][0]["actor"]["name"]


# --- reports and the queue -----------------------------------------------------------------


def test_a_user_reports_a_comment_once(client_for, subject):
    comment = CommentFactory(subject=subject)
    reporter = client_for(UserFactory())
    url = f"{API}/comments/{comment.id}/reports"
    assert reporter.post(url, {"reason": "spam"}, format="json").status_code == 201
    assert reporter.post(url, {"reason": "abuse"}, format="json").status_code == 200
    assert Report.objects.filter(comment_id=comment.pk).count() == 1
    assert_error(reporter.post(url, {"reason": "boring"}, format="json"), 400, "invalid")
    assert_error(
        reporter.post(f"{API}/comments/999999999/reports", {"reason": "spam"}, format="json"), 404, "not_found"
    )


def test_enough_distinct_reporters_hold_a_comment_for_review(client_for, api, subject, mod_client):
    comment = CommentFactory(subject=subject)
    quiet = CommentFactory(subject=subject)
    client_for(UserFactory()).post(f"{API}/comments/{quiet.id}/reports", {"reason": "other"}, format="json")
    for n in range(3):
        client_for(UserFactory()).post(f"{API}/comments/{comment.id}/reports", {"reason": "spam"}, format="json")
        expected = "pending" if n == 2 else "published"
        assert Comment.objects.get(pk=comment.pk).status == expected
    assert comment.id not in listed_ids(api, subject)
    queue = mod_client.get(f"{API}/moderation/queue", {"site": subject.site.key}).json()["items"]
    assert [t["comment"]["id"] for t in queue] == [comment.id, quiet.id]  # more reporters rank higher
    assert queue[0]["reasons"] == ["report:spam"] and queue[0]["priority"] > queue[1]["priority"]
    assert AuditEntry.objects.get(comment_id=comment.pk).action == "hold"


def test_the_queue_paginates_by_priority_then_age_and_closes_on_decision(client_for, mod_client, subject):
    comments = [CommentFactory(subject=subject) for _ in range(5)]
    for comment in comments:
        client_for(UserFactory()).post(f"{API}/comments/{comment.id}/reports", {"reason": "spam"}, format="json")
    client_for(UserFactory()).post(f"{API}/comments/{comments[3].id}/reports", {"reason": "abuse"}, format="json")
    pages, cursor = [], None
    while True:
        body = mod_client.get(
            f"{API}/moderation/queue", {"site": subject.site.key, "limit": 2, **({"cursor": cursor} if cursor else {})}
        ).json()
        pages += body["items"]
        cursor = body["next_cursor"]
        if not cursor:
            break
    assert [t["comment"]["id"] for t in pages] == [comments[3].id, *[c.id for c in comments if c != comments[3]]]
    act(mod_client, comments[3], "approve")
    open_ids = [
        t["comment"]["id"]
        for t in mod_client.get(f"{API}/moderation/queue", {"site": subject.site.key}).json()["items"]
    ]
    assert comments[3].id not in open_ids
    done = mod_client.get(f"{API}/moderation/queue", {"site": subject.site.key, "state": "done"}).json()["items"]
    assert [(t["comment"]["id"], t["decision"]) for t in done] == [(comments[3].id, "approve")]


@pytest.mark.django_db(transaction=True)
def test_two_moderators_claiming_one_task_at_once_never_both_win(client_for):
    site = SiteFactory()
    subject = SubjectFactory(site=site)
    comment = CommentFactory(subject=subject)
    client_for(UserFactory()).post(f"{API}/comments/{comment.id}/reports", {"reason": "spam"}, format="json")
    task = ReviewTask.objects.get(comment_id=comment.pk)
    mods = [UserFactory() for _ in range(6)]
    site.moderators.add(*mods)
    clients = [client_for(m) for m in mods]
    barrier = threading.Barrier(len(clients))
    answers: list[int | None] = [None] * len(clients)

    def claim(i):
        try:
            barrier.wait(timeout=20)
            answers[i] = clients[i].put(f"{API}/moderation/tasks/{task.pk}/claim").status_code
        finally:
            connections.close_all()

    threads = [threading.Thread(target=claim, args=(i,)) for i in range(len(clients))]
    for t in threads:
        t.start()
    for t in threads:
        t.join(30)
    assert sorted(answers) == [200] + [403] * (len(clients) - 1)
    winner = mods[answers.index(200)]
    task.refresh_from_db()
    assert task.claimed_by_id == winner.pk and task.claim_expires_at > timezone.now()


def test_a_claim_lapses_and_another_moderator_may_take_the_task(client_for, subject, settings):
    comment = CommentFactory(subject=subject)
    client_for(UserFactory()).post(f"{API}/comments/{comment.id}/reports", {"reason": "spam"}, format="json")
    task = ReviewTask.objects.get(comment_id=comment.pk)
    first, second = UserFactory(), UserFactory()
    subject.site.moderators.add(first, second)
    assert client_for(first).put(f"{API}/moderation/tasks/{task.pk}/claim").status_code == 200
    assert_error(client_for(second).put(f"{API}/moderation/tasks/{task.pk}/claim"), 403, "permission_denied")
    ReviewTask.objects.filter(pk=task.pk).update(claim_expires_at=timezone.now() - timedelta(seconds=1))
    assert client_for(second).put(f"{API}/moderation/tasks/{task.pk}/claim").status_code == 200


def test_only_the_moderator_holding_a_claim_may_decide_the_task(client_for, subject):
    comment = CommentFactory(subject=subject)
    client_for(UserFactory()).post(f"{API}/comments/{comment.id}/reports", {"reason": "spam"}, format="json")
    task = ReviewTask.objects.get(comment_id=comment.pk)
    holder, other = UserFactory(), UserFactory()
    subject.site.moderators.add(holder, other)
    assert client_for(holder).put(f"{API}/moderation/tasks/{task.pk}/claim").status_code == 200

    refused = client_for(other).post(
        f"{API}/moderation/comments/{comment.id}/actions", {"action": "reject"}, format="json"
    )
    assert_error(refused, 403, "permission_denied")
    assert Comment.objects.get(pk=comment.pk).status == "published"
    assert not AuditEntry.objects.filter(comment_id=comment.pk).exists()

    decided = client_for(holder).post(
        f"{API}/moderation/comments/{comment.id}/actions", {"action": "reject"}, format="json"
    )
    assert decided.status_code == 200 and decided.json()["status"] == "rejected"


# --- sanctions -----------------------------------------------------------------------------


def test_a_banned_user_can_neither_post_edit_like_nor_report(client_for, mod_client, subject):
    user = UserFactory()
    own = CommentFactory(subject=subject, author=user)
    other = CommentFactory(subject=subject)
    response = mod_client.post(
        f"{API}/moderation/sanctions",
        {"site": subject.site.key, "user_id": user.pk, "kind": "ban", "reason": "abuse"},
        format="json",
    )
    assert response.status_code == 201 and response.json()["kind"] == "ban"
    client = client_for(user)
    assert_error(client.post(f"{API}/subjects/{subject.id}/comments", {"body": "hi"}, format="json"), 403, "banned")
    assert_error(client.patch(f"{API}/comments/{own.id}", {"body": "edited"}, format="json"), 403, "banned")
    assert_error(client.put(f"{API}/comments/{other.id}/like"), 403, "banned")
    assert_error(client.post(f"{API}/comments/{other.id}/reports", {"reason": "spam"}, format="json"), 403, "banned")
    # Lifting the ban lets them back in at once.
    assert mod_client.delete(f"{API}/moderation/sanctions/{response.json()['id']}").status_code == 204
    assert client.post(f"{API}/subjects/{subject.id}/comments", {"body": "hi"}, format="json").status_code == 201


def test_a_ban_with_an_expiry_ends_by_itself(client_for, mod_client, subject, monkeypatch):
    user = UserFactory()
    until = (timezone.now() + timedelta(hours=1)).isoformat()
    banned = mod_client.post(
        f"{API}/moderation/sanctions",
        {"site": subject.site.key, "user_id": user.pk, "kind": "ban", "until": until},
        format="json",
    )
    assert banned.status_code == 201, banned.content
    client = client_for(user)
    # The standing is read against the clock of moderation.queries: moved, not waited for.
    clock = shifted_clock(monkeypatch, queries)
    assert_error(client.post(f"{API}/subjects/{subject.id}/comments", {"body": "hi"}, format="json"), 403, "banned")
    clock.advance(3600 - 60)  # a minute before its end: in force still
    assert_error(client.post(f"{API}/subjects/{subject.id}/comments", {"body": "hi"}, format="json"), 403, "banned")
    clock.advance(61)
    assert client.post(f"{API}/subjects/{subject.id}/comments", {"body": "hi"}, format="json").status_code == 201


def test_a_ban_on_one_site_does_not_reach_another(client_for, mod_client, subject):
    user = UserFactory()
    banned = mod_client.post(
        f"{API}/moderation/sanctions", {"site": subject.site.key, "user_id": user.pk, "kind": "ban"}, format="json"
    )
    assert banned.status_code == 201, banned.content
    client = client_for(user)
    elsewhere = SubjectFactory(site=SiteFactory())
    # The control: the same ban, the same user, a subject of the site that banned them is refused
    # (the 201 below is the other site's, not a ban that never took or is never checked).
    assert_error(client.post(f"{API}/subjects/{subject.id}/comments", {"body": "hi"}, format="json"), 403, "banned")
    assert client.post(f"{API}/subjects/{elsewhere.id}/comments", {"body": "hi"}, format="json").status_code == 201


def test_a_shadow_banned_users_new_comments_are_seen_only_by_them(client_for, mod_client, api, subject):
    user = UserFactory()
    mod_client.post(
        f"{API}/moderation/sanctions",
        {"site": subject.site.key, "user_id": user.pk, "kind": "shadow_ban"},
        format="json",
    )
    posted = client_for(user).post(f"{API}/subjects/{subject.id}/comments", {"body": "hello"}, format="json").json()
    assert posted["status"] == "published"  # the author must not notice
    assert Comment.objects.get(pk=posted["id"]).status == "shadow"
    assert posted["id"] not in listed_ids(api, subject)
    assert posted["id"] in listed_ids(client_for(user), subject)


def test_a_trusted_user_skips_pre_moderation(client_for, mod_client, subject):
    subject.site.moderation = "pre"
    site_store(site=subject.site)
    user = UserFactory()
    mod_client.post(
        f"{API}/moderation/sanctions", {"site": subject.site.key, "user_id": user.pk, "kind": "trust"}, format="json"
    )
    assert (
        client_for(user)
        .post(f"{API}/subjects/{subject.id}/comments", {"body": "hello"}, format="json")
        .json()["status"]
        == "published"
    )
    assert (
        client_for(UserFactory())
        .post(f"{API}/subjects/{subject.id}/comments", {"body": "hello"}, format="json")
        .json()["status"]
        == "pending"
    )


@pytest.mark.parametrize(
    "payload",
    [
        {"user_id": "x", "kind": "ban"},
        {"user_id": 1, "kind": "exile"},
        {"kind": "ban"},
        {"user_id": 1, "kind": "ban", "until": "yesterday"},
        {"user_id": 1, "kind": "ban", "until": "2001-01-01T00:00:00Z"},
    ],
)
def test_a_bad_sanction_is_invalid(mod_client, subject, payload):
    assert_error(
        mod_client.post(f"{API}/moderation/sanctions", {"site": subject.site.key, **payload}, format="json"),
        400,
        "invalid",
    )


def test_dismissed_reports_leave_the_comment_published_and_count_no_more(mod_client, client_for, subject, moderator):
    comment = CommentFactory(subject=subject)

    def report():
        response = client_for(UserFactory()).post(
            f"{API}/comments/{comment.id}/reports", {"reason": "spam"}, format="json"
        )
        assert response.status_code == 201

    report(), report()  # one short of the site's threshold of 3
    response = act(mod_client, comment, "dismiss", "not spam")
    assert response.status_code == 200, response.content
    assert response.json()["status"] == "published"
    assert not Report.objects.filter(comment_id=comment.id).exists()
    assert not ReviewTask.objects.filter(comment_id=comment.id, state="open").exists()
    report()  # a new reader's report starts afresh: no hold
    assert Comment.objects.get(pk=comment.pk).status == "published"
    assert ReviewTask.objects.get(comment_id=comment.id, state="open").reasons == ["report:spam"]

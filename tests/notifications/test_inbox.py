"""In-app notifications: who is told of what (replies, mentions, followed subjects, a
moderator's decision, like milestones), never about a comment they may not see or their own,
never twice; and the API that lists them and marks them read."""

from __future__ import annotations

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from comments.models import Comment, Status
from comments.services import site_store
from moderation import services as moderation_services
from moderation.actions import comment_moderate
from notifications import fanout, services
from notifications.models import EmailState, Kind, Notification, Preferences

from ..api.conftest import API, assert_error
from ..factories import SubjectFactory, UserFactory
from .conftest import befriend, post, settle, told

pytestmark = pytest.mark.django_db(transaction=True)


# --- who is told ---------------------------------------------------------------------------


def test_a_reply_tells_the_author_of_the_comment_it_answers(subject, alice, bob):
    parent = post(subject, alice)
    reply = post(subject, bob, "I disagree", reply_to=parent)
    assert told(alice) == [(Kind.REPLY, reply.pk)]
    assert told(bob) == []


def test_nobody_is_told_about_their_own_comment(subject, alice):
    parent = post(subject, alice)
    post(subject, alice, "and @alice says more", reply_to=parent)
    assert told(alice) == []


def test_a_mention_tells_the_mentioned_and_a_reply_that_mentions_tells_once(subject, alice, bob, carol):
    parent = post(subject, alice)
    reply = post(subject, bob, "@alice and @carol, look", reply_to=parent)
    assert told(alice) == [(Kind.REPLY, reply.pk)]  # the reply wins over the mention
    assert told(carol) == [(Kind.MENTION, reply.pk)]


def test_a_mention_of_someone_who_cannot_see_the_comment_tells_nobody(subject, alice, bob, carol, moderator):
    befriend(alice, bob)
    friends_only = post(subject, alice, "@bob @carol @mod secret", visibility="friends")
    assert told(bob) == [(Kind.MENTION, friends_only.pk)]  # a mutual follower sees it
    assert told(carol) == []  # not a friend: may not see it, is not told
    assert told(moderator) == [(Kind.MENTION, friends_only.pk)]  # moderators see everything


def test_a_friends_only_reply_tells_the_parent_author_only_when_they_may_see_it(subject, alice, bob):
    parent = post(subject, alice)
    post(subject, bob, "for my friends", reply_to=parent, visibility="friends")
    assert told(alice) == []
    befriend(alice, bob)
    reply = post(subject, bob, "now we are friends", reply_to=parent, visibility="friends")
    assert told(alice) == [(Kind.REPLY, reply.pk)]


def test_inactive_users_are_told_nothing(subject, alice, bob):
    parent = post(subject, alice)
    alice.is_active = False
    alice.save(update_fields=["is_active"])
    post(subject, bob, "hello", reply_to=parent)
    assert told(alice) == []


def test_followers_of_a_subject_are_told_of_new_top_level_comments_only(subject, alice, bob, carol):
    services.subscription_set(user=carol, subject_id=subject.pk, state="subscribed")
    top = post(subject, alice, "first")
    post(subject, bob, "a reply", reply_to=top)
    assert told(carol) == [(Kind.SUBSCRIPTION, top.pk)]
    other = SubjectFactory(site=subject.site)
    post(other, alice, "elsewhere")
    assert told(carol) == [(Kind.SUBSCRIPTION, top.pk)]


def test_a_follower_who_is_also_answered_is_told_once_as_answered(subject, alice, bob):
    services.subscription_set(user=alice, subject_id=subject.pk, state="subscribed")
    top = post(subject, bob, "hi @alice")
    assert told(alice) == [(Kind.MENTION, top.pk)]


def test_a_friends_only_top_level_comment_reaches_only_followers_who_may_see_it(subject, alice, bob, carol):
    for follower in (bob, carol):
        services.subscription_set(user=follower, subject_id=subject.pk, state="subscribed")
    befriend(alice, bob)
    top = post(subject, alice, "friends", visibility="friends")
    assert told(bob) == [(Kind.SUBSCRIPTION, top.pk)]
    assert told(carol) == []


@pytest.mark.parametrize("status", [Status.PENDING, Status.SHADOW])
def test_a_held_or_shadowed_comment_tells_nobody_but_the_moderators_of_a_hold(subject, alice, bob, moderator, status):
    parent = post(subject, alice, "hello @mod")
    if status == Status.PENDING:
        subject.site.moderation = "pre"
        site_store(site=subject.site)
    else:
        moderation_services.sanction_create(actor=moderator, site=subject.site, user_id=bob.pk, kind="shadow_ban")
    reply = post(subject, bob, "hi @mod", reply_to=parent)
    assert reply.status == status
    assert told(alice) == []
    held = [(Kind.HELD, reply.pk)] if status == Status.PENDING else []  # to decide on, not as a mention
    assert told(moderator) == [(Kind.MENTION, parent.pk), *held]


def test_a_held_comment_approved_later_notifies_then_and_its_author_hears_the_decision(
    subject, alice, bob, carol, moderator
):
    parent = post(subject, alice)
    services.subscription_set(user=carol, subject_id=subject.pk, state="subscribed")
    subject.site.moderation = "pre"
    site_store(site=subject.site)
    reply = post(subject, bob, "held @carol", reply_to=parent)
    assert reply.status == Status.PENDING and told(alice) == told(carol) == told(bob) == []

    comment_moderate(comment_id=reply.pk, actor=moderator, action="approve")
    settle()
    assert told(alice) == [(Kind.REPLY, reply.pk)]
    assert told(carol) == [(Kind.MENTION, reply.pk)]
    assert told(bob) == [(Kind.DECISION, reply.pk)]
    decision = Notification.objects.get(recipient=bob)
    assert decision.data == {"decision": "approved"} and decision.actor_id is None  # moderators stay unnamed


def test_a_rejected_held_comment_tells_its_author_only(subject, alice, bob, moderator):
    parent = post(subject, alice)
    subject.site.moderation = "pre"
    site_store(site=subject.site)
    reply = post(subject, bob, "held", reply_to=parent)
    comment_moderate(comment_id=reply.pk, actor=moderator, action="reject")
    settle()
    assert told(alice) == []
    assert Notification.objects.get(recipient=bob).data == {"decision": "rejected"}


def test_deleting_your_own_held_comment_is_no_decision(subject, bob):
    subject.site.moderation = "pre"
    site_store(site=subject.site)
    held = post(subject, bob, "held")
    from comments.services import comment_soft_delete

    comment_soft_delete(comment=Comment.objects.select_related("subject__site").get(pk=held.pk), actor=bob)
    settle()
    assert told(bob) == []


def test_a_shadowed_comment_is_never_told_to_its_author(subject, bob, moderator):
    subject.site.moderation = "pre"
    site_store(site=subject.site)
    held = post(subject, bob, "held")
    comment_moderate(comment_id=held.pk, actor=moderator, action="shadow")
    settle()
    assert told(bob) == []


def test_an_edit_tells_only_whom_it_newly_mentions(subject, alice, bob, carol):
    from comments.services import comment_edit

    parent = post(subject, alice)
    reply = post(subject, bob, "hi", reply_to=parent)
    comment_edit(
        comment=Comment.objects.select_related("subject__site").get(pk=reply.pk),
        editor=bob,
        body="hi @carol and @alice",
    )
    settle()
    assert told(alice) == [(Kind.REPLY, reply.pk)]
    assert told(carol) == [(Kind.MENTION, reply.pk)]


def test_an_event_handled_twice_tells_nobody_twice(subject, alice, bob, carol):
    services.subscription_set(user=carol, subject_id=subject.pk, state="subscribed")
    parent = post(subject, alice)
    reply = post(subject, bob, "@carol", reply_to=parent)
    top = post(subject, bob, "new")
    before = Notification.objects.count()
    assert fanout.comment_notify(comment_id=reply.pk) == 0
    assert fanout.comment_notify(comment_id=top.pk) == 0
    assert Notification.objects.count() == before == 4  # alice: the reply; carol: two new comments and a mention


def test_like_milestones_are_off_until_the_author_turns_them_on(subject, alice):
    comment = post(subject, alice)
    Comment.objects.filter(pk=comment.pk).update(like_count=57)
    assert fanout.like_milestones_notify() == 0
    assert told(alice) == []

    services.preferences_update(user=alice, like_milestones=True)
    assert fanout.like_milestones_notify() == 1
    assert fanout.like_milestones_notify() == 0  # once per milestone
    assert Notification.objects.get(recipient=alice).data == {"likes": 50}  # the highest reached
    Comment.objects.filter(pk=comment.pk).update(like_count=100)
    assert fanout.like_milestones_notify() == 1
    assert [n.data["likes"] for n in Notification.objects.filter(recipient=alice).order_by("id")] == [50, 100]


def test_the_email_of_each_notification_follows_the_recipients_preferences(subject, alice, bob, carol):
    services.preferences_update(user=alice, email={"reply": "daily"})
    services.preferences_update(user=carol, email={"mention": "never"})
    parent = post(subject, alice)
    post(subject, bob, "@carol", reply_to=parent)
    emails = dict(Notification.objects.values_list("recipient__username", "email"))
    assert emails == {"alice": EmailState.DIGEST, "carol": EmailState.NONE}


def test_a_muted_subject_sends_no_email_but_still_tells_in_the_widget(subject, alice, bob):
    services.subscription_set(user=alice, subject_id=subject.pk, state="muted")
    parent = post(subject, alice)
    post(subject, bob, "reply", reply_to=parent)
    assert list(Notification.objects.values_list("kind", "email")) == [(Kind.REPLY, EmailState.NONE)]


# --- the API -------------------------------------------------------------------------------


def test_the_inbox_lists_newest_first_with_the_unread_count_and_pages_by_cursor(subject, alice, bob, client_for):
    parent = post(subject, alice, "the parent")
    replies = [post(subject, bob, f"reply number {n} " + "x" * 300, reply_to=parent) for n in range(5)]
    client = client_for(alice)
    page = client.get(f"{API}/notifications?limit=3").json()
    assert page["unread_count"] == 5
    assert [item["comment"]["id"] for item in page["items"]] == [r.pk for r in reversed(replies)][:3]
    first = page["items"][0]
    assert first["kind"] == "reply" and first["read"] is False
    assert first["actor"] == {"id": bob.pk, "name": bob.public_name, "avatar": None}
    assert first["subject"] == {
        "id": subject.pk,
        "site": subject.site.key,
        "key": subject.key,
        "title": subject.title,
        "url": "",
    }
    assert first["comment"]["root_id"] == parent.pk and first["comment"]["reply_to_id"] == parent.pk
    assert first["comment"]["excerpt"].startswith("reply number 4 xxx") and len(first["comment"]["excerpt"]) == 200
    rest = client.get(f"{API}/notifications?limit=3&cursor={page['next_cursor']}").json()
    assert [item["comment"]["id"] for item in rest["items"]] == [r.pk for r in reversed(replies)][3:]
    assert rest["next_cursor"] is None


def test_marking_read_one_then_all_up_to_what_was_seen(subject, alice, bob, client_for):
    parent = post(subject, alice)
    first, second, third = (post(subject, bob, f"r{n}", reply_to=parent) for n in range(3))
    client = client_for(alice)
    items = client.get(f"{API}/notifications").json()["items"]
    ids = {item["comment"]["id"]: item["id"] for item in items}
    assert client.put(f"{API}/notifications/{ids[first.pk]}/read").json() == {"unread_count": 2}
    assert client.put(f"{API}/notifications/{ids[first.pk]}/read").json() == {"unread_count": 2}  # idempotent
    answer = client.post(f"{API}/notifications/read_all", {"up_to_id": ids[second.pk]}, format="json").json()
    assert answer == {"marked": 1, "unread_count": 1}
    assert client.get(f"{API}/notifications?unread=true").json()["items"][0]["id"] == ids[third.pk]
    assert client.post(f"{API}/notifications/read_all", format="json").json() == {"marked": 1, "unread_count": 0}
    assert client.get(f"{API}/notifications/unread_count").json() == {"unread_count": 0}


def test_a_notification_about_a_comment_deleted_since_is_not_shown(subject, alice, bob, client_for):
    from comments.services import comment_soft_delete

    parent = post(subject, alice)
    reply = post(subject, bob, "oops", reply_to=parent)
    comment_soft_delete(comment=Comment.objects.select_related("subject__site").get(pk=reply.pk), actor=bob)
    client = client_for(alice)
    assert client.get(f"{API}/notifications").json() == {"items": [], "next_cursor": None, "unread_count": 0}


def test_the_inbox_costs_the_same_queries_for_one_notification_or_twenty(subject, alice, client_for):
    parent = post(subject, alice)
    client = client_for(alice)

    def statements(expected: int) -> int:
        with CaptureQueriesContext(connection) as ran:
            assert len(client.get(f"{API}/notifications?limit=50").json()["items"]) == expected
        return len(ran)

    post(subject, UserFactory(), "hey", reply_to=parent)
    one = statements(1)
    for _ in range(19):
        post(subject, UserFactory(), "hey", reply_to=parent)
    # the token, the rows, their texts, the people, the subjects, the unread count
    assert statements(20) == one <= 6


def test_someone_elses_notification_cannot_be_marked(subject, alice, bob, client_for):
    parent = post(subject, alice)
    post(subject, bob, "r", reply_to=parent)
    mine = Notification.objects.get(recipient=alice)
    assert_error(client_for(bob).put(f"{API}/notifications/{mine.pk}/read"), 404, "not_found")
    assert Notification.objects.get(pk=mine.pk).read_at is None


@pytest.mark.parametrize("query", ["limit=0", "limit=abc", "limit=101", "cursor=garbage", "unread=maybe"])
def test_bad_inbox_parameters_are_invalid(alice, client_for, query):
    assert_error(client_for(alice).get(f"{API}/notifications?{query}"), 400, "invalid")


def test_a_cursor_of_another_readers_inbox_is_refused(subject, alice, bob, carol, client_for):
    parent = post(subject, alice)
    for _ in range(3):
        post(subject, bob, "r", reply_to=parent)
    cursor = client_for(alice).get(f"{API}/notifications?limit=1").json()["next_cursor"]
    assert_error(client_for(carol).get(f"{API}/notifications?cursor={cursor}"), 400, "invalid")


@pytest.mark.parametrize("body", [{"up_to_id": "7"}, {"up_to_id": 0}, {"up_to_id": True}, [1]])
def test_bad_read_all_bodies_are_invalid(alice, client_for, body):
    assert_error(client_for(alice).post(f"{API}/notifications/read_all", body, format="json"), 400, "invalid")


@pytest.mark.parametrize(
    "method,path",
    [
        ("get", "notifications"),
        ("get", "notifications/unread_count"),
        ("post", "notifications/read_all"),
        ("put", "notifications/1/read"),
        ("get", "notifications/preferences"),
        ("patch", "notifications/preferences"),
        ("get", "subjects/1/subscription"),
        ("put", "subjects/1/subscription"),
    ],
)
def test_every_notifications_endpoint_needs_a_signed_in_reader(api, method, path):
    assert_error(getattr(api, method)(f"{API}/{path}", format="json"), 401, "not_authenticated")


def test_preferences_start_at_the_defaults_and_change_kind_by_kind(alice, client_for):
    client = client_for(alice)
    assert client.get(f"{API}/notifications/preferences").json() == {
        "language": "en",
        "like_milestones": False,
        "email": {
            "reply": "immediately",
            "mention": "immediately",
            "subscription": "immediately",
            "like_milestone": "never",
            "decision": "immediately",
            "queue": "immediately",
            "held": "immediately",
        },
    }
    answer = client.patch(
        f"{API}/notifications/preferences",
        {"language": "zh-hans", "email": {"reply": "daily", "subscription": "never"}},
        format="json",
    ).json()
    assert answer["language"] == "zh-hans" and answer["like_milestones"] is False
    assert answer["email"]["reply"] == "daily" and answer["email"]["subscription"] == "never"
    assert answer["email"]["mention"] == "immediately"
    assert Preferences.objects.get(pk=alice.pk).email_reply == "daily"


@pytest.mark.parametrize(
    "body",
    [
        {"email": {"reply": "weekly"}},
        {"email": {"likes": "daily"}},
        {"email": "daily"},
        {"language": "fr"},
        {"like_milestones": "yes please"},
        {"like_milestones": "true"},
        {"like_milestones": 1},
        {"language": 7},
    ],
)
def test_bad_preferences_are_invalid_and_change_nothing(alice, client_for, body):
    assert_error(client_for(alice).patch(f"{API}/notifications/preferences", body, format="json"), 400, "invalid")
    assert not Preferences.objects.exists()


def test_following_and_muting_a_subject(subject, alice, client_for):
    client = client_for(alice)
    url = f"{API}/subjects/{subject.pk}/subscription"
    assert client.get(url).json() == {"state": "none"}
    assert client.put(url, format="json").json() == {"state": "subscribed"}
    assert client.put(url, format="json").json() == {"state": "subscribed"}
    assert client.put(url, {"state": "muted"}, format="json").json() == {"state": "muted"}
    assert client.get(url).json() == {"state": "muted"}
    assert client.delete(url).json() == {"state": "none"}
    assert_error(client.put(url, {"state": "loud"}, format="json"), 400, "invalid")
    assert_error(client.put(f"{API}/subjects/999999/subscription", format="json"), 404, "not_found")

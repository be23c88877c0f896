"""API.md, status and visibility per viewer, and the public counters."""

from __future__ import annotations

import pytest

from comments import services

from ..factories import CommentFactory, set_likes
from .conftest import API, first_page, ids


def url(subject):
    return f"{API}/subjects/{subject.pk}/comments"


def listing(client, subject, mode):
    """Every comment id the client sees in ``mode`` (two_level: roots and reply previews)."""
    items = first_page(client, url(subject), {"mode": mode, "replies": 10, "limit": 100})["items"]
    seen = {}
    for item in items:
        seen[item["id"]] = item
        for reply in item.get("replies", []):
            seen[reply["id"]] = reply
    return seen


MODES = ["two_level", "flat", "stacked"]


@pytest.mark.parametrize("mode", MODES)
def test_a_pending_comment_is_seen_by_its_author_as_pending_and_by_nobody_else(
    api, client_for, user, other_user, subject, mode
):
    root = CommentFactory(subject=subject, author=other_user)
    pending_root = CommentFactory(subject=subject, author=user)
    pending_reply = CommentFactory(subject=subject, author=user, reply_to=root)
    for c in (pending_root, pending_reply):
        services.comment_set_status(comment_id=c.pk, to_status="pending")
    mine = listing(client_for(user), subject, mode)
    assert mine[pending_root.pk]["status"] == "pending"
    assert mine[pending_reply.pk]["status"] == "pending"
    assert client_for(user).get(f"{API}/comments/{pending_root.pk}").json()["status"] == "pending"
    for client in (api, client_for(other_user)):
        seen = listing(client, subject, mode)
        assert pending_root.pk not in seen and pending_reply.pk not in seen
        assert root.pk in seen
        assert client.get(f"{API}/comments/{pending_root.pk}").status_code == 404


@pytest.mark.parametrize("mode", MODES)
def test_a_shadow_comment_looks_published_to_its_author_and_is_hidden_from_others(
    api, client_for, user, other_user, subject, mode
):
    root = CommentFactory(subject=subject, author=other_user)
    shadow_root = CommentFactory(subject=subject, author=user)
    shadow_reply = CommentFactory(subject=subject, author=user, reply_to=root)
    for c in (shadow_root, shadow_reply):
        services.comment_set_status(comment_id=c.pk, to_status="shadow")
    mine = listing(client_for(user), subject, mode)
    assert mine[shadow_root.pk]["status"] == "published"
    assert mine[shadow_reply.pk]["status"] == "published"
    detail = client_for(user).get(f"{API}/comments/{shadow_root.pk}").json()
    assert detail["status"] == "published" and detail["body"]
    for client in (api, client_for(other_user)):
        seen = listing(client, subject, mode)
        assert shadow_root.pk not in seen and shadow_reply.pk not in seen
        assert client.get(f"{API}/comments/{shadow_root.pk}").status_code == 404


def test_a_shadow_reply_is_not_counted_in_the_public_reply_count(api, client_for, user, other_user, subject):
    root = CommentFactory(subject=subject, author=other_user)
    shadow = CommentFactory(subject=subject, author=user, reply_to=root)
    services.comment_set_status(comment_id=shadow.pk, to_status="shadow")
    assert api.get(f"{API}/comments/{root.pk}").json()["reply_count"] == 0


@pytest.mark.parametrize("mode", MODES)
def test_a_friends_only_comment_is_seen_by_its_author_and_mutual_followers_only(
    api, client_for, user, other_user, third_user, subject, mode
):
    services.follow_set(follower=user, followee_id=other_user.pk, following=True)
    services.follow_set(follower=other_user, followee_id=user.pk, following=True)
    services.follow_set(follower=third_user, followee_id=user.pk, following=True)  # follows, not followed back
    root = CommentFactory(subject=subject, author=other_user)
    friends_root = CommentFactory(subject=subject, author=user, visibility="friends")
    friends_reply = CommentFactory(subject=subject, author=user, reply_to=root, visibility="friends")
    for client in (client_for(user), client_for(other_user)):
        seen = listing(client, subject, mode)
        assert friends_root.pk in seen and friends_reply.pk in seen
        assert seen[friends_root.pk]["visibility"] == "friends"
        assert client.get(f"{API}/comments/{friends_root.pk}").status_code == 200
    for client in (api, client_for(third_user)):
        seen = listing(client, subject, mode)
        assert friends_root.pk not in seen and friends_reply.pk not in seen
        assert client.get(f"{API}/comments/{friends_root.pk}").status_code == 404


def test_a_friends_only_comment_disappears_when_the_friendship_ends(client_for, user, other_user, subject):
    services.follow_set(follower=user, followee_id=other_user.pk, following=True)
    services.follow_set(follower=other_user, followee_id=user.pk, following=True)
    comment = CommentFactory(subject=subject, author=user, visibility="friends")
    assert client_for(other_user).get(f"{API}/comments/{comment.pk}").status_code == 200
    client_for(user).delete(f"{API}/users/{other_user.pk}/follow")
    assert client_for(other_user).get(f"{API}/comments/{comment.pk}").status_code == 404


@pytest.mark.parametrize("status", ["deleted", "rejected"])
@pytest.mark.parametrize("mode", MODES)
def test_a_gone_comment_with_visible_replies_is_a_placeholder(api, client_for, user, other_user, subject, status, mode):
    root = CommentFactory(subject=subject, author=user, body="secret words")
    reply = CommentFactory(subject=subject, author=other_user, reply_to=root)
    services.comment_set_status(comment_id=root.pk, to_status=status)
    for client in (api, client_for(other_user), client_for(user)):
        seen = listing(client, subject, mode)
        assert reply.pk in seen
        placeholder = seen[root.pk]
        assert (placeholder["author"], placeholder["body"], placeholder["html"]) == (None, "", "")
        assert placeholder["status"] == status
        detail = client.get(f"{API}/comments/{root.pk}")
        assert detail.status_code == 200
        assert (detail.json()["author"], detail.json()["body"], detail.json()["html"]) == (None, "", "")
        assert "secret words" not in detail.content.decode()


@pytest.mark.parametrize("status", ["deleted", "rejected"])
@pytest.mark.parametrize("mode", MODES)
def test_a_gone_comment_without_visible_replies_is_left_out(api, client_for, user, other_user, subject, status, mode):
    kept = CommentFactory(subject=subject, author=user)
    root = CommentFactory(subject=subject, author=user)
    hidden_reply = CommentFactory(subject=subject, author=other_user, reply_to=root)
    services.comment_set_status(comment_id=hidden_reply.pk, to_status="pending")
    services.comment_set_status(comment_id=root.pk, to_status=status)
    seen = listing(api, subject, mode)
    assert set(seen) == {kept.pk}
    assert api.get(f"{API}/comments/{root.pk}").status_code == 404


@pytest.mark.parametrize("mode", MODES)
def test_site_moderators_see_everything_with_the_true_status(client_for, moderator, user, other_user, subject, mode):
    root = CommentFactory(subject=subject, author=other_user)
    made = {
        status: CommentFactory(subject=subject, author=user, body=f"{status} body")
        for status in ("pending", "shadow", "deleted", "rejected")
    }
    made["reply-pending"] = CommentFactory(subject=subject, author=user, reply_to=root, body="reply-pending body")
    for status, comment in made.items():
        services.comment_set_status(comment_id=comment.pk, to_status=status.replace("reply-", ""))
    friends = CommentFactory(subject=subject, author=user, visibility="friends")
    seen = listing(client_for(moderator), subject, mode)
    for status, comment in made.items():
        assert seen[comment.pk]["status"] == status.replace("reply-", "")
        assert seen[comment.pk]["body"] == f"{status} body"
        assert seen[comment.pk]["author"]["id"] == user.pk
    assert friends.pk in seen
    detail = client_for(moderator).get(f"{API}/comments/{made['shadow'].pk}").json()
    assert detail["status"] == "shadow"


def test_staff_see_everything_on_every_site(client_for, staff, user, subject):
    pending = CommentFactory(subject=subject, author=user)
    services.comment_set_status(comment_id=pending.pk, to_status="pending")
    assert client_for(staff).get(f"{API}/comments/{pending.pk}").json()["status"] == "pending"


def test_a_moderator_of_another_site_sees_only_public_comments(client_for, user, subject):
    from ..factories import SiteFactory, UserFactory

    mod = UserFactory(username="othermod")
    SiteFactory(key="elsewhere").moderators.add(mod)
    pending = CommentFactory(subject=subject, author=user)
    services.comment_set_status(comment_id=pending.pk, to_status="pending")
    assert client_for(mod).get(f"{API}/comments/{pending.pk}").status_code == 404
    assert pending.pk not in listing(client_for(mod), subject, "flat")


def test_counters_count_only_public_published_comments(api, user, other_user, subject):
    root = CommentFactory(subject=subject, author=user)
    r1 = CommentFactory(subject=subject, author=user, reply_to=root)
    CommentFactory(subject=subject, author=user, reply_to=r1)  # r1x, public
    CommentFactory(subject=subject, author=user, reply_to=r1, visibility="friends")
    pending = CommentFactory(subject=subject, author=user, reply_to=r1)
    shadow = CommentFactory(subject=subject, author=user, reply_to=root)
    deleted = CommentFactory(subject=subject, author=user, reply_to=root)
    pending_root = CommentFactory(subject=subject, author=user)
    CommentFactory(subject=subject, author=user, visibility="friends")
    for comment, status in ((pending, "pending"), (shadow, "shadow"), (deleted, "deleted"), (pending_root, "pending")):
        services.comment_set_status(comment_id=comment.pk, to_status=status)

    body = api.get(f"{API}/subjects/{subject.pk}").json()
    assert (body["comment_count"], body["root_count"]) == (3, 1)  # root, r1, r1x
    assert api.get(f"{API}/comments/{root.pk}").json()["reply_count"] == 2  # the whole thread: r1, r1x
    assert api.get(f"{API}/comments/{r1.pk}").json()["reply_count"] == 1  # direct: r1x
    item = first_page(api, url(subject), {"mode": "two_level"})["items"][0]
    assert item["id"] == root.pk and item["reply_count"] == 2
    assert api.get(f"{API}/counts", {"site": subject.site.key, "key": subject.key}).json() == {
        "counts": {subject.key: 3}
    }


def test_counters_come_back_when_a_pending_comment_is_published(api, user, subject):
    root = CommentFactory(subject=subject, author=user)
    reply = CommentFactory(subject=subject, author=user, reply_to=root)
    services.comment_set_status(comment_id=reply.pk, to_status="pending")
    assert api.get(f"{API}/comments/{root.pk}").json()["reply_count"] == 0
    services.comment_set_status(comment_id=reply.pk, to_status="published")
    assert api.get(f"{API}/comments/{root.pk}").json()["reply_count"] == 1
    assert api.get(f"{API}/subjects/{subject.pk}").json()["comment_count"] == 2


def test_reply_previews_leave_out_what_the_viewer_may_not_see(api, client_for, user, other_user, subject):
    root = CommentFactory(subject=subject, author=other_user)
    visible = CommentFactory(subject=subject, author=other_user, reply_to=root)
    pending = CommentFactory(subject=subject, author=user, reply_to=root)
    set_likes(pending, 100)  # liked while published, then held for review
    services.comment_set_status(comment_id=pending.pk, to_status="pending")
    assert ids(first_page(api, url(subject))["items"][0]["replies"]) == [visible.pk]
    assert ids(first_page(client_for(user), url(subject))["items"][0]["replies"]) == [pending.pk, visible.pk]


def test_the_reply_to_author_of_a_hidden_target_is_not_revealed(client_for, user, other_user, subject):
    root = CommentFactory(subject=subject, author=other_user)
    services.comment_set_status(comment_id=root.pk, to_status="pending")
    reply = CommentFactory(subject=subject, author=other_user, reply_to=root)
    seen = listing(client_for(user), subject, "flat")
    assert root.pk not in seen
    assert seen[reply.pk]["reply_to"] == {"id": root.pk, "author": None}


def test_a_deleted_top_level_comment_stays_a_placeholder_for_whoever_sees_one_of_its_replies(
    client_for, api, user, other_user, third_user, subject
):
    """Visibility is per viewer, so "kept for its visible replies" is too: a reply only some
    viewers may see (friends-only, or the viewer's own pending reply) keeps its deleted parent
    as a placeholder for them, or the thread vanishes for exactly the people who may read it."""
    services.follow_set(follower=other_user, followee_id=third_user.pk, following=True)
    services.follow_set(follower=third_user, followee_id=other_user.pk, following=True)
    root = CommentFactory(subject=subject, author=user)
    friends_reply = CommentFactory(subject=subject, author=other_user, reply_to=root, visibility="friends")
    services.comment_set_status(comment_id=root.pk, to_status="deleted")
    assert root.pk not in listing(api, subject, "two_level")  # nothing public below it
    for viewer in (other_user, third_user):
        seen = listing(client_for(viewer), subject, "two_level")
        assert root.pk in seen, f"the thread of {friends_reply.pk} vanished for {viewer}"
        assert seen[root.pk]["author"] is None and seen[root.pk]["body"] == ""
        assert friends_reply.pk in seen

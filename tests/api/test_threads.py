"""API.md, Comments: list 2 (replies), chain, tree and a user's comments."""

from __future__ import annotations

import pytest

from comments import services

from ..factories import CommentFactory, SubjectFactory, UserFactory
from .conftest import API, assert_comment_shape, assert_error, first_page, ids, set_likes, walk_ids

# --- replies -------------------------------------------------------------------------------


def thread(subject, user):
    """root with r0..r4 in creation order: r0, r1 -> root, r2 -> r0, r3 -> root, r4 -> r2."""
    root = CommentFactory(subject=subject, author=user)
    r0 = CommentFactory(subject=subject, author=user, reply_to=root)
    r1 = CommentFactory(subject=subject, author=user, reply_to=root)
    r2 = CommentFactory(subject=subject, author=user, reply_to=r0)
    r3 = CommentFactory(subject=subject, author=user, reply_to=root)
    r4 = CommentFactory(subject=subject, author=user, reply_to=r2)
    return root, [r0, r1, r2, r3, r4]


def test_replies_lists_every_reply_of_the_thread_oldest_first_by_default(api, user, subject):
    root, replies = thread(subject, user)
    CommentFactory(subject=subject, author=user)  # another thread
    body = first_page(api, f"{API}/comments/{root.pk}/replies")
    assert body["next_cursor"] is None
    assert ids(body["items"]) == [r.pk for r in replies]
    for item in body["items"]:
        assert_comment_shape(item)
        assert item["root_id"] == root.pk
    assert body["items"][4]["reply_to"]["id"] == replies[2].pk
    assert ids(first_page(api, f"{API}/comments/{root.pk}/replies", {"sort": "old"})["items"]) == [
        r.pk for r in replies
    ]


def test_replies_sort_new_lists_newest_first(api, user, subject):
    root, replies = thread(subject, user)
    assert ids(first_page(api, f"{API}/comments/{root.pk}/replies", {"sort": "new"})["items"]) == [
        r.pk for r in reversed(replies)
    ]


def test_replies_sort_hot_lists_the_hottest_first_then_the_rest_oldest_first(api, user, subject, settings):
    settings.COMMENTS_HOT_LIMIT = 2
    root, r = thread(subject, user)
    set_likes(r[3], 5)
    set_likes(r[1], 3)
    set_likes(r[4], 1)  # liked, but not among the 2 hottest: placed by time
    expected = [r[3].pk, r[1].pk, r[0].pk, r[2].pk, r[4].pk]
    assert ids(first_page(api, f"{API}/comments/{root.pk}/replies", {"sort": "hot"})["items"]) == expected
    for limit in (1, 2, 3):
        assert walk_ids(api, f"{API}/comments/{root.pk}/replies", {"sort": "hot", "limit": limit}) == expected


def test_replies_sort_hot_breaks_like_ties_oldest_first(api, user, subject):
    root, r = thread(subject, user)
    set_likes(r[4], 2)
    set_likes(r[1], 2)
    assert ids(first_page(api, f"{API}/comments/{root.pk}/replies", {"sort": "hot"})["items"])[:2] == [r[1].pk, r[4].pk]


def test_replies_of_a_reply_are_invalid(api, user, subject):
    root, replies = thread(subject, user)
    assert_error(api.get(f"{API}/comments/{replies[0].pk}/replies"), 400, "invalid")


@pytest.mark.parametrize("sort", ["top", "", "\x00"])
def test_replies_with_an_unknown_sort_are_invalid(api, user, subject, sort):
    root, _ = thread(subject, user)
    assert_error(api.get(f"{API}/comments/{root.pk}/replies", {"sort": sort}), 400, "invalid")


def test_replies_of_an_unknown_comment_are_not_found(api, db):
    assert_error(api.get(f"{API}/comments/31337/replies"), 404, "not_found")


# --- chain ---------------------------------------------------------------------------------


def test_the_chain_runs_from_the_top_level_comment_to_the_comment_itself(api, user, subject):
    root, r = thread(subject, user)
    body = api.get(f"{API}/comments/{r[4].pk}/chain").json()
    assert ids(body["items"]) == [root.pk, r[0].pk, r[2].pk, r[4].pk]
    assert [i["depth"] for i in body["items"]] == [0, 1, 2, 3]
    for item in body["items"]:
        assert_comment_shape(item)


def test_the_chain_of_a_top_level_comment_is_itself(api, user, subject):
    root, _ = thread(subject, user)
    assert ids(api.get(f"{API}/comments/{root.pk}/chain").json()["items"]) == [root.pk]


def test_a_chain_of_one_hundred_floors_comes_in_one_request(api, user, subject, django_assert_max_num_queries):
    chain = [CommentFactory(subject=subject, author=user)]
    for _ in range(99):
        chain.append(CommentFactory(subject=subject, author=user, reply_to=chain[-1]))
    with django_assert_max_num_queries(4):
        response = api.get(f"{API}/comments/{chain[-1].pk}/chain")
    assert response.status_code == 200
    items = response.json()["items"]
    assert ids(items) == [c.pk for c in chain]
    assert [i["depth"] for i in items] == list(range(100))
    assert [i["floor"] for i in items] == [1] + list(range(1, 100))


def test_a_chain_shows_deleted_ancestors_as_placeholders(api, user, subject):
    root, r = thread(subject, user)
    services.comment_set_status(comment_id=r[0].pk, to_status="deleted")
    items = api.get(f"{API}/comments/{r[2].pk}/chain").json()["items"]
    assert ids(items) == [root.pk, r[0].pk, r[2].pk]
    assert (items[1]["author"], items[1]["body"], items[1]["html"]) == (None, "", "")


def test_the_chain_of_an_unknown_comment_is_not_found(api, db):
    assert_error(api.get(f"{API}/comments/31337/chain"), 404, "not_found")


# --- tree ----------------------------------------------------------------------------------


def big_tree(subject, user):
    """A; B, C -> A; D -> B; E -> C; F -> B (created after E); G -> D; plus an unrelated H."""
    a = CommentFactory(subject=subject, author=user, body="A")
    b = CommentFactory(subject=subject, author=user, reply_to=a, body="B")
    c = CommentFactory(subject=subject, author=user, reply_to=a, body="C")
    d = CommentFactory(subject=subject, author=user, reply_to=b, body="D")
    e = CommentFactory(subject=subject, author=user, reply_to=c, body="E")
    f = CommentFactory(subject=subject, author=user, reply_to=b, body="F")
    g = CommentFactory(subject=subject, author=user, reply_to=d, body="G")
    CommentFactory(subject=subject, author=user, body="H")
    return a, b, c, d, e, f, g


def test_the_tree_is_depth_first_with_siblings_oldest_first(api, user, subject):
    a, b, c, d, e, f, g = big_tree(subject, user)
    body = first_page(api, f"{API}/comments/{a.pk}/tree")
    assert [i["body"] for i in body["items"]] == ["A", "B", "D", "G", "F", "C", "E"]
    assert body["next_cursor"] is None
    sub = first_page(api, f"{API}/comments/{b.pk}/tree")
    assert ids(sub["items"]) == [b.pk, d.pk, g.pk, f.pk]


@pytest.mark.parametrize("limit", [1, 2, 3, 6])
def test_the_tree_paginates_in_the_same_order(api, user, subject, limit):
    a, b, c, d, e, f, g = big_tree(subject, user)
    assert walk_ids(api, f"{API}/comments/{a.pk}/tree", {"limit": limit}) == [x.pk for x in (a, b, d, g, f, c, e)]


def test_the_tree_of_an_unknown_comment_is_not_found(api, db):
    assert_error(api.get(f"{API}/comments/31337/tree"), 404, "not_found")


def test_the_tree_leaves_out_what_the_viewer_may_not_see(api, user, other_user, subject):
    a, b, c, d, e, f, g = big_tree(subject, user)
    services.comment_set_status(comment_id=e.pk, to_status="pending")
    services.comment_set_status(comment_id=d.pk, to_status="deleted")
    items = first_page(api, f"{API}/comments/{a.pk}/tree")["items"]
    assert ids(items) == [a.pk, b.pk, d.pk, g.pk, f.pk, c.pk]
    assert (items[2]["author"], items[2]["body"]) == (None, "")


# --- a user's comments ---------------------------------------------------------------------


def test_a_users_comments_are_listed_newest_first_across_subjects(api, user, other_user, site):
    s1, s2 = SubjectFactory(site=site), SubjectFactory(site=site)
    mine = []
    mine.append(CommentFactory(subject=s1, author=user))
    CommentFactory(subject=s1, author=other_user)
    mine.append(CommentFactory(subject=s2, author=user))
    mine.append(CommentFactory(subject=s1, author=user, reply_to=mine[0]))
    body = first_page(api, f"{API}/users/{user.pk}/comments")
    assert ids(body["items"]) == [c.pk for c in reversed(mine)]
    assert {i["subject_id"] for i in body["items"]} == {s1.pk, s2.pk}
    for item in body["items"]:
        assert_comment_shape(item)
        assert item["author"]["id"] == user.pk
    assert walk_ids(api, f"{API}/users/{user.pk}/comments", {"limit": 1}) == [c.pk for c in reversed(mine)]


def _statuses(subject, user):
    published = CommentFactory(subject=subject, author=user)
    pending = CommentFactory(subject=subject, author=user)
    shadow = CommentFactory(subject=subject, author=user)
    deleted = CommentFactory(subject=subject, author=user)
    friends = CommentFactory(subject=subject, author=user, visibility="friends")
    services.comment_set_status(comment_id=pending.pk, to_status="pending")
    services.comment_set_status(comment_id=shadow.pk, to_status="shadow")
    services.comment_set_status(comment_id=deleted.pk, to_status="deleted")
    return published, pending, shadow, deleted, friends


def test_others_see_only_a_users_published_public_comments(api, client_for, user, other_user, subject):
    published, pending, shadow, deleted, friends = _statuses(subject, user)
    assert ids(first_page(api, f"{API}/users/{user.pk}/comments")["items"]) == [published.pk]
    assert ids(first_page(client_for(other_user), f"{API}/users/{user.pk}/comments")["items"]) == [published.pk]


def test_a_user_sees_every_own_comment_in_their_history(client_for, user, subject):
    published, pending, shadow, deleted, friends = _statuses(subject, user)
    items = first_page(client_for(user), f"{API}/users/{user.pk}/comments")["items"]
    assert ids(items) == [friends.pk, deleted.pk, shadow.pk, pending.pk, published.pk]
    status = {i["id"]: i["status"] for i in items}
    assert status[pending.pk] == "pending"
    assert status[shadow.pk] == "published"  # the author must not notice a shadow
    assert status[deleted.pk] == "deleted"
    assert status[published.pk] == "published"


def test_mutual_followers_see_a_users_friends_only_comments_in_the_history(
    client_for, user, other_user, third_user, subject
):
    published, pending, shadow, deleted, friends = _statuses(subject, user)
    services.follow_set(follower=user, followee_id=other_user.pk, following=True)
    services.follow_set(follower=other_user, followee_id=user.pk, following=True)
    services.follow_set(follower=third_user, followee_id=user.pk, following=True)  # one-way
    assert ids(first_page(client_for(other_user), f"{API}/users/{user.pk}/comments")["items"]) == [
        friends.pk,
        published.pk,
    ]
    assert ids(first_page(client_for(third_user), f"{API}/users/{user.pk}/comments")["items"]) == [published.pk]


def test_the_comments_of_an_unknown_user_are_not_found(api, db):
    assert_error(api.get(f"{API}/users/987654/comments"), 404, "not_found")


def test_the_comments_of_a_user_without_comments_are_an_empty_list(api, user):
    assert first_page(api, f"{API}/users/{user.pk}/comments") == {"items": [], "next_cursor": None}


# --- follows -------------------------------------------------------------------------------


def test_following_is_reported_and_becomes_mutual_when_followed_back(client_for, user, other_user):
    me, them = client_for(user), client_for(other_user)
    assert me.put(f"{API}/users/{other_user.pk}/follow").json() == {"following": True, "mutual": False}
    assert me.put(f"{API}/users/{other_user.pk}/follow").json() == {"following": True, "mutual": False}  # idempotent
    response = them.put(f"{API}/users/{user.pk}/follow")
    assert response.status_code == 200
    assert response.json() == {"following": True, "mutual": True}
    assert me.put(f"{API}/users/{other_user.pk}/follow").json() == {"following": True, "mutual": True}


def test_unfollowing_ends_following_and_mutuality(client_for, user, other_user):
    me, them = client_for(user), client_for(other_user)
    me.put(f"{API}/users/{other_user.pk}/follow")
    them.put(f"{API}/users/{user.pk}/follow")
    response = me.delete(f"{API}/users/{other_user.pk}/follow")
    assert response.status_code == 200
    assert response.json() == {"following": False, "mutual": False}
    assert me.delete(f"{API}/users/{other_user.pk}/follow").json() == {"following": False, "mutual": False}
    assert them.put(f"{API}/users/{user.pk}/follow").json() == {"following": True, "mutual": False}


def test_following_yourself_is_invalid(client_for, user):
    assert_error(client_for(user).put(f"{API}/users/{user.pk}/follow"), 400, "invalid")


def test_following_an_unknown_user_is_not_found(client_for, user):
    assert_error(client_for(user).put(f"{API}/users/987654/follow"), 404, "not_found")
    assert_error(client_for(user).delete(f"{API}/users/987654/follow"), 404, "not_found")


def test_following_an_inactive_user_is_not_found(client_for, user):
    gone = UserFactory(username="gone", is_active=False)
    assert_error(client_for(user).put(f"{API}/users/{gone.pk}/follow"), 404, "not_found")


def test_following_anonymously_is_not_authenticated(api, user):
    assert_error(api.put(f"{API}/users/{user.pk}/follow"), 401, "not_authenticated")
    assert_error(api.delete(f"{API}/users/{user.pk}/follow"), 401, "not_authenticated")

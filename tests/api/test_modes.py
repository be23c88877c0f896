"""API.md, GET /subjects/{id}/comments in the three display modes."""

from __future__ import annotations

import pytest

from comments import services

from ..factories import CommentFactory, SubjectFactory
from .conftest import API, assert_comment_shape, assert_error, first_page, ids, set_likes, set_pinned, walk_ids


def url(subject):
    return f"{API}/subjects/{subject.pk}/comments"


def roots_of(subject, user, n):
    return [CommentFactory(subject=subject, author=user, body=f"root {i}") for i in range(n)]


# --- two_level -----------------------------------------------------------------------------


def test_two_level_items_are_top_level_comments_with_reply_previews(api, user, subject):
    root = CommentFactory(subject=subject, author=user)
    replies = [CommentFactory(subject=subject, author=user, reply_to=root) for _ in range(5)]
    body = first_page(api, url(subject))
    assert body["next_cursor"] is None
    assert ids(body["items"]) == [root.pk]
    item = body["items"][0]
    assert_comment_shape(item)
    assert item["reply_count"] == 5
    assert len(item["replies"]) == 3  # default preview size
    for reply in item["replies"]:
        assert_comment_shape(reply)
        assert reply["root_id"] == root.pk
    assert ids(item["replies"]) == [r.pk for r in replies[:3]]  # no likes: oldest first


def test_reply_previews_are_most_liked_first_with_ties_oldest_first(api, user, subject):
    root = CommentFactory(subject=subject, author=user)
    r = [CommentFactory(subject=subject, author=user, reply_to=root) for _ in range(5)]
    deep = CommentFactory(subject=subject, author=user, reply_to=r[0])  # every depth of the thread
    set_likes(r[1], 1)
    set_likes(r[3], 5)
    set_likes(r[4], 1)
    set_likes(deep, 3)
    item = first_page(api, url(subject))["items"][0]
    assert ids(item["replies"]) == [r[3].pk, deep.pk, r[1].pk]
    item = first_page(api, url(subject), {"replies": 10})["items"][0]
    assert ids(item["replies"]) == [r[3].pk, deep.pk, r[1].pk, r[4].pk, r[0].pk, r[2].pk]
    assert item["replies"][0]["like_count"] == 5


def test_replies_zero_gives_empty_previews_and_ten_is_the_maximum(api, user, subject):
    root = CommentFactory(subject=subject, author=user)
    replies = [CommentFactory(subject=subject, author=user, reply_to=root) for _ in range(12)]
    assert first_page(api, url(subject), {"replies": 0})["items"][0]["replies"] == []
    assert ids(first_page(api, url(subject), {"replies": 10})["items"][0]["replies"]) == [r.pk for r in replies[:10]]
    assert ids(first_page(api, url(subject), {"replies": 1})["items"][0]["replies"]) == [replies[0].pk]


@pytest.mark.parametrize("replies", ["11", "-1", "", "abc", "3.5", "100"])
def test_a_replies_preview_size_outside_zero_to_ten_is_invalid(api, subject, replies):
    assert_error(api.get(url(subject), {"replies": replies}), 400, "invalid")


def test_two_level_sort_defaults_to_hot(api, user, subject):
    a, b, c = roots_of(subject, user, 3)
    set_likes(a, 5)
    assert ids(first_page(api, url(subject))["items"]) == [a.pk, c.pk, b.pk]
    assert ids(first_page(api, url(subject), {"sort": "hot"})["items"]) == [a.pk, c.pk, b.pk]


def test_two_level_sort_new_and_old_order_by_creation_time(api, user, subject):
    roots = roots_of(subject, user, 4)
    set_likes(roots[1], 50)
    CommentFactory(subject=subject, author=user, reply_to=roots[2])
    assert ids(first_page(api, url(subject), {"sort": "new"})["items"]) == [r.pk for r in reversed(roots)]
    assert ids(first_page(api, url(subject), {"sort": "old"})["items"]) == [r.pk for r in roots]


@pytest.mark.parametrize("sort", ["hot", "new", "old"])
def test_pinned_comments_come_first_in_every_sort(api, user, subject, sort):
    roots = roots_of(subject, user, 4)
    set_likes(roots[3], 10)
    set_pinned(roots[1])
    items = first_page(api, url(subject), {"sort": sort})["items"]
    assert items[0]["id"] == roots[1].pk
    assert items[0]["pinned"] is True
    assert sorted(ids(items)) == sorted(r.pk for r in roots)
    assert not any(i["pinned"] for i in items[1:])
    rest = ids(items[1:])
    expected = {
        "hot": [roots[3].pk, roots[2].pk, roots[0].pk],
        "new": [roots[3].pk, roots[2].pk, roots[0].pk],
        "old": [roots[0].pk, roots[2].pk, roots[3].pk],
    }[sort]
    assert rest == expected


def test_hot_lists_the_hottest_first_then_the_rest_newest_first(api, user, subject, settings):
    settings.COMMENTS_HOT_LIMIT = 3
    r = roots_of(subject, user, 7)
    set_likes(r[1], 9)
    set_likes(r[5], 4)
    set_likes(r[0], 4)  # tie with r[5]: the newer one first
    set_likes(r[3], 1)  # hot, but not among the 3 hottest: placed by time
    expected = [r[1].pk, r[5].pk, r[0].pk, r[6].pk, r[4].pk, r[3].pk, r[2].pk]
    assert ids(first_page(api, url(subject), {"sort": "hot"})["items"]) == expected
    for limit in (1, 2, 3, 4):
        assert walk_ids(api, url(subject), {"sort": "hot", "limit": limit}) == expected


def test_replies_make_a_top_level_comment_hot(api, user, subject, settings):
    settings.COMMENTS_HOT_LIMIT = 1
    a, b, c = roots_of(subject, user, 3)
    for _ in range(3):
        CommentFactory(subject=subject, author=user, reply_to=a)
    assert ids(first_page(api, url(subject))["items"]) == [a.pk, c.pk, b.pk]


def test_hot_with_pinned_comments_keeps_pinned_then_hottest_then_newest(api, user, subject, settings):
    settings.COMMENTS_HOT_LIMIT = 2
    r = roots_of(subject, user, 6)
    set_pinned(r[2])
    set_likes(r[0], 7)
    set_likes(r[4], 3)
    set_likes(r[1], 1)
    expected = [r[2].pk, r[0].pk, r[4].pk, r[5].pk, r[3].pk, r[1].pk]
    assert ids(first_page(api, url(subject))["items"]) == expected
    assert walk_ids(api, url(subject), {"limit": 1}) == expected


# --- mode parameter ------------------------------------------------------------------------


def test_mode_defaults_to_the_subjects_mode(api, user, site):
    flat = SubjectFactory(site=site, mode="flat")
    root = CommentFactory(subject=flat, author=user)
    reply = CommentFactory(subject=flat, author=user, reply_to=root)
    items = first_page(api, url(flat))["items"]
    assert ids(items) == [root.pk, reply.pk]
    assert "replies" not in items[0] and "chain" not in items[0]


def test_a_subjects_mode_change_is_a_view_over_the_same_comments(client_for, moderator, user, subject, api):
    root = CommentFactory(subject=subject, author=user)
    reply = CommentFactory(subject=subject, author=user, reply_to=root)
    assert ids(first_page(api, url(subject))["items"]) == [root.pk]
    client_for(moderator).patch(f"{API}/subjects/{subject.pk}", {"mode": "stacked"}, format="json")
    items = first_page(api, url(subject))["items"]
    assert ids(items) == [root.pk, reply.pk]
    assert ids(items[1]["chain"]) == [root.pk]


@pytest.mark.parametrize("mode", ["tree", "", "FLAT", "\x00"])
def test_an_unknown_mode_is_invalid(api, subject, mode):
    assert_error(api.get(url(subject), {"mode": mode}), 400, "invalid")


@pytest.mark.parametrize("sort", ["top", "", "HOT", "\x00"])
def test_an_unknown_sort_is_invalid(api, subject, sort):
    assert_error(api.get(url(subject), {"sort": sort}), 400, "invalid")


def test_listing_an_unknown_subject_is_not_found(api, db):
    assert_error(api.get(f"{API}/subjects/555555/comments"), 404, "not_found")


# --- flat ----------------------------------------------------------------------------------


def make_tree(subject, user):
    """a, b top level; a1 -> a; a1x -> a1; b1 -> b; a2 -> a (in that creation order)."""
    a = CommentFactory(subject=subject, author=user, body="a")
    b = CommentFactory(subject=subject, author=user, body="b")
    a1 = CommentFactory(subject=subject, author=user, reply_to=a, body="a1")
    a1x = CommentFactory(subject=subject, author=user, reply_to=a1, body="a1x")
    b1 = CommentFactory(subject=subject, author=user, reply_to=b, body="b1")
    a2 = CommentFactory(subject=subject, author=user, reply_to=a, body="a2")
    return a, b, a1, a1x, b1, a2


def test_flat_lists_every_depth_oldest_first_by_default(api, user, subject):
    made = make_tree(subject, user)
    items = first_page(api, url(subject), {"mode": "flat"})["items"]
    assert ids(items) == [c.pk for c in made]
    for item in items:
        assert_comment_shape(item)
    by_id = {i["id"]: i for i in items}
    a, _, a1, a1x, _, _ = made
    assert by_id[a1x.pk]["reply_to"]["id"] == a1.pk
    assert by_id[a1x.pk]["reply_to"]["author"]["id"] == user.pk
    assert by_id[a1x.pk]["root_id"] == a.pk and by_id[a1x.pk]["depth"] == 2


def test_flat_sort_new_lists_newest_first(api, user, subject):
    made = make_tree(subject, user)
    assert ids(first_page(api, url(subject), {"mode": "flat", "sort": "new"})["items"]) == [
        c.pk for c in reversed(made)
    ]
    assert ids(first_page(api, url(subject), {"mode": "flat", "sort": "old"})["items"]) == [c.pk for c in made]


@pytest.mark.parametrize("mode", ["flat", "stacked"])
def test_sort_hot_is_invalid_in_flat_and_stacked(api, subject, mode):
    assert_error(api.get(url(subject), {"mode": mode, "sort": "hot"}), 400, "invalid")


def test_sort_hot_is_invalid_on_a_flat_subject_by_default_mode(api, flat_subject):
    assert_error(api.get(url(flat_subject), {"sort": "hot"}), 400, "invalid")


@pytest.mark.parametrize("mode", ["flat", "stacked"])
def test_replies_outside_zero_to_ten_is_invalid_in_every_mode(api, subject, mode):
    assert_error(api.get(url(subject), {"mode": mode, "replies": "11"}), 400, "invalid")


# --- stacked -------------------------------------------------------------------------------


def test_stacked_items_carry_their_ancestor_chain_top_level_first(api, user, subject):
    a, b, a1, a1x, b1, a2 = make_tree(subject, user)
    items = first_page(api, url(subject), {"mode": "stacked"})["items"]
    assert ids(items) == [a.pk, b.pk, a1.pk, a1x.pk, b1.pk, a2.pk]
    chains = {i["id"]: ids(i["chain"]) for i in items}
    assert chains == {a.pk: [], b.pk: [], a1.pk: [a.pk], a1x.pk: [a.pk, a1.pk], b1.pk: [b.pk], a2.pk: [a.pk]}
    for item in items:
        for link in item["chain"]:
            assert_comment_shape(link)
    assert items[3]["chain"][1]["body"] == "a1"


def test_stacked_chains_include_placeholders_for_deleted_ancestors(api, user, subject):
    a, b, a1, a1x, b1, a2 = make_tree(subject, user)
    services.comment_set_status(comment_id=a1.pk, to_status="deleted")
    items = first_page(api, url(subject), {"mode": "stacked"})["items"]
    by_id = {i["id"]: i for i in items}
    chain = by_id[a1x.pk]["chain"]
    assert ids(chain) == [a.pk, a1.pk]
    assert (chain[1]["author"], chain[1]["body"], chain[1]["html"]) == (None, "", "")
    assert chain[0]["body"] == "a"
    # a1 itself is listed as a placeholder because it has a visible reply
    assert (by_id[a1.pk]["author"], by_id[a1.pk]["body"], by_id[a1.pk]["html"]) == (None, "", "")
    assert by_id[a1x.pk]["reply_to"] == {"id": a1.pk, "author": None}


def test_stacked_sort_new_lists_newest_first_with_chains(api, user, subject):
    a, b, a1, a1x, b1, a2 = make_tree(subject, user)
    items = first_page(api, url(subject), {"mode": "stacked", "sort": "new"})["items"]
    assert ids(items) == [a2.pk, b1.pk, a1x.pk, a1.pk, b.pk, a.pk]
    assert ids(items[2]["chain"]) == [a.pk, a1.pk]


def test_a_deep_reply_shows_its_whole_chain_in_stacked_mode(api, user, subject):
    chain = [CommentFactory(subject=subject, author=user)]
    for _ in range(30):
        chain.append(CommentFactory(subject=subject, author=user, reply_to=chain[-1]))
    items = first_page(api, url(subject), {"mode": "stacked", "sort": "new", "limit": 1})["items"]
    assert ids(items) == [chain[-1].pk]
    assert ids(items[0]["chain"]) == [c.pk for c in chain[:-1]]
    assert [c["depth"] for c in items[0]["chain"]] == list(range(30))


def test_the_subjects_closed_state_still_lists_comments(api, user, subject, moderator):
    root = CommentFactory(subject=subject, author=user)
    services.subject_update(subject=subject, actor=moderator, state="closed")
    assert ids(first_page(api, url(subject))["items"]) == [root.pk]

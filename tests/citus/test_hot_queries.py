"""The hot queries of the comment tables, run inside ``hot_queries`` blocks so that
``scripts/check-citus-schema`` can hold their SQL to the Citus plan (each must name the subject
it reads or writes). Each test also checks the answer, so a block that stops running its
query fails here first."""

from __future__ import annotations

import pytest

from comments.models import Comment

from ..api.conftest import API
from ..factories import CommentFactory, SubjectFactory, UserFactory


@pytest.mark.parametrize(
    "mode, sort", [("two_level", "hot"), ("two_level", "new"), ("flat", "old"), ("stacked", "new")]
)
def test_a_subjects_comment_page(hot_queries, api, site, user, mode, sort):
    subject = SubjectFactory(site=site, mode=mode)
    root = CommentFactory(subject=subject, author=user)
    CommentFactory(subject=subject, reply_to=root)
    with hot_queries(f"comment page, {mode} sort={sort}"):
        response = api.get(f"{API}/subjects/{subject.pk}/comments", {"sort": sort})
    assert response.status_code == 200
    assert root.pk in [item["id"] for item in response.json()["items"]]


def test_posting_a_comment_and_a_reply(hot_queries, client_for, user, subject):
    client = client_for(user)
    root = CommentFactory(subject=subject)
    with hot_queries("post a comment"):
        top = client.post(f"{API}/subjects/{subject.pk}/comments", {"body": "Hello"}, format="json")
    with hot_queries("post a reply"):
        reply = client.post(
            f"{API}/subjects/{subject.pk}/comments", {"body": "Hi", "reply_to_id": root.pk}, format="json"
        )
    assert (top.status_code, reply.status_code) == (201, 201)
    assert reply.json()["reply_to_id"] == root.pk


def test_a_threads_replies(hot_queries, api, subject):
    root = CommentFactory(subject=subject)
    replies = [CommentFactory(subject=subject, reply_to=root) for _ in range(2)]
    for sort in ("hot", "old"):
        with hot_queries(f"replies of a thread, sort={sort}", comment_by_id=True):
            response = api.get(f"{API}/comments/{root.pk}/replies", {"sort": sort})
        assert sorted(item["id"] for item in response.json()["items"]) == sorted(r.pk for r in replies)


def test_likes_through_redis_and_their_flush(hot_queries, client_for, subject, redis_url):
    from likes.services import likes_flush

    comment = CommentFactory(subject=subject)
    fans = [UserFactory() for _ in range(2)]
    for fan in fans:
        with hot_queries("like a comment", comment_by_id=True):
            assert client_for(fan).put(f"{API}/comments/{comment.pk}/like").status_code == 200
    with hot_queries("flush likes"):
        assert likes_flush().events == 2
    assert Comment.objects.get(pk=comment.pk).like_count == 2


def test_likes_straight_to_the_database(hot_queries, client_for, subject, no_redis):
    comment = CommentFactory(subject=subject)
    fan = UserFactory()
    with hot_queries("like a comment without Redis", comment_by_id=True):
        assert client_for(fan).put(f"{API}/comments/{comment.pk}/like").json()["like_count"] == 1
    with hot_queries("unlike a comment without Redis", comment_by_id=True):
        assert client_for(fan).delete(f"{API}/comments/{comment.pk}/like").json()["like_count"] == 0


def test_editing_and_deleting_a_comment(hot_queries, client_for, user, subject):
    comment = CommentFactory(subject=subject, author=user)
    client = client_for(user)
    with hot_queries("edit a comment", comment_by_id=True):
        edited = client.patch(f"{API}/comments/{comment.pk}", {"body": "second words"}, format="json")
    assert edited.json()["body"] == "second words"
    with hot_queries("delete a comment", comment_by_id=True):
        assert client.delete(f"{API}/comments/{comment.pk}").status_code == 204


def test_reporting_a_comment_and_a_moderators_decision(hot_queries, client_for, subject, moderator):
    comment = CommentFactory(subject=subject)
    with hot_queries("report a comment", comment_by_id=True):
        reported = client_for(UserFactory()).post(
            f"{API}/comments/{comment.pk}/reports", {"reason": "spam"}, format="json"
        )
    assert reported.status_code == 201
    with hot_queries("a moderator rejects a comment", comment_by_id=True):
        decided = client_for(moderator).post(
            f"{API}/moderation/comments/{comment.pk}/actions", {"action": "reject", "reason": "spam"}, format="json"
        )
    assert decided.status_code == 200
    assert Comment.objects.get(pk=comment.pk).status == "rejected"


def test_a_subject_found_and_made_by_its_site_and_key(hot_queries, client_for, api, user, site):
    client = client_for(user)
    with hot_queries("make a subject"):
        made = client.post(f"{API}/subjects", {"site": site.key, "key": "article:new"}, format="json")
    with hot_queries("get the subject made"):
        again = client.post(f"{API}/subjects", {"site": site.key, "key": "article:new"}, format="json")
    with hot_queries("find a subject by site and key"):
        found = api.get(f"{API}/subjects/lookup", {"site": site.key, "key": "article:new"})
    assert (made.status_code, again.status_code, found.status_code) == (201, 200, 200)
    assert made.json()["id"] == again.json()["id"] == found.json()["id"]


def test_the_embed_page_finds_its_subject(hot_queries, client, subject):
    CommentFactory(subject=subject, body="Seen in the widget")
    with hot_queries("embed page"):
        page = client.get("/embed/", {"site": subject.site.key, "key": subject.key})
    assert "Seen in the widget" in page.content.decode()

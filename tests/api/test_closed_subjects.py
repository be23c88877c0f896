"""A closed subject is read-only for everyone but its site's moderators: no new comments or
replies, likes or unlikes, edits or reports from readers (``403 subject_closed``, in the
contract's shape), while everything stays readable, moderators act as before and an author may
still delete their own comment. Likes are tried on both stores: answered from Redis (where the
subject's open mark lets them through without the database) and from the database alone."""

from __future__ import annotations

import pytest
from django.test import Client

from comments.exceptions import NotFound, SubjectClosed
from comments.models import Comment, CommentContent, Status, Subject
from comments.services import comment_create, comment_edit
from infra import redislink
from likes import keys, live
from likes.services import like_set, likes_flush
from moderation.models import Report

from ..factories import CommentFactory, UserFactory
from .conftest import API, assert_error

# Real commits: a closing reaches the like script when its transaction commits, as in production.
pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def author():
    return UserFactory()


@pytest.fixture
def comment(subject, author):
    return CommentFactory(subject=subject, author=author, body="first words")


def close(client_for, moderator, subject, state="closed"):
    response = client_for(moderator).patch(f"{API}/subjects/{subject.pk}", {"state": state}, format="json")
    assert response.status_code == 200 and response.json()["state"] == state, response.content


def like_url(comment) -> str:
    return f"{API}/comments/{comment.id}/like"


def post(client, subject, body, **extra):
    return client.post(f"{API}/subjects/{subject.pk}/comments", {"body": body, **extra}, format="json")


def shown_like_count(comment) -> int:
    return Client().get(f"{API}/comments/{comment.id}").json()["like_count"]


def test_readers_may_not_comment_or_reply_in_a_closed_subject(client_for, moderator, subject, comment):
    close(client_for, moderator, subject)
    reader = client_for(UserFactory())

    assert_error(post(reader, subject, "late to the party"), 403, "subject_closed")
    assert_error(post(reader, subject, "a late answer", reply_to_id=comment.id), 403, "subject_closed")
    assert list(Comment.objects.filter(subject=subject).values_list("pk", flat=True)) == [comment.id]
    assert Subject.objects.get(pk=subject.pk).comment_count == 1


def test_moderators_still_comment_and_reply_in_a_closed_subject(client_for, moderator, subject, comment):
    close(client_for, moderator, subject)
    mod = client_for(moderator)

    assert post(mod, subject, "Closing this discussion, thanks all.").status_code == 201
    assert post(mod, subject, "Answered here.", reply_to_id=comment.id).status_code == 201
    assert Subject.objects.get(pk=subject.pk).comment_count == 3


def test_a_post_that_read_the_subject_open_is_refused_if_it_closed_before_the_write(subject, comment, moderator):
    """The post checks the subject's state as it read it, then again in the statement that
    stores it, on the row that statement locks: a closing that commits in between refuses the
    post, top-level or reply, and nothing of it is stored or counted."""
    as_read = Subject.objects.select_related("site").get(pk=subject.pk)
    Subject.objects.filter(pk=subject.pk).update(state="closed")  # a moderator closes it meanwhile
    counters = ("comment_count", "root_count", "floor_seq")
    before = Subject.objects.values_list(*counters).get(pk=subject.pk)
    reader = UserFactory()

    with pytest.raises(SubjectClosed):
        comment_create(subject=as_read, author=reader, body="just too late")
    with pytest.raises(SubjectClosed):
        comment_create(subject=as_read, author=reader, body="a late answer", reply_to_id=comment.id)

    assert list(Comment.objects.filter(subject=subject).values_list("pk", flat=True)) == [comment.id]
    assert Subject.objects.values_list(*counters).get(pk=subject.pk) == before
    assert Comment.objects.values_list("reply_count", "reply_floor_seq").get(pk=comment.pk) == (0, 0)

    # Its site's moderators still write there, on the same out-of-date read.
    assert comment_create(subject=as_read, author=moderator, body="Closing words.").floor == before[2] + 1
    assert comment_create(subject=as_read, author=moderator, body="An answer.", reply_to_id=comment.id).floor == 1


def test_a_post_to_a_subject_deleted_since_it_was_read_is_not_found(subject):
    as_read = Subject.objects.select_related("site").get(pk=subject.pk)
    Subject.objects.filter(pk=subject.pk).delete()

    with pytest.raises(NotFound):
        comment_create(subject=as_read, author=UserFactory(), body="anyone here?")
    assert not Comment.objects.filter(subject_id=subject.pk).exists()


def test_readers_may_not_like_or_unlike_in_a_closed_subject(client_for, moderator, subject, comment, like_store):
    fan, late = client_for(UserFactory()), client_for(UserFactory())
    # Liked while open: with Redis, the comment's state is loaded and its subject marked open.
    assert fan.put(like_url(comment)).json() == {"liked": True, "like_count": 1}
    close(client_for, moderator, subject)

    assert_error(late.put(like_url(comment)), 403, "subject_closed")
    assert_error(fan.delete(like_url(comment)), 403, "subject_closed")
    assert_error(fan.put(like_url(comment)), 403, "subject_closed")
    likes_flush()
    assert shown_like_count(comment) == 1
    assert Comment.objects.get(pk=comment.pk).like_count == 1


def test_moderators_still_like_in_a_closed_subject(client_for, moderator, subject, comment, like_store):
    client_for(UserFactory()).put(like_url(comment))
    close(client_for, moderator, subject)
    mod = client_for(moderator)

    assert mod.put(like_url(comment)).json() == {"liked": True, "like_count": 2}
    assert mod.delete(like_url(comment)).json() == {"liked": False, "like_count": 1}
    likes_flush()
    assert Comment.objects.get(pk=comment.pk).like_count == 1


def test_a_reopened_subject_takes_likes_again(client_for, moderator, subject, comment, like_store):
    fan = client_for(UserFactory())
    fan.put(like_url(comment))
    close(client_for, moderator, subject)
    assert_error(fan.delete(like_url(comment)), 403, "subject_closed")
    close(client_for, moderator, subject, state="open")

    assert fan.delete(like_url(comment)).json() == {"liked": False, "like_count": 0}
    assert client_for(UserFactory()).put(like_url(comment)).json() == {"liked": True, "like_count": 1}


def test_a_like_that_read_the_subject_open_before_it_closed_does_not_mark_it_open(
    subject, comment, redis_url, raw_redis
):
    assert like_set(comment_id=comment.pk, user=UserFactory(), liked=True) == (1, True)  # the subject is marked open
    r = redislink.client()
    live.mark_subject(r, subject_id=subject.pk, open=False)  # a closing commits

    # A like that read the subject open before the closing committed reaches Redis after it.
    late = live.like(
        r,
        subject_id=subject.pk,
        comment_id=comment.pk,
        user_id=UserFactory().pk,
        liked=True,
        checked=False,
        subject_open=True,
    )
    assert late.outcome is live.LikeOutcome.NEEDS_CHECK
    assert raw_redis.get(keys.subject_open(subject.pk)) == "0"
    assert 0 < raw_redis.ttl(keys.subject_open(subject.pk)) <= live.SUBJECT_OPEN_SECONDS


def test_without_its_open_mark_a_subject_is_asked_in_the_database(
    client_for, moderator, subject, comment, redis_url, raw_redis
):
    """The mark is lost (evicted, run out, Redis restarted): likes ask the database, which
    lets them through in an open subject and refuses them in a closed one."""
    client_for(UserFactory()).put(like_url(comment))
    raw_redis.delete(keys.subject_open(subject.pk))
    assert client_for(UserFactory()).put(like_url(comment)).json() == {"liked": True, "like_count": 2}
    assert raw_redis.get(keys.subject_open(subject.pk)) == "1"  # marked again by that like

    Subject.objects.filter(pk=subject.pk).update(state="closed")  # closed without telling Redis
    raw_redis.delete(keys.subject_open(subject.pk))
    assert_error(client_for(UserFactory()).put(like_url(comment)), 403, "subject_closed")


def test_authors_may_not_edit_in_a_closed_subject_unless_they_moderate(client_for, moderator, subject, comment, author):
    own = CommentFactory(subject=subject, author=moderator, body="a moderator's words")
    close(client_for, moderator, subject)

    assert_error(
        client_for(author).patch(f"{API}/comments/{comment.id}", {"body": "second words"}, format="json"),
        403,
        "subject_closed",
    )
    assert CommentContent.objects.get(pk=comment.pk).body == "first words"
    edited = client_for(moderator).patch(
        f"{API}/comments/{own.id}", {"body": "a moderator's second words"}, format="json"
    )
    assert edited.status_code == 200 and edited.json()["body"] == "a moderator's second words"


def test_an_edit_that_read_the_subject_open_is_refused_if_it_closed_before_the_write(subject, comment, author):
    as_read = Comment.objects.select_related("subject__site").get(pk=comment.pk)
    Subject.objects.filter(pk=subject.pk).update(state="closed")  # a moderator closes it meanwhile

    with pytest.raises(SubjectClosed):
        comment_edit(comment=as_read, editor=author, body="second words")
    assert CommentContent.objects.get(pk=comment.pk).body == "first words"
    assert Comment.objects.get(pk=comment.pk).edited_at is None


def test_readers_may_not_report_in_a_closed_subject(client_for, moderator, subject, comment):
    close(client_for, moderator, subject)
    report = {"reason": "spam"}

    assert_error(
        client_for(UserFactory()).post(f"{API}/comments/{comment.id}/reports", report, format="json"),
        403,
        "subject_closed",
    )
    assert not Report.objects.exists()
    assert client_for(moderator).post(f"{API}/comments/{comment.id}/reports", report, format="json").status_code == 201


def test_an_author_may_still_delete_their_comment_in_a_closed_subject(client_for, moderator, subject, comment, author):
    close(client_for, moderator, subject)
    assert client_for(author).delete(f"{API}/comments/{comment.id}").status_code == 204
    assert Comment.objects.get(pk=comment.pk).status == Status.DELETED


def test_a_closed_subject_stays_readable_and_moderated(api, client_for, moderator, subject, comment):
    close(client_for, moderator, subject)

    assert [c["id"] for c in api.get(f"{API}/subjects/{subject.pk}/comments").json()["items"]] == [comment.id]
    assert api.get(f"{API}/comments/{comment.id}").json()["body"] == "first words"
    for action in ("pin", "unpin", "reject", "restore"):
        response = client_for(moderator).post(
            f"{API}/moderation/comments/{comment.id}/actions", {"action": action}, format="json"
        )
        assert response.status_code == 200, (action, response.content)


def test_closing_in_the_admin_reaches_likes_answered_from_redis(client_for, subject, comment, redis_url):
    fan = client_for(UserFactory())
    fan.put(like_url(comment))
    staff = Client()
    staff.force_login(UserFactory(is_staff=True, is_superuser=True))
    form = {
        "site": subject.site_id,
        "key": subject.key,
        "title": subject.title,
        "url": "",
        "mode": subject.mode,
        "state": "closed",
    }
    response = staff.post(f"/admin/comments/subject/{subject.pk}/change/", form)
    assert response.status_code == 302, response.content.decode()[:2000]

    assert_error(fan.delete(like_url(comment)), 403, "subject_closed")

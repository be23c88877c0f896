"""The list filter (``queries.visible_sql``, evaluated by the database) and its Python twin
(``queries.can_see``, for one loaded row) must agree for every viewer on every row."""

import itertools

import pytest

from comments import rowsql, services
from comments.models import Comment, Status, Visibility
from comments.queries import Viewer, can_see, visible_sql

from ..factories import CommentFactory, UserFactory


@pytest.fixture
def world(subject):
    """A thread holding every status and visibility, by three authors, with gone comments that
    keep only public, only private or no descendants."""
    alice, bob, carol = (UserFactory(username=n) for n in ("alice", "bob", "carol"))
    services.follow_set(follower=alice, followee_id=bob.pk, following=True)
    services.follow_set(follower=bob, followee_id=alice.pk, following=True)  # alice <-> bob
    services.follow_set(follower=carol, followee_id=alice.pk, following=True)  # one way only
    root = CommentFactory(subject=subject, author=carol)
    for author, status, visibility in itertools.product(
        (alice, bob, carol),
        (Status.PUBLISHED, Status.PENDING, Status.SHADOW, Status.DELETED, Status.REJECTED),
        Visibility.values,
    ):
        parent = CommentFactory(subject=subject, author=author, reply_to=root, visibility=visibility)
        # Below each: a private reply by the same author, and (under carol's) a public one.
        CommentFactory(subject=subject, author=author, reply_to=parent, visibility=Visibility.FRIENDS)
        if author is carol:
            CommentFactory(subject=subject, author=carol, reply_to=parent)
        if status != Status.PUBLISHED:
            services.comment_set_status(comment_id=parent.pk, to_status=status)
    return subject, {"alice": alice, "bob": bob, "carol": carol}


@pytest.mark.django_db
def test_list_filter_and_can_see_agree_for_every_viewer_and_row(world):
    subject, users = world
    rows = list(Comment.objects.filter(subject=subject))
    assert {c.status for c in rows} == set(Status.values)
    viewers = {"anonymous": Viewer(user=None), "moderator": Viewer(user=users["carol"], is_moderator=True)}
    viewers.update({name: Viewer(user=u) for name, u in users.items()})
    for name, viewer in viewers.items():
        where = rowsql.in_subject(subject.pk) & visible_sql(viewer=viewer, subject_id=subject.pk)
        listed = {r.pk for r in rowsql.fetch(where)}
        twin = {c.pk for c in rows if can_see(viewer=viewer, comment=c)}
        assert listed == twin, name
    # And the rule itself, on a few rows: bob sees alice's friends-only reply, carol does not.
    friends_only = Comment.objects.filter(
        subject=subject, author=users["alice"], visibility=Visibility.FRIENDS, status=Status.PUBLISHED
    ).first()
    assert can_see(viewer=Viewer(user=users["bob"]), comment=friends_only)
    assert not can_see(viewer=Viewer(user=users["carol"]), comment=friends_only)
    assert not can_see(viewer=Viewer(user=None), comment=friends_only)

import threading

import pytest
from django.db import connection

from comments import services
from comments.models import Comment, Status

from ..factories import CommentFactory, SubjectFactory, UserFactory


def _post_concurrently(jobs):
    """Run each job in its own thread (own database connection), all released at once."""
    barrier = threading.Barrier(len(jobs))
    errors = []

    def run(job):
        try:
            barrier.wait()
            job()
        except Exception as exc:  # pragma: no cover - reported below
            errors.append(exc)
        finally:
            connection.close()

    threads = [threading.Thread(target=run, args=(job,)) for job in jobs]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors, errors


@pytest.mark.django_db(transaction=True)
def test_floors_stay_gapless_and_unique_under_concurrent_posting():
    subject = SubjectFactory()
    users = [UserFactory() for _ in range(6)]
    root = CommentFactory(subject=subject, author=users[0])

    def poster(user, n, reply_to):
        def job():
            for i in range(n):
                services.comment_create(subject=subject, author=user, body=f"{user.username} {i}", reply_to_id=reply_to)
        return job

    jobs = [poster(u, 8, None) for u in users[:3]] + [poster(u, 8, root.id) for u in users[3:]]
    _post_concurrently(jobs)

    top = list(Comment.objects.filter(subject=subject, depth=0).values_list("floor", flat=True))
    replies = list(Comment.objects.filter(root=root).values_list("floor", flat=True))
    assert sorted(top) == list(range(1, 26))
    assert sorted(replies) == list(range(1, 25))
    subject.refresh_from_db()
    assert (subject.comment_count, subject.root_count, subject.floor_seq) == (49, 25, 25)
    root.refresh_from_db()
    assert root.reply_count == 24


def test_floors_are_never_reused_after_a_deletion(subject, user):
    first = CommentFactory(subject=subject, author=user)
    second = CommentFactory(subject=subject, author=user)
    reply = CommentFactory(subject=subject, author=user, reply_to=first)
    services.comment_set_status(comment_id=second.id, to_status=Status.DELETED)
    services.comment_set_status(comment_id=reply.id, to_status=Status.DELETED)
    third = CommentFactory(subject=subject, author=user)
    reply2 = CommentFactory(subject=subject, author=user, reply_to=first)
    assert (first.floor, second.floor, third.floor) == (1, 2, 3)
    assert (reply.floor, reply2.floor) == (1, 2)


def test_replies_are_numbered_per_thread(subject, user):
    a = CommentFactory(subject=subject, author=user)
    b = CommentFactory(subject=subject, author=user)
    a1 = CommentFactory(subject=subject, author=user, reply_to=a)
    b1 = CommentFactory(subject=subject, author=user, reply_to=b)
    a2 = CommentFactory(subject=subject, author=user, reply_to=a1)
    assert [a1.floor, a2.floor, b1.floor] == [1, 2, 1]

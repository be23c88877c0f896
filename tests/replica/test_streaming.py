"""Reads through a real streaming replica (scripts/test-replica): a writer reads their write at
once while the replica lags, a replica too far behind or stopped leaves readers on the primary
with no error, a failure midway is answered again from the primary, and the shared page cache
is never filled from a replica that lacks a write."""

from __future__ import annotations

import pytest
from django.core.cache import cache
from django.core.handlers.exception import convert_exception_to_response
from django.db import connections, router
from django.http import HttpResponse
from rest_framework.test import APIClient

from comments import services
from comments.models import Comment
from infra import replicas
from tests import pg_replica
from tests.comments.test_replicas import reads, signed_in, touching
from tests.factories import CommentFactory, SubjectFactory, UserFactory

pytestmark = pytest.mark.django_db(transaction=True, databases=["default", "replica1"])


def page(client, subject) -> str:
    response = client.get(f"/api/v1/subjects/{subject.pk}/comments")
    assert response.status_code == 200
    return response.content.decode()


def post(client, subject, body: str) -> None:
    assert client.post(f"/api/v1/subjects/{subject.pk}/comments", {"body": body}, format="json").status_code == 201


def test_a_user_who_posts_reads_their_comment_at_once_while_the_replica_lags():
    subject = SubjectFactory()
    author, _ = signed_in(UserFactory())
    reader = APIClient()
    pg_replica.until_replayed()
    pg_replica.pause()
    post(author, subject, "just posted")
    with reads() as (primary, replica):
        assert "just posted" in page(author, subject)
    assert touching(primary, "comment_index") and not touching(replica, "comment_index")
    # A reader who wrote nothing is answered by the replica, which has not replayed it yet.
    with reads() as (primary, replica):
        assert "just posted" not in page(reader, subject)
    assert touching(replica, "comment_index") and not touching(primary, "comment_index")
    pg_replica.resume()
    pg_replica.until_replayed()
    assert "just posted" in page(reader, subject)


def test_the_writer_reads_the_replica_again_as_soon_as_it_has_replayed_the_write():
    subject = SubjectFactory()
    author, raw = signed_in(UserFactory())
    pg_replica.until_replayed()
    pg_replica.pause()
    post(author, subject, "mine")
    with reads() as (primary, replica):
        page(author, subject)
    assert not touching(replica, "comment_index")
    pg_replica.resume()
    pg_replica.until_replayed()
    # The entry still holds (it lasts DATABASE_REPLICA_MAX_LAG seconds): the WAL position decides.
    assert cache.get(replicas._pin_key("t:" + raw))
    with reads() as (primary, replica):
        assert "mine" in page(author, subject)
    assert touching(replica, "comment_index") and not touching(primary, "comment_index")


def test_a_replica_further_behind_than_the_limit_is_left_for_the_primary(settings):
    settings.DATABASE_REPLICA_MAX_LAG = 0.5
    subject = SubjectFactory()
    pg_replica.until_replayed()
    pg_replica.pause()
    CommentFactory(subject=subject, body="written during the lag")
    # Until the replica itself reports more lag than allowed (the probe the router reads).
    rounds = 0
    while replicas._probe("replica1", fresh=True).lag <= settings.DATABASE_REPLICA_MAX_LAG:
        rounds += 1
        assert rounds < 3000, "the paused replica never reported lag"
        CommentFactory(subject=SubjectFactory())  # keeps WAL arriving that it does not replay
    with reads() as (primary, replica):
        assert "written during the lag" in page(APIClient(), subject)
    assert touching(primary, "comment_index") and not touching(replica, "comment_index")


def test_a_stopped_replica_leaves_readers_on_the_primary_with_no_error():
    subject = SubjectFactory()
    CommentFactory(subject=subject, body="survives")
    pg_replica.until_replayed()
    with reads() as (primary, replica):
        assert "survives" in page(APIClient(), subject)
    assert touching(replica, "comment_index")
    pg_replica.stop()
    try:
        for _ in range(3):
            assert "survives" in page(APIClient(), subject)
        assert replicas._down_until.get("replica1", 0) > 0
    finally:
        pg_replica.start()
        replicas.reset()
    pg_replica.until_replayed()
    with reads() as (primary, replica):
        assert "survives" in page(APIClient(), subject)
    assert touching(replica, "comment_index") and not touching(primary, "comment_index")


def test_a_replica_failing_midway_through_a_request_is_answered_again_from_the_primary(rf):
    CommentFactory()
    pg_replica.until_replayed()
    attempts = []

    def view(request):
        attempts.append(router.db_for_read(Comment))
        Comment.objects.count()
        if len(attempts) == 1:
            pg_replica.terminate(pg_replica.backend_pid())
        return HttpResponse(str(Comment.objects.count()))

    try:
        response = replicas.ReplicaMiddleware(convert_exception_to_response(view))(rf.get("/"))
    finally:
        connections["replica1"].close()
    assert response.status_code == 200 and response.content == b"1"
    assert attempts == ["replica1", "default"]


def test_a_page_the_cache_shares_holds_a_write_the_replica_has_not_replayed(settings):
    settings.COMMENTS_PAGE_CACHE_TTL = 300
    settings.DATABASE_REPLICA_CATCH_UP = 10.0  # the first build waits for the replica
    subject = SubjectFactory()
    CommentFactory(subject=subject, body="first")
    pg_replica.until_replayed()
    reader = APIClient()
    with reads() as (primary, replica):
        assert "first" in page(reader, subject)
    assert touching(replica, "comment_index")  # built from the replica, which had everything
    pg_replica.pause()
    services.comment_create(subject=subject, author=UserFactory(), body="second")
    with reads() as (primary, replica):
        assert "second" in page(reader, subject)
    assert touching(primary, "comment_index") and not touching(replica, "comment_index")

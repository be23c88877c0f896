"""The queue of second checks: a new or edited comment is queued on a Redis stream and checked
in batches by ``rechecks.rechecks_run_queued`` (the beat task ``moderation.recheck_queued``);
without that Redis, or while it fails, it gets a task of its own. Nothing queued is lost when
the worker that read it dies."""

from __future__ import annotations

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from infra import redislink, streams
from moderation import rechecks, words
from moderation.models import ReviewTask, WordEntry
from moderation.rechecks import RECHECK_STREAM

from ..api.conftest import API

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def poster(client_for):
    from ..factories import UserFactory

    return client_for(UserFactory())


def post(client, subject, body: str) -> int:
    answer = client.post(f"{API}/subjects/{subject.pk}/comments", {"body": body}, format="json")
    assert answer.status_code == 201, answer.content
    return answer.json()["id"]


def word_behind_the_services_back(site, word: str) -> None:
    """A review word the request did not know (no re-scan runs): only a second check finds it."""
    WordEntry.objects.create(site=site, word=word, normalized=word, action="review")
    words.forget()


def test_a_post_is_queued_and_checked_with_the_others_of_its_batch(redis_url, raw_redis, site, subject, poster):
    flagged = [post(poster, subject, f"crypto talk {i}") for i in range(3)]
    clean = post(poster, subject, "hello there")
    word_behind_the_services_back(site, "crypto")
    assert raw_redis.xlen(RECHECK_STREAM) == 4
    assert not ReviewTask.objects.exists()

    assert rechecks.rechecks_run_queued() == 4
    tasks = {t.comment_id: t.reasons for t in ReviewTask.objects.all()}
    assert tasks == {pk: ["word:crypto"] for pk in flagged}
    assert clean not in tasks
    # Acknowledged and deleted: a second run finds nothing.
    assert raw_redis.xlen(RECHECK_STREAM) == 0
    assert raw_redis.xpending(RECHECK_STREAM, "flush")["pending"] == 0
    assert rechecks.rechecks_run_queued() == 0


def test_a_batch_costs_the_same_statements_for_one_comment_or_thirty(redis_url, settings, site, subject, poster):
    settings.MODERATION_BURST_LIMIT = 100  # nothing found: the statements counted are the reads
    one = [post(poster, subject, "a first thought")]
    many = [post(poster, subject, f"thought number {i}") for i in range(30)]
    rechecks.comments_recheck(comment_ids=[])  # the word lists loaded once, outside the counts

    def statements(ids) -> int:
        with CaptureQueriesContext(connection) as ran:
            found = rechecks.comments_recheck(comment_ids=ids)
        assert sorted(found) == sorted(ids)
        return len(ran)

    assert statements(many) == statements(one) <= 4


def test_the_second_check_counts_each_authors_record_on_its_own_site(redis_url, settings, site, subject, client_for):
    from ..factories import UserFactory

    settings.MODERATION_BURST_LIMIT = 3
    hasty, calm = client_for(UserFactory()), client_for(UserFactory())
    hasty_posts = [post(hasty, subject, f"quick {i}") for i in range(4)]
    calm_post = post(calm, subject, "slow and steady")
    found = rechecks.comments_recheck(comment_ids=[*hasty_posts, calm_post])
    assert all("spam:burst" in found[pk] for pk in hasty_posts)
    assert found[calm_post] == []


def test_checks_read_by_a_worker_that_died_are_taken_over(redis_url, raw_redis, settings, site, subject, poster):
    pk = post(poster, subject, "crypto again")
    word_behind_the_services_back(site, "crypto")
    # A worker read the entry and died before acknowledging it.
    read = streams.read_events(redislink.client(), RECHECK_STREAM, "worker-that-died", 10, 60_000)
    assert len(read) == 1
    assert rechecks.rechecks_run_queued() == 0  # not yet: it may still be working on it
    settings.MODERATION_RECHECK_RECLAIM = 0
    assert rechecks.rechecks_run_queued() == 1
    assert ReviewTask.objects.get(comment_id=pk).reasons == ["word:crypto"]
    assert raw_redis.xpending(RECHECK_STREAM, "flush")["pending"] == 0


def test_without_redis_a_post_gets_a_task_of_its_own(no_redis, settings, subject, poster):
    # Only the second check reads an author's record; with no burst allowed, it flags any post.
    settings.MODERATION_BURST_LIMIT = 0
    pk = post(poster, subject, "a post without redis")  # the eager task ran on commit
    assert ReviewTask.objects.get(comment_id=pk).reasons == ["spam:burst"]


def test_while_redis_fails_a_post_gets_a_task_of_its_own(settings, subject, poster):
    import socket

    with socket.socket() as probe:  # a port nobody listens on
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    settings.LIKES_REDIS_URL = f"redis://127.0.0.1:{port}/0"
    settings.MODERATION_BURST_LIMIT = 0
    redislink.reset()
    try:
        pk = post(poster, subject, "a post while redis is down")
        assert ReviewTask.objects.get(comment_id=pk).reasons == ["spam:burst"]
        assert redislink.client() is None  # marked down: the next posts go to tasks without trying
    finally:
        redislink.reset()

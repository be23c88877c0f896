"""Several app hosts on one database and one Redis (a Redis Cluster under
``scripts/test-cluster``): two gunicorn servers and two Celery workers with beat, started by
the test, serve one discussion at once. Readers, posters and likers go to either host; the
hosts agree: every post is stored once with an id of its own and its own floor, a page read on
one host shows what was written on the other within moments, and the flushes of two workers
(each with a beat of its own, so every flush is scheduled twice) leave each like once in the
database, with counts equal to what the readers last did."""

from __future__ import annotations

import json
import os
import random
import threading
from collections import Counter

import pytest

from comments.models import Comment, Subject
from comments.services import subject_reconcile_counters, token_issue
from likes.models import Like

from .api.conftest import API
from .factories import SubjectFactory, UserFactory
from .servers import Service, wait_until
from .workers import Workers, broker_url, test_database_url  # noqa: F401  (broker_url: a fixture)

pytestmark = pytest.mark.django_db(transaction=True)

POSTERS, POSTS_EACH = 6, 8
LIKERS, LIKE_ACTIONS_EACH = 8, 12


@pytest.fixture
def two_hosts(redis_url, broker_url, tmp_path):
    env = {
        **os.environ,
        "DJANGO_SETTINGS_MODULE": "config.settings",
        "DATABASE_URL": test_database_url(),
        "REDIS_URL": redis_url,
        "LIKES_REDIS_URL": redis_url,
        "CELERY_BROKER_URL": broker_url,
        "DJANGO_SECRET_KEY": os.environ.get("DJANGO_SECRET_KEY") or "app-hosts",
        "RATE_LIMITS": "off",
        "MODERATION_BURST_LIMIT": "1000000",
        "LIKES_FLUSH_INTERVAL": "0.2",
    }
    hosts = [Service(env), Service(env)]
    workers = Workers(
        tmp_path,
        redis_url,
        broker_url,
        queue=None,
        env={
            "RATE_LIMITS": "off",
            "MODERATION_BURST_LIMIT": "1000000",
            "LIKES_FLUSH_INTERVAL": "0.2",
        },
    )
    try:
        for host in hosts:
            host.start()
        workers.start()
        workers.start()
        yield hosts
    finally:
        for host in hosts:
            host.stop()
        workers.close()


def _json(answer) -> dict:
    status, _, body = answer
    assert 200 <= status < 300, (status, body[:300])
    return json.loads(body) if body else {}


def _in_parallel(jobs) -> None:
    errors = []

    def run(job):
        try:
            job()
        except BaseException as exc:  # noqa: BLE001 - reported by the test's thread
            errors.append(exc)

    threads = [threading.Thread(target=run, args=(job,)) for job in jobs]
    for t in threads:
        t.start()
    for t in threads:
        t.join(120)
    assert not [t for t in threads if t.is_alive()], "a client did not finish within 120 s"
    if errors:
        raise errors[0]


def _flat_ids(host: Service, subject_id: int) -> list[int]:
    ids, cursor = [], None
    while True:
        query = "mode=flat&limit=100" + (f"&cursor={cursor}" if cursor else "")
        page = _json(host.request("GET", f"{API}/subjects/{subject_id}/comments?{query}"))
        ids += [item["id"] for item in page["items"]]
        cursor = page.get("next_cursor")
        if not cursor:
            return ids


def test_two_app_hosts_and_two_workers_agree_on_posts_pages_and_likes(two_hosts):
    a, b = two_hosts
    subject = SubjectFactory()
    posters = [token_issue(user=UserFactory())[0] for _ in range(POSTERS)]
    likers = [(user, token_issue(user=user)[0]) for user in (UserFactory() for _ in range(LIKERS))]
    comments_path = f"{API}/subjects/{subject.pk}/comments"

    # Posts: every poster alternates between the hosts.
    posted: list[dict] = []

    def poster(n: int, token: str):
        for k in range(POSTS_EACH):
            host = two_hosts[(n + k) % 2]
            posted.append(_json(host.request("POST", comments_path, {"body": f"poster {n} post {k}"}, token)))

    _in_parallel([lambda n=n, t=t: poster(n, t) for n, t in enumerate(posters)])
    ids = [c["id"] for c in posted]
    assert len(set(ids)) == len(ids) == POSTERS * POSTS_EACH  # ids made in four processes, none twice
    floors = sorted(Comment.objects.filter(subject=subject).values_list("floor", flat=True))
    assert floors == list(range(1, len(ids) + 1))  # unique and gap-free across the hosts
    subject.refresh_from_db()
    assert subject.comment_count == subject.root_count == len(ids)

    # Each host reads every post, whichever host took it (its cached pages were dropped).
    assert sorted(_flat_ids(a, subject.pk)) == sorted(ids) == sorted(_flat_ids(b, subject.pk))
    last = _json(a.request("POST", comments_path, {"body": "the last word"}, posters[0]))["id"]
    wait_until(lambda: last in _flat_ids(b, subject.pk), "host b showing the post host a took", seconds=5)

    # Likes and unlikes on either host, each liker's last action per comment remembered.
    rng = random.Random(7)
    targets = ids[:10]
    last_action: dict[tuple[int, int], bool] = {}

    def liker(n: int, user_id: int, token: str):
        mine = rng.sample(targets, 4)
        for k in range(LIKE_ACTIONS_EACH):
            comment_id = mine[k % len(mine)]
            liked = not last_action.get((user_id, comment_id), False)
            host = two_hosts[(n + k) % 2]
            _json(host.request("PUT" if liked else "DELETE", f"{API}/comments/{comment_id}/like", None, token))
            last_action[(user_id, comment_id)] = liked

    _in_parallel([lambda n=n, u=u.pk, t=t: liker(n, u, t) for n, (u, t) in enumerate(likers)])
    expected = Counter(comment_id for (_, comment_id), liked in last_action.items() if liked)

    def flushed() -> bool:
        stored = Counter(Like.objects.filter(comment_id__in=targets, active=True).values_list("comment_id", flat=True))
        counts = dict(Comment.objects.filter(pk__in=targets).values_list("pk", "like_count"))
        return stored == expected and all(counts[c] == expected.get(c, 0) for c in targets)

    wait_until(flushed, "the workers flushing every like once")
    liked_rows = set(Like.objects.filter(comment_id__in=targets, active=True).values_list("user_id", "comment_id"))
    assert liked_rows == {key for key, liked in last_action.items() if liked}
    for comment_id in targets:  # both hosts answer the same live counts
        counts = {_json(host.request("GET", f"{API}/comments/{comment_id}"))["like_count"] for host in two_hosts}
        assert counts == {expected.get(comment_id, 0)}
    report = subject_reconcile_counters(subject_id=subject.pk)
    assert not report.fixed_comments and not report.fixed_subject, report
    assert Subject.objects.get(pk=subject.pk).comment_count == len(ids) + 1

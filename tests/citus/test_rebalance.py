"""Rebalancing under load (issue 34): a third Citus worker joins and shards move onto it
(``citus_rebalance_start``) while posts, likes and reads flow through the service under gunicorn
and a Celery worker flushes the likes. The moves really happen during the load (the rebalance's
status shows moves onto the new worker running while requests are answered, and shards end up
there), and afterwards nothing is lost or doubled: every post answered 201 is stored once, under
the id the API gave, each subject's count is its rows, the likes in the database are what the
likers last did, and no request was answered 5xx (a 503 included) or not at all.

The cluster is ``scripts/citus-cluster``'s, under the test database; the test puts it back as
it was (the third worker drained, removed and stopped) whatever happens."""

from __future__ import annotations

import json
import random
import threading
import time
from collections import Counter
from dataclasses import dataclass

import pytest
from django.db import connection

from comments.models import Comment, CommentContent, Subject
from comments.services import subject_reconcile_counters, token_issue
from likes.models import Like

from ..api.conftest import API
from ..citus_cluster import JOB_ENDED, REBALANCE_SECONDS, Cluster, log_tail, service_env, shard_port
from ..factories import SubjectFactory, UserFactory
from ..servers import Service, wait_until
from ..workers import Workers, broker_url  # noqa: F401  (a fixture)

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.slow]

POSTERS, LIKERS, READERS = 3, 3, 2
SEEDED_PER_SUBJECT = 2  # comments each subject starts with, the likers' targets
PACE_SECONDS = 0.05  # between one client's requests: load, not a flood
MAX_REQUESTS = 4000  # per client, whatever happens
MAX_SUBJECTS = 200  # made to find one on every shard of comment_subject
FLUSH_ENV = {"LIKES_FLUSH_INTERVAL": "0.2"}
KINDS = ("post", "like", "read")


@dataclass(frozen=True)
class Answer:
    kind: str  # post, like, read
    method: str
    path: str
    started: float
    ended: float
    status: int
    body: bytes


@pytest.fixture
def service(cluster, redis_url, broker_url, tmp_path):
    log = tmp_path / "gunicorn.log"
    server = Service(service_env(redis_url, broker_url, log, **FLUSH_ENV), workers=2)
    workers = Workers(
        tmp_path,
        redis_url,
        broker_url,
        queue=None,
        env={"RATE_LIMITS": "off", "MODERATION_BURST_LIMIT": "1000000", **FLUSH_ENV},
    )
    try:
        server.start()
        workers.start()
        yield server
    finally:
        server.stop()
        workers.close()
        print(f"----- the service's log -----\n{log_tail(log)}")


def _placements_on(port: int, table: str) -> list[int]:
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT p.shardid FROM pg_dist_placement p JOIN pg_dist_node n ON n.groupid = p.groupid "
            "JOIN pg_dist_shard s ON s.shardid = p.shardid "
            "WHERE n.nodeport = %s AND s.logicalrelid = %s::regclass ORDER BY 1",
            [port, table],
        )
        return [shard for (shard,) in cursor.fetchall()]


# --- the load ------------------------------------------------------------------------------------


def _subjects_on_every_shard() -> list:
    """Subjects until each shard of comment_subject holds one (so every move carries some)."""
    with connection.cursor() as cursor:
        cursor.execute("SELECT shardid FROM pg_dist_shard WHERE logicalrelid = 'comment_subject'::regclass")
        shards = {shard for (shard,) in cursor.fetchall()}
        found: dict[int, object] = {}
        for _ in range(MAX_SUBJECTS):
            subject = SubjectFactory()
            cursor.execute("SELECT get_shard_id_for_distribution_column('comment_subject', %s)", [subject.pk])
            found.setdefault(cursor.fetchone()[0], subject)
            if set(found) == shards:
                return list(found.values())
    pytest.fail(f"subjects on {len(found)} of {len(shards)} shards after {MAX_SUBJECTS}")


class Load:
    """Posters, likers and readers, each a thread sending one request after another (paced)
    until ``stop``; every answer is kept."""

    def __init__(self, service: Service, subjects: list, posters: list[str], likers: list, targets: list[int]):
        self.service, self.subjects, self.targets = service, subjects, targets
        self.posters, self.likers = posters, likers
        self.answers: list[Answer] = []
        self.posted: dict[int, int] = {}  # comment id -> subject id, of every post answered 201
        self.last_action: dict[tuple[int, int], bool] = {}  # (user, comment) -> liked, as answered
        self.stop = threading.Event()
        self.errors: list[BaseException] = []
        self.threads: list[threading.Thread] = []

    def _send(self, kind: str, method: str, path: str, body=None, token=None) -> tuple[int, bytes]:
        started = time.monotonic()
        status, _, answer = self.service.request(method, path, body, token)
        self.answers.append(Answer(kind, method, path, started, time.monotonic(), status, answer[:300]))
        return status, answer

    def _client(self, work) -> None:
        try:
            for k in range(MAX_REQUESTS):
                if self.stop.is_set():
                    return
                work(k)
                self.stop.wait(PACE_SECONDS)
        except BaseException as exc:  # noqa: BLE001 - reported by the test's thread
            self.errors.append(exc)

    def _poster(self, n: int, token: str):
        def work(k: int) -> None:
            subject = self.subjects[(n + k * POSTERS) % len(self.subjects)]
            path = f"{API}/subjects/{subject.pk}/comments"
            status, answer = self._send("post", "POST", path, {"body": f"poster {n} post {k}"}, token)
            if status == 201:
                comment_id = json.loads(answer)["id"]
                assert comment_id not in self.posted, f"id {comment_id} answered twice"
                self.posted[comment_id] = subject.pk

        return work

    def _liker(self, n: int, user_id: int, token: str):
        rng = random.Random(n)

        def work(k: int) -> None:
            comment_id = rng.choice(self.targets)
            liked = not self.last_action.get((user_id, comment_id), False)
            path = f"{API}/comments/{comment_id}/like"
            if self._send("like", "PUT" if liked else "DELETE", path, None, token)[0] == 200:
                self.last_action[(user_id, comment_id)] = liked

        return work

    def _reader(self, n: int):
        def work(k: int) -> None:
            subject = self.subjects[(n + k) % len(self.subjects)]
            # Every other read as a signed-in reader, whose page is not the cached public one.
            token = self.posters[k % len(self.posters)] if k % 2 else None
            self._send("read", "GET", f"{API}/subjects/{subject.pk}/comments?mode=flat", None, token)

        return work

    def start(self) -> None:
        works = [self._poster(n, token) for n, token in enumerate(self.posters)]
        works += [self._liker(n, user.pk, token) for n, (user, token) in enumerate(self.likers)]
        works += [self._reader(n) for n in range(READERS)]
        self.threads = [threading.Thread(target=self._client, args=(work,), daemon=True) for work in works]
        for thread in self.threads:
            thread.start()

    def finish(self) -> None:
        self.stop.set()
        for thread in self.threads:
            thread.join(60)
        assert not [t for t in self.threads if t.is_alive()], "a client did not stop within 60 s"
        if self.errors:
            raise self.errors[0]

    def flowing(self, since: dict[str, int] | None = None) -> bool:
        """Ten more answers of each kind than ``since`` (kind -> count); a client's error fails
        the test at once."""
        if self.errors:
            raise self.errors[0]
        return all(self.count(kind) >= (since or {}).get(kind, 0) + 10 for kind in KINDS)

    def count(self, kind: str, *, since: float = 0.0, until: float = float("inf")) -> int:
        """Requests of ``kind`` sent and answered between ``since`` and ``until``."""
        return sum(1 for a in list(self.answers) if a.kind == kind and since <= a.started and a.ended <= until)

    def in_flight(self, kind: str, first: float, last: float) -> int:
        """Requests of ``kind`` under way at some moment between ``first`` and ``last``."""
        return sum(1 for a in list(self.answers) if a.kind == kind and a.started <= last and a.ended >= first)


def _flat_ids(service: Service, subject_id: int) -> list[int]:
    ids, cursor = [], None
    for _ in range(1000):
        query = "mode=flat&limit=100" + (f"&cursor={cursor}" if cursor else "")
        status, _, body = service.request("GET", f"{API}/subjects/{subject_id}/comments?{query}")
        assert status == 200, (status, body[:300])
        page = json.loads(body)
        ids += [item["id"] for item in page["items"]]
        cursor = page.get("next_cursor")
        if not cursor:
            return ids
    pytest.fail(f"subject {subject_id}: more than 1000 pages")


def _rebalanced_under(load: Load, cluster: Cluster, new_port: int) -> tuple[list[str], float, float]:
    """Run the rebalance while ``load`` flows: the moves onto ``new_port`` seen running (their
    commands) and the first and last moment one was seen running."""
    target = f"127.0.0.1:{new_port}"
    moving: list[str] = []
    first = last = 0.0
    with cluster.coordinator() as db:
        db.execute("SELECT citus_rebalance_start()")
        deadline = time.monotonic() + REBALANCE_SECONDS
        while True:
            row = db.execute("SELECT state::text, details FROM citus_rebalance_status()").fetchone()
            assert row is not None, "no rebalance job"
            state, details = row
            now = time.monotonic()
            for task in (details or {}).get("tasks") or []:
                if task.get("state") == "running" and (task.get("hosts") or {}).get("target") == target:
                    first, last = first or now, now
                    if task["command"] not in moving:
                        moving.append(task["command"])
            if state in JOB_ENDED:
                break
            assert now < deadline, f"the rebalance still {state} after {REBALANCE_SECONDS:.0f} s: {details}"
            time.sleep(0.1)  # a poll of the job's progress, which has no event to wait on
        db.execute("SELECT citus_rebalance_wait()")
        assert state == "finished", f"the rebalance {state}: {details}"
    return moving, first, last


def test_shards_move_onto_a_new_worker_under_load_and_nothing_is_lost_or_doubled(cluster, service):
    subjects = _subjects_on_every_shard()
    posters = [token_issue(user=UserFactory())[0] for _ in range(POSTERS)]
    likers = [(user, token_issue(user=user)[0]) for user in (UserFactory() for _ in range(LIKERS))]
    seeded: dict[int, list[int]] = {}
    for subject in subjects:
        for k in range(SEEDED_PER_SUBJECT):
            status, _, body = service.request(
                "POST", f"{API}/subjects/{subject.pk}/comments", {"body": f"seed {k}"}, posters[0]
            )
            assert status == 201, (status, body[:300])
            seeded.setdefault(subject.pk, []).append(json.loads(body)["id"])
    targets = [comment_id for ids in seeded.values() for comment_id in ids]
    load = Load(service, subjects, posters, likers, targets)

    try:
        load.start()
        wait_until(load.flowing, "the load flowing")
        new_port = cluster.third_worker_added()
        started = time.monotonic()
        moving, first, last = _rebalanced_under(load, cluster, new_port)
        ended = time.monotonic()
        # The load goes on a while on the new placements.
        after = {kind: load.count(kind) for kind in KINDS}
        wait_until(lambda: load.flowing(after), "the load after the moves")
        load.finish()

        # The shards really moved, during the load.
        moved_subjects = _placements_on(new_port, "comment_subject")
        assert moved_subjects and _placements_on(new_port, "comment_index"), "no shard moved onto the new worker"
        assert moving, "no move onto the new worker seen running"
        for kind in KINDS:
            assert load.count(kind, since=started, until=ended) > 0, f"no {kind} answered during the rebalance"
            assert load.in_flight(kind, first, last) > 0, f"no {kind} while a move onto the new worker ran"
        with connection.cursor() as cursor:
            on_new = {s.pk for s in subjects if shard_port(cursor, "comment_subject", s.pk) == new_port}
        assert on_new, "none of the subjects' shards moved"
        posted_there = [c for c, s in load.posted.items() if s in on_new]
        assert posted_there, "no post reached a subject whose shard moved"

        # No request failed: no 5xx (503 included), none unanswered.
        print(f"load: {Counter((a.kind, a.status) for a in load.answers)}; moves onto the new worker: {moving}")
        failed = [a for a in load.answers if a.status not in {200, 201}]
        assert not failed, (Counter((a.kind, a.status) for a in failed), failed[:5])

        # Every post answered 201 stored once, under its id and subject, with its text; each
        # subject's count is its rows, and its pages list them all.
        posted = load.posted
        rows = Counter(Comment.objects.filter(pk__in=list(posted)).values_list("pk", "subject_id"))
        assert rows == Counter(posted.items())
        assert CommentContent.objects.filter(comment_id__in=list(posted)).count() == len(posted)
        for subject in subjects:
            expected = sorted(seeded[subject.pk] + [c for c, s in posted.items() if s == subject.pk])
            stored = sorted(Comment.objects.filter(subject_id=subject.pk).values_list("pk", flat=True))
            assert stored == expected, subject.pk
            assert Subject.objects.get(pk=subject.pk).comment_count == len(stored), subject.pk
            assert sorted(_flat_ids(service, subject.pk)) == expected, subject.pk

        # The likes, once flushed, are what the likers last did, each once.
        wanted = {key for key, liked in load.last_action.items() if liked}
        expected_counts = Counter(comment_id for _, comment_id in wanted)

        def flushed() -> bool:
            active = Like.objects.filter(comment_id__in=targets, active=True)
            counts = dict(Comment.objects.filter(pk__in=targets).values_list("pk", "like_count"))
            return set(active.values_list("user_id", "comment_id")) == wanted and all(
                counts[c] == expected_counts.get(c, 0) for c in targets
            )

        wait_until(flushed, "the worker flushing every like")
        assert Like.objects.filter(comment_id__in=targets, active=True).count() == len(wanted)  # none twice
        for comment_id in targets[:: max(1, len(targets) // 8)]:
            status, _, body = service.request("GET", f"{API}/comments/{comment_id}")
            assert status == 200 and json.loads(body)["like_count"] == expected_counts.get(comment_id, 0)
        for subject in subjects:
            report = subject_reconcile_counters(subject_id=subject.pk)
            assert not report.fixed_comments and not report.fixed_subject, report
    finally:
        load.stop.set()
        for thread in load.threads:
            thread.join(60)
        cluster.third_worker_removed()
        connection.close()  # its session's connections to the workers, the third among them
    assert _placements_on(cluster.worker_port(3), "comment_subject") == []

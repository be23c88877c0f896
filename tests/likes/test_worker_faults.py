"""Likes through real Celery workers (with beat), killed at the worst moments: inside the
flush's database transaction, and after its commit but before the stream entries are
acknowledged. The next worker must leave the database exact: no like lost, none counted twice.

Each worker is a subprocess in a session of its own (``celery -A config worker -B --pool
solo -Q likes``) on the test database, the suite's Redis for like state and a Redis database
of its own as broker (``TEST_CELERY_BROKER_URL``, else db 13 of the suite's Redis), emptied
before and after each test. A worker to be killed runs through ``tests/likes/paused_worker.py``,
which stops its flush at the chosen point until the test has SIGKILLed its whole process group.
"""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import time
import uuid
from pathlib import Path
from urllib.parse import quote, urlencode, urlsplit, urlunsplit

import pytest
import redis
from django.db import connection

from comments.models import Comment
from likes import keys
from likes.models import Like
from likes.services import like_set

from ..factories import CommentFactory, UserFactory

pytestmark = pytest.mark.django_db(transaction=True)

REPO = Path(__file__).resolve().parents[2]
WAIT_SECONDS = 60.0  # every wait on a worker is bounded by this
LOG_TAIL_LINES = 150


# --- where the workers connect ---------------------------------------------------------------


def _test_database_url() -> str:
    """The test database as a DATABASE_URL the worker's settings read back (config/env.py)."""
    db = connection.settings_dict
    if connection.vendor == "postgresql":
        auth = quote(db["USER"] or "", safe="")
        if db.get("PASSWORD"):
            auth += ":" + quote(db["PASSWORD"], safe="")
        host = db["HOST"] or ""
        port = f":{db['PORT']}" if db.get("PORT") else ""
        # Simple options ride along as the URL's query (server_side_binding=1, sslmode=...).
        options = {
            k: (int(v) if isinstance(v, bool) else v)
            for k, v in (db.get("OPTIONS") or {}).items() if isinstance(v, (str, int))
        }
        query = f"?{urlencode(options)}" if options else ""
        return f"postgres://{auth}@{host}{port}/{quote(db['NAME'], safe='')}{query}"
    if connection.vendor == "sqlite":
        name = str(db["NAME"])
        if not name or name == ":memory:" or name.startswith("file:"):
            pytest.skip("an in-memory SQLite test database cannot be shared with a worker process")
        return "sqlite:///" + os.path.abspath(name)  # sqlite:////abs/path
    pytest.skip(f"no worker DATABASE_URL for the {connection.vendor} backend")


def _broker_url_for(redis_url: str) -> str:
    explicit = os.environ.get("TEST_CELERY_BROKER_URL")
    if explicit:
        return explicit
    parts = urlsplit(redis_url)
    return urlunsplit((parts.scheme, parts.netloc, "/13", "", ""))


def _same_redis_database(a: str, b: str) -> bool:
    pa, pb = urlsplit(a), urlsplit(b)
    return (pa.hostname, pa.port or 6379, pa.path.strip("/") or "0") == (pb.hostname, pb.port or 6379, pb.path.strip("/") or "0")


@pytest.fixture
def broker_url(redis_url):
    """A Redis database of the workers' own as broker, empty before and after the test, so
    that tasks queued by one test's beat never reach the next test's worker."""
    url = _broker_url_for(redis_url)
    assert not _same_redis_database(url, redis_url), "the broker must not share the like state's Redis database"
    broker = redis.Redis.from_url(url)
    broker.flushdb()
    yield url
    broker.flushdb()


# --- workers ---------------------------------------------------------------------------------


class Worker:
    def __init__(self, name: str, process: subprocess.Popen, log_path: Path, log_file):
        self.name = name
        self.process = process
        self.log_path = log_path
        self._log_file = log_file

    @property
    def pid(self) -> int:
        return self.process.pid

    def log(self) -> str:
        try:
            lines = self.log_path.read_text(errors="replace").splitlines()
        except FileNotFoundError:
            return "(no log)"
        skipped = len(lines) - LOG_TAIL_LINES
        head = [f"... ({skipped} earlier lines in {self.log_path})"] if skipped > 0 else []
        return "\n".join(head + lines[-LOG_TAIL_LINES:])

    def kill(self) -> None:
        """SIGKILL the worker's whole process group (the worker and its beat), and reap it."""
        try:
            os.killpg(self.process.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        try:
            self.process.wait(timeout=WAIT_SECONDS)
        finally:
            self._log_file.close()


@pytest.fixture
def worker(tmp_path, redis_url, broker_url):
    """``worker(pause_at=None, pause_file=None, env=None)`` starts a Celery worker with beat on
    the ``likes`` queue (``env``: more variables for it); every worker started is killed at
    teardown (before the database and Redis are emptied)."""
    started: list[Worker] = []
    database_url = _test_database_url()

    def start(*, pause_at: str | None = None, pause_file: Path | None = None, env: dict | None = None) -> Worker:
        name = f"likes-faults-{uuid.uuid4().hex[:10]}"
        environment = dict(os.environ)
        environment.update(
            DJANGO_SETTINGS_MODULE="config.settings",
            DATABASE_URL=database_url,
            REDIS_URL=redis_url,
            LIKES_REDIS_URL=redis_url,
            CELERY_BROKER_URL=broker_url,
            DJANGO_SECRET_KEY=os.environ.get("DJANGO_SECRET_KEY") or "worker-fault-tests",
            LIKES_FLUSH_INTERVAL="0.2",
            LIKES_RECLAIM_IDLE="1",
            PYTHONUNBUFFERED="1",
        )
        environment.update(env or {})
        log_path = tmp_path / f"{name}.log"
        log_file = open(log_path, "wb")
        program = ["celery"] if pause_file is None else ["tests.likes.paused_worker", str(pause_file), pause_at or "inside"]
        command = [
            sys.executable, "-m", *program, "-A", "config", "worker", "-B", "--pool", "solo", "-Q", "likes",
            "--without-mingle", "--without-gossip", "--loglevel", "info", "-s", str(tmp_path / f"{name}-beat-schedule"), "-n", f"{name}@%h",
        ]
        try:
            process = subprocess.Popen(
                command, cwd=REPO, env=environment, stdin=subprocess.DEVNULL, stdout=log_file, stderr=subprocess.STDOUT,
                start_new_session=True,
            )
        except BaseException:
            log_file.close()
            raise
        started.append(Worker(name, process, log_path, log_file))
        return started[-1]

    yield start
    failures = []
    for w in started:
        try:
            w.kill()
        except Exception as exc:  # go on killing the others
            failures.append(f"{w.name}: {exc!r}")
    for w in started:
        print(f"----- log of worker {w.name} (pid {w.pid}, exit {w.process.returncode}) -----\n{w.log()}")
    assert not failures, f"workers not reaped: {failures}"


def wait_for(what: str, check, *, workers: list[Worker], timeout: float = WAIT_SECONDS):
    """Poll ``check()`` until it answers something true, and return that. Fails (with the
    workers' logs) on timeout, or as soon as one of ``workers`` has exited."""
    deadline = time.monotonic() + timeout
    while True:
        found = check()
        if found:
            return found
        for w in workers:
            if w.process.poll() is not None:
                pytest.fail(f"worker {w.name} exited ({w.process.returncode}) while waiting for {what}\n{w.log()}")
        if time.monotonic() > deadline:
            logs = "\n".join(f"----- worker {w.name} -----\n{w.log()}" for w in workers)
            pytest.fail(f"{what}: not within {timeout:g} s\n{logs}")
        time.sleep(0.05)


def paused_pid(pause_file: Path) -> int | None:
    """The pid the flush wrote on reaching its pause point, once written."""
    try:
        text = Path(f"{pause_file}.reached").read_text().strip()
    except FileNotFoundError:
        return None
    return int(text) if text else None


# --- what the database and the stream hold ------------------------------------------------


def stored(comment) -> tuple[int, set[int]]:
    count = Comment.objects.get(pk=comment.pk).like_count
    likers = set(Like.objects.filter(comment_id=comment.pk, active=True).values_list("user_id", flat=True))
    return count, likers


def rows_of(comment) -> list[tuple[int, bool]]:
    """Every like row of the comment, active or not: ``(user_id, active)``."""
    return sorted(Like.objects.filter(comment_id=comment.pk).values_list("user_id", "active"))


def stream_state(r: redis.Redis, comment) -> tuple[int | None, int]:
    """``(pending, length)`` of the comment's subject's event stream; pending None while the
    flush's consumer group does not exist."""
    stream = keys.events(comment.subject_id)
    try:
        pending = r.xpending(stream, keys.FLUSH_GROUP)["pending"]
    except redis.exceptions.ResponseError:
        pending = None
    return pending, r.xlen(stream)


def drained(r: redis.Redis, comment):
    return lambda: stream_state(r, comment) == (0, 0)


def age_pending(r: redis.Redis, comment, *, idle_ms: int) -> int:
    """Make the stream's pending entries look idle for ``idle_ms`` (as if that much time had
    passed since their consumer read them), leaving them with the same consumer; how many."""
    stream = keys.events(comment.subject_id)
    by_consumer: dict[str, list[str]] = {}
    for entry in r.xpending_range(stream, keys.FLUSH_GROUP, min="-", max="+", count=10_000):
        by_consumer.setdefault(entry["consumer"], []).append(entry["message_id"])
    for consumer, ids in by_consumer.items():
        r.xclaim(stream, keys.FLUSH_GROUP, consumer, 0, ids, idle=idle_ms, justid=True)
    return sum(len(ids) for ids in by_consumer.values())


def like_all(comment, users) -> None:
    """Like through the Redis road; the answers count up one by one."""
    for n, user in enumerate(users, start=1):
        assert like_set(comment_id=comment.pk, user=user, liked=True) == (n, True)


def stop_inside_a_flush(worker, tmp_path, r, comment, *, at: str) -> None:
    """Start a worker that pauses its flush ``at`` the point given, wait until it holds every
    queued entry there, then SIGKILL it; the pause file is gone afterwards."""
    pause = tmp_path / f"pause-{at}"
    pause.touch()
    try:
        a = worker(pause_at=at, pause_file=pause)
        pid = wait_for(f"worker A to pause its flush ({at})", lambda: paused_pid(pause), workers=[a])
        assert os.getpgid(pid) == a.pid, "the flush paused in a process that is not worker A's"
        pending, length = stream_state(r, comment)
        assert pending == length > 0, f"A paused holding {pending} of the {length} queued entries"
        a.kill()
    finally:
        pause.unlink(missing_ok=True)


# --- the tests -------------------------------------------------------------------------------


def test_a_worker_killed_inside_the_flush_transaction_loses_no_like(worker, raw_redis, tmp_path):
    comment = CommentFactory()
    users = [UserFactory() for _ in range(20)]
    like_all(comment, users)
    assert stream_state(raw_redis, comment)[1] == 20
    assert stored(comment) == (0, set())  # answered by Redis, not yet in the database

    stop_inside_a_flush(worker, tmp_path, raw_redis, comment, at="inside")

    # The transaction died with A: nothing of it was committed, not even the inactive rows.
    assert stored(comment) == (0, set())
    assert rows_of(comment) == []
    assert stream_state(raw_redis, comment) == (20, 20)  # still pending, with the dead consumer

    b = worker()
    wait_for("like_count to reach 20 through worker B", lambda: stored(comment)[0] >= 20, workers=[b])
    wait_for("worker B to acknowledge and delete every entry", drained(raw_redis, comment), workers=[b])

    assert stored(comment) == (20, {u.pk for u in users})
    assert rows_of(comment) == sorted((u.pk, True) for u in users)  # each user once
    assert stream_state(raw_redis, comment) == (0, 0)


def test_a_worker_killed_after_commit_before_acknowledging_counts_nothing_twice(worker, raw_redis, tmp_path):
    comment = CommentFactory()
    users = [UserFactory() for _ in range(20)]
    like_all(comment, users)
    assert stored(comment) == (0, set())

    stop_inside_a_flush(worker, tmp_path, raw_redis, comment, at="committed")

    # A committed, then died before acknowledging: the likes are in, the entries still pending.
    assert stored(comment) == (20, {u.pk for u in users})
    assert stream_state(raw_redis, comment) == (20, 20)

    b = worker()
    wait_for("worker B to re-apply and acknowledge the reclaimed entries", drained(raw_redis, comment), workers=[b])
    assert stored(comment) == (20, {u.pk for u in users})
    assert rows_of(comment) == sorted((u.pk, True) for u in users)

    # B goes on flushing new actions on top, exactly.
    leavers, newcomer = users[:3], UserFactory()
    for n, user in enumerate(leavers, start=1):
        assert like_set(comment_id=comment.pk, user=user, liked=False) == (20 - n, False)
    assert like_set(comment_id=comment.pk, user=newcomer, liked=True) == (18, True)
    assert like_set(comment_id=comment.pk, user=users[5], liked=True) == (18, True)  # a repeat changes nothing
    wait_for("worker B to flush the new actions", drained(raw_redis, comment), workers=[b])

    expected = {u.pk for u in users[3:]} | {newcomer.pk}
    assert stored(comment) == (18, expected)
    assert rows_of(comment) == sorted([(u.pk, False) for u in leavers] + [(pk, True) for pk in expected])


def test_an_entry_reclaimed_after_a_newer_action_was_flushed_changes_nothing(worker, raw_redis, tmp_path):
    comment = CommentFactory()
    users = [UserFactory() for _ in range(8)]
    like_all(comment, users)
    stop_inside_a_flush(worker, tmp_path, raw_redis, comment, at="committed")
    assert stored(comment) == (8, {u.pk for u in users})
    leaver = users[0]
    assert like_set(comment_id=comment.pk, user=leaver, liked=False) == (7, False)

    # B takes over dead consumers' entries only after 30 s: it flushes the unlike first.
    b = worker(env={"LIKES_RECLAIM_IDLE": "30"})
    wait_for("worker B to flush the unlike", lambda: stored(comment)[0] <= 7, workers=[b])
    # ... and to acknowledge it, leaving A's entries pending, untouched.
    wait_for("worker B to acknowledge the unlike", lambda: stream_state(raw_redis, comment) == (8, 8), workers=[b])
    assert stored(comment) == (7, {u.pk for u in users[1:]})

    # Then A's entries age past B's reclaim time; B replays them, the leaver's older like too.
    assert age_pending(raw_redis, comment, idle_ms=60_000) == 8
    wait_for("worker B to replay and acknowledge A's entries", drained(raw_redis, comment), workers=[b])

    assert stored(comment) == (7, {u.pk for u in users[1:]})
    assert rows_of(comment) == sorted([(leaver.pk, False)] + [(u.pk, True) for u in users[1:]])


_FLUSH_SUCCEEDED = re.compile(r"Task likes\.flush\[[0-9a-f-]+\] succeeded")


def test_a_running_worker_with_beat_flushes_likes_within_seconds(worker, raw_redis):
    comment = CommentFactory()
    users = [UserFactory() for _ in range(5)]
    w = worker()
    # Running means: beat has sent a flush and the worker has run it.
    wait_for("the worker's first flush from beat", lambda: _FLUSH_SUCCEEDED.search(w.log_path.read_text(errors="replace")),
             workers=[w])

    like_all(comment, users)
    liked_at = time.monotonic()
    wait_for("the likes to reach the database", lambda: stored(comment)[0] >= 5, workers=[w], timeout=5.0)
    assert time.monotonic() - liked_at < 5.0

    assert stored(comment) == (5, {u.pk for u in users})
    assert rows_of(comment) == sorted((u.pk, True) for u in users)

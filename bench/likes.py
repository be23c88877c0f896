"""The likes benchmark (DESIGN.md, "Performance targets": like p99 < 5 ms, 100,000 queued like
events flushed in < 5 s), on PostgreSQL and Redis.

Four measurements, each against its own subject of the site ``bench-likes`` in the database
named by ``DATABASE_URL`` (seeded once, reused by later runs; ``--reseed`` rebuilds):

1. **The like endpoint, server-side.** ``PUT`` and ``DELETE /api/v1/comments/{id}/like``,
   alternating, by 200 users over the ~1,000 comments of ``likes-endpoint``, driven in-process
   through Django's test ``Client`` as ``bench/core.py`` does (routing, middleware, bearer
   token, DRF, the like script, JSON; no network). SQL queries (``CaptureQueriesContext``) and
   Redis round trips per request; p50/p99.
2. **Throughput against an empty view.** gunicorn on 127.0.0.1 with ``bench.likes_settings``
   (the application's settings with ``bench/likes_urls.py``: the real API plus an empty DRF
   view with the like endpoint's authentication and ``IsAuthenticated``), ``RATE_LIMITS=off``,
   loaded by ``wrk`` (or, without it, a Python load generator in another process) for
   ``--duration`` seconds per run; requests/s of each and their ratio.
3. **The flush.** 100,000 like actions (1,000 users x 100 comments of ``likes-flush``, reset
   each run) queued through the real like script in pipelines, then ``likes_flush()`` timed
   until the stream is drained, and the rows and counts checked against what was queued; at
   ``LIKES_FLUSH_BATCH`` (default 5,000) and at ``--flush-batches``; then the same 100,000 as
   unlikes (updates of existing rows).
4. **A comment with 1,000,000 likes** (``likes-million``; 1,000,000 users ``lkb0000000``...
   bulk-inserted once): loading its Redis state from the database (cold), like, unlike, the
   like state of a 20-comment page including it, and its likers' first page.

    DJANGO_SECRET_KEY=bench DATABASE_URL=postgres://postgres@127.0.0.1:5432/bench \\
    REDIS_URL=redis://127.0.0.1:6379/14 .venv/bin/python -m bench.likes

The report goes into ``docs/benchmarks.md`` between ``<!-- likes:start -->`` and
``<!-- likes:end -->`` (the rest of the file is left as it is; ``bench/core.py`` keeps the block
when it rewrites the file). Hand-written notes between ``<!-- likes-notes:start -->`` and
``<!-- likes-notes:end -->`` inside the block survive re-runs. Like actions made by the benchmark
are flushed before it ends.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import re
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path

from bench.core import (
    BASE_DIR,
    DEFAULT_OUTPUT,
    Timing,
    Verdict,
    calibrate,
    capture,
    cpu_sample,
    cpu_share,
    machine,
    settle_heap,
)
from bench.core import configure as configure_database
from bench.serving import Server, cpu_used, free_port, proc_cpu, run_wrk_script

START = "<!-- likes:start -->"
END = "<!-- likes:end -->"
NOTES_START = "<!-- likes-notes:start -->"
NOTES_END = "<!-- likes-notes:end -->"

# Targets (DESIGN.md, "Performance targets"; the issue's wording).
LIKE_P99_MS = 5.0
THROUGHPUT_RATIO = 0.8
FLUSH_SECONDS = 5.0

DATA_VERSION = 1
SITE_KEY = "bench-likes"
USER_PREFIX = "lkb"  # lkb0000000 ... : zero-padded, so name order is index order
UNUSABLE_PASSWORD = "!bench-likes"  # a leading "!" is Django's unusable password
EMPTY_PATH = "/api/v1/bench/empty"  # bench/likes_urls.py


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        prog="python -m bench.likes",
        description="Measure the like endpoint, its throughput, the flush and a comment with a million likes.",
    )
    parser.add_argument(
        "--million", type=int, default=1_000_000, help="likes of the big comment = bench users (1000000)"
    )
    parser.add_argument("--iterations", type=int, default=1000, help="timed requests per measured call (1000)")
    parser.add_argument("--warmup", type=int, default=100, help="untimed requests before each timed run (100)")
    parser.add_argument("--actors", type=int, default=200, help="users liking and unliking in measurement 1 (200)")
    parser.add_argument("--flush-users", type=int, default=1000, help="users of the flush measurement (1000)")
    parser.add_argument("--flush-comments", type=int, default=100, help="comments of the flush measurement (100)")
    parser.add_argument(
        "--flush-batches",
        default="1000,20000",
        help="more LIKES_FLUSH_BATCH values to flush the same events with, besides the setting (1000,20000; '' for none)",
    )
    parser.add_argument("--duration", type=float, default=6.0, help="seconds of each timed throughput run (6)")
    parser.add_argument("--warmup-seconds", type=float, default=5.0, help="seconds of load before the timed runs (5)")
    parser.add_argument("--rounds", type=int, default=5, help="timed runs of each view, alternating (5)")
    parser.add_argument("--connections", type=int, default=8, help="concurrent connections of the load generator (8)")
    parser.add_argument("--workers", type=int, default=2, help="gunicorn workers (2)")
    parser.add_argument("--threads", type=int, default=4, help="threads per gunicorn worker, gthread (4)")
    parser.add_argument(
        "--load-generator", choices=["auto", "wrk", "python"], default="auto", help="auto: wrk if installed"
    )
    parser.add_argument("--reseed", action="store_true", help="rebuild the benchmark's subjects (the users are kept)")
    parser.add_argument(
        "--only", default="", help="comma-separated subset of endpoint,throughput,flush,million (default: all)"
    )
    parser.add_argument(
        "--output",
        default=str(DEFAULT_OUTPUT),
        help="Markdown report whose likes block is written ('-' for none; default docs/benchmarks.md)",
    )
    return parser.parse_args(argv)


# --- environment ---------------------------------------------------------------------------


def configure(args: argparse.Namespace) -> None:
    """PostgreSQL (as bench/core.py: refused otherwise), django.setup(), and Redis: refused
    without it, since the like path measured here is the Redis one."""
    configure_database(argparse.Namespace(allow_sqlite=False))
    from django.conf import settings

    from infra import redislink

    if not settings.LIKES_REDIS_URL:
        sys.exit("bench.likes: the likes benchmark needs Redis; set REDIS_URL=redis://... (or LIKES_REDIS_URL).")
    r = redislink.client()
    try:
        r.ping()
    except redislink.ERRORS as exc:
        sys.exit(f"bench.likes: Redis at {settings.LIKES_REDIS_URL} does not answer: {exc}")


def log(message: str) -> None:
    print(message, flush=True)


class RoundTrips:
    """Counts Redis round trips (every packed write to a Redis socket: a command, a pipeline, a
    health-check PING) made inside ``with``, in all and through the likes client's pool."""

    def __enter__(self):
        import redis.connection

        from infra import redislink

        self.total = self.likes = 0
        cls = redis.connection.AbstractConnection
        self._cls, self._send = cls, cls.send_packed_command
        original_send = self._send

        def send(conn, command, check_health=True):
            self.total += 1
            return original_send(conn, command, check_health)

        cls.send_packed_command = send
        self._pool = redislink.client().connection_pool  # type: ignore[union-attr]  # a single Redis here
        original_get = self._pool.get_connection

        def get_connection(*a, **k):
            self.likes += 1
            return original_get(*a, **k)

        self._pool.get_connection = get_connection
        return self

    def __exit__(self, *exc):
        self._cls.send_packed_command = self._send
        del self._pool.get_connection
        return False


def timed(call, expect: int = 200):
    cpu_started = time.process_time()
    started = time.perf_counter()
    response = call()
    wall = (time.perf_counter() - started) * 1000
    cpu = (time.process_time() - cpu_started) * 1000
    if response.status_code != expect:
        raise RuntimeError(f"unexpected status {response.status_code}: {response.content[:300]!r}")
    return wall, cpu, response


@dataclass
class Measured:
    """One measured request kind (or call): what it is, its cost counts and its timings."""

    title: str
    request: str
    timing: Timing
    cpu: Timing | None = None
    queries: int | None = None
    redis: tuple[int, int] | None = None  # (all round trips, those of the likes client)
    sql_ms: float | None = None
    note: str = ""


# --- the dataset -----------------------------------------------------------------------------


@dataclass(frozen=True)
class SubjectSpec:
    key: str
    comments: int
    likes: int  # seeded likes over its comments (besides the big comment's)
    seed: int
    worker: int  # id worker number of its comments (bench/seed.py uses 255 and 254)
    big: int = 0  # likes of its oldest top-level comment

    def signature(self) -> str:
        return (
            f"likes bench v{DATA_VERSION}: comments={self.comments} likes={self.likes} big={self.big} seed={self.seed}"
        )


def user_name(i: int) -> str:
    return f"{USER_PREFIX}{i:07d}"


def ensure_users(n: int) -> tuple[list[int], str]:
    """``n`` bench users (``lkb0000000``...), bulk-inserted with an unusable password the first
    time; their ids in name order."""
    from django.db import connection, transaction

    def ids() -> list[int]:
        with connection.cursor() as cursor:
            cursor.execute(
                "SELECT id FROM comments_user WHERE username >= %s AND username < %s ORDER BY username",
                [user_name(0), user_name(n)],
            )
            return [row[0] for row in cursor.fetchall()]

    have = ids()
    if len(have) == n:
        return have, "reused"
    started = time.perf_counter()
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT username FROM comments_user WHERE username >= %s AND username < %s", [user_name(0), user_name(n)]
        )
        existing = {row[0] for row in cursor.fetchall()}
    now = datetime.now(UTC)
    with transaction.atomic(), connection.cursor() as cursor:
        with cursor.cursor.copy(
            "COPY comments_user (password, is_superuser, username, first_name, last_name, email, is_staff, "
            "is_active, date_joined, display_name, avatar_url) FROM STDIN"
        ) as copy:
            for i in range(n):
                name = user_name(i)
                if name not in existing:
                    copy.write_row(
                        (UNUSABLE_PASSWORD, False, name, "", "", "", False, True, now, f"Likes Bench {i}", "")
                    )
    have = ids()
    assert len(have) == n, (len(have), n)
    return have, f"inserted {n - len(existing):,} in {time.perf_counter() - started:.0f} s"


def _copy_likes(rows) -> int:
    """COPY like rows ``(comment_id, user_id, subject_id, created_at)``, active, version 0."""
    from django.db import connection

    count = 0
    with connection.cursor() as cursor:
        with cursor.cursor.copy(
            "COPY likes_like (comment_id, user_id, subject_id, created_at, active, version) FROM STDIN"
        ) as copy:
            for c, u, s, t in rows:
                copy.write_row((c, u, s, t, True, 0))
                count += 1
    return count


def ensure_subject(site, spec: SubjectSpec, users: list[int], reseed: bool):
    """The subject of ``spec`` (comments planned by bench/seed.py, authors and likers among the
    first 2,000 bench users; the big comment liked by all of ``users``), built unless an earlier
    run left it with the same signature. Returns (subject, how it was obtained)."""
    from django.db import transaction

    from bench import seed
    from comments import services
    from comments.models import Subject

    subject = Subject.objects.filter(keys__site=site, keys__key=spec.key).first()
    if subject is not None and subject.title == spec.signature() and not reseed:
        return subject, "reused"
    started = time.perf_counter()
    if subject is not None:
        log(f"bench: removing the old subject {spec.key} ...")
        seed.purge_comments("subject_id = %s", [subject.pk])
        subject.delete()
    authors, likers = users[:1000], users[1000:2000]
    shape = seed.Shape(
        comments=spec.comments, users=len(authors), likes=spec.likes, seed=spec.seed, background_comments=0
    )
    end = datetime.now(UTC).replace(microsecond=0) - timedelta(hours=1)
    nodes, _, bodies = seed.plan(shape, end, worker=spec.worker)
    big = None
    if spec.big:
        big = next(n for n in nodes if n.parent is None and n.counted and not n.pinned)
        big.like_count = 0
    rng = random.Random(spec.seed + 2)
    end_ms = max(n.ms for n in nodes)
    with transaction.atomic():
        subject = Subject(
            site=site,
            key=spec.key,
            title=spec.signature(),
            url=f"https://bench.example/{spec.key}",
            mode="two_level",
            comment_count=sum(1 for n in nodes if n.counted),
            root_count=sum(1 for n in nodes if n.counted and n.parent is None),
            floor_seq=sum(1 for n in nodes if n.parent is None),
        )
        services.subjects_create(site, [subject])
        seed._insert_comments(nodes, lambda n: subject.pk, authors, bodies)

        def rows():
            for n in nodes:
                for k in rng.sample(range(len(likers)), n.like_count) if n.like_count else ():
                    ms = n.ms + int(rng.random() * max(1, end_ms - n.ms))
                    yield n.id, likers[k], subject.pk, datetime.fromtimestamp(ms / 1000, tz=UTC)
            if big is not None:
                span = max(1, end_ms - big.ms)
                for user_id in users[: spec.big]:
                    ms = big.ms + int(rng.random() * span)
                    yield big.id, user_id, subject.pk, datetime.fromtimestamp(ms / 1000, tz=UTC)

        _copy_likes(rows())
        if big is not None:
            from comments.models import Comment

            Comment.objects.filter(pk=big.id).update(like_count=spec.big)
    return subject, f"seeded by this run in {time.perf_counter() - started:.0f} s"


def analyze() -> None:
    from django.db import connection

    with connection.cursor() as cursor:
        for table in ("likes_like", "comments_user", "comment_index", "comment_content", "comments_apitoken"):
            cursor.execute(f"VACUUM (ANALYZE) {table}")


# --- helpers over the like state ---------------------------------------------------------------


def comment_ids(subject_id: int, likeable: bool = False) -> list[int]:
    from comments.models import Comment

    rows = Comment.objects.filter(subject_id=subject_id)
    if likeable:
        rows = rows.filter(status="published", visibility="public")
    return list(rows.order_by("pk").values_list("pk", flat=True))


def drain(r) -> int:
    """Flush every queued like action (of every subject) into the database; events flushed."""
    from infra import streams
    from likes import keys, live
    from likes.services import likes_flush

    flushed = 0
    for _ in range(20):
        flushed += likes_flush(max_seconds=300).events
        if all(streams.stream_length(r, keys.events(s)) == 0 for s, _ in live.dirty_subjects(r)):
            return flushed
    log("bench: WARNING: some like events stay queued (entries pending for another consumer?)")
    return flushed


def drop_states(r, subject_id: int) -> None:
    """Forget the Redis state of the subject's comments (``live.drop``: UNLINK)."""
    from likes import live

    ids = comment_ids(subject_id)
    for start in range(0, len(ids), 1000):
        live.drop(r, [(c, subject_id) for c in ids[start : start + 1000]])


def issue_tokens(user_ids: list[int]) -> list[str]:
    from comments.models import ApiToken
    from comments.services import token_issue

    ApiToken.objects.filter(user_id__in=user_ids).delete()
    from comments.models import User

    users = {u.pk: u for u in User.objects.filter(pk__in=user_ids)}
    return [token_issue(user=users[u])[0] for u in user_ids]


def auth(token: str) -> dict:
    return {"Authorization": f"Bearer {token}"}


# --- the benchmark -----------------------------------------------------------------------------


class LikesBench:
    def __init__(self, args: argparse.Namespace):
        from django.test import Client

        self.args = args
        self.client = Client(SERVER_NAME="127.0.0.1")
        self.facts: dict = {}
        self.endpoint: list[Measured] = []
        self.million: list[Measured] = []
        self.cold: dict = {}
        self.flushes: list[dict] = []
        self.throughput: dict = {}
        self.checks: list[tuple[str, bool, str]] = []  # (what, ok, detail)
        self.disturbed: list[str] = []  # measurements run again after another process emptied Redis
        only = {s.strip() for s in args.only.split(",") if s.strip()}
        unknown = only - {"endpoint", "throughput", "flush", "million"}
        if unknown:
            sys.exit(f"bench.likes: unknown --only part(s): {', '.join(sorted(unknown))}")
        self.parts = only or {"endpoint", "throughput", "flush", "million"}

    # guarding against other users of the same Redis database ----------------------------------

    CANARY = "bench:likes:canary"

    def guarded(self, part: str, run) -> None:
        """Run one measurement; if the Redis database was emptied meanwhile (a test suite pointed
        at the same database flushes it), its figures mean nothing: throw them away, put the data
        back and run it again (at most three times)."""
        kept = (len(self.endpoint), len(self.million), len(self.flushes), len(self.checks))
        for attempt in range(1, 4):
            token = f"{os.getpid()}-{time.time()}"
            self.admin.set(self.CANARY, token)
            failure = None
            speed = calibrate()
            before = cpu_sample()
            try:
                run()
            except Exception as exc:  # noqa: BLE001 - judged below: a flushed database explains it, else re-raised
                failure = exc
            if self.admin.get(self.CANARY) == token:
                if failure is not None:
                    raise failure
                self.admin.delete(self.CANARY)
                self.facts[f"cpu_part_{part}"] = (
                    cpu_share(before, cpu_sample())
                    + f"; Python speed check {speed:.0f} ms before, {calibrate():.0f} ms after"
                )
                return
            self.disturbed.append(f"{part} (attempt {attempt})")
            log(f"bench: the Redis database was emptied by another process during '{part}'; its figures are dropped")
            del self.endpoint[kept[0] :], self.million[kept[1] :], self.flushes[kept[2] :], self.checks[kept[3] :]
            if part == "throughput":
                self.throughput = {}
            drain(self.r)
            self.reset()
        sys.exit(
            f"bench.likes: the Redis database kept being emptied during '{part}'; use one nobody else uses "
            "(LIKES_REDIS_URL=redis://127.0.0.1:6379/<n>)"
        )

    # dataset -----------------------------------------------------------------------------

    def prepare(self):
        from django.core.management import call_command

        from comments.models import Site
        from likes import state_sync

        started = time.perf_counter()
        call_command("migrate", interactive=False, verbosity=0)
        log(f"bench: migrated in {time.perf_counter() - started:.1f} s")
        n = max(self.args.million, 2000 + self.args.actors)
        self.users, users_how = ensure_users(n)
        self.facts["users"] = f"{n:,} users `{user_name(0)}`...`{user_name(n - 1)}` ({users_how})"
        log(f"bench: users: {self.facts['users']}")
        site, _ = Site.objects.get_or_create(key=SITE_KEY, defaults={"name": "Likes benchmark"})
        specs = {
            "endpoint": SubjectSpec("likes-endpoint", comments=1000, likes=50_000, seed=7, worker=253),
            "million": SubjectSpec(
                "likes-million", comments=200, likes=5_000, seed=8, worker=252, big=self.args.million
            ),
            "flush": SubjectSpec("likes-flush", comments=self.args.flush_comments, likes=0, seed=9, worker=251),
        }
        self.subjects = {}
        for name, spec in specs.items():
            subject, how = ensure_subject(site, spec, self.users, self.args.reseed)
            self.subjects[name] = subject
            self.facts[f"subject_{name}"] = how
            log(f"bench: subject {spec.key} (id {subject.pk}): {how}")
        started = time.perf_counter()
        analyze()  # autovacuum may be off (it is on this machine): earlier runs leave dead rows
        log(f"bench: vacuumed and analyzed in {time.perf_counter() - started:.1f} s")
        self.r = state_sync.client()
        # For the benchmark's own bulk work (queueing 100,000 actions, dropping a million-member
        # state): the application's client gives up after LIKES_REDIS_TIMEOUT (0.5 s).
        from django.conf import settings

        from infra.redislink import connect

        self.admin = connect(settings.LIKES_REDIS_URL, decode_responses=True, socket_timeout=120)
        self.drained_before = drain(self.r)
        self.reset()
        self._facts()

    def reset(self):
        """Put the three subjects back as seeded (actions of earlier runs undone) and drop their
        Redis state, after flushing what was queued."""
        from django.db import connection, transaction

        from likes.services import like_counts_reconcile

        e, m, f = (self.subjects[k].pk for k in ("endpoint", "million", "flush"))
        self.endpoint_actors = self.users[: self.args.actors]  # they like nothing of likes-endpoint
        self.million_actors = self.users[2000 : 2000 + 100]  # they like only the big comment
        with transaction.atomic(), connection.cursor() as cursor:
            cursor.execute(
                "DELETE FROM likes_like WHERE subject_id = %s AND user_id = ANY(%s)", [e, self.endpoint_actors]
            )
            cursor.execute(
                "UPDATE likes_like SET active = true WHERE subject_id = %s AND NOT active AND user_id = ANY(%s)",
                [m, self.million_actors],
            )
        for sid in (e, m):
            like_counts_reconcile(subject_id=sid)
            drop_states(self.admin, sid)
        self.reset_flush_subject()

    def reset_flush_subject(self):
        from django.db import connection, transaction

        from likes import keys

        f = self.subjects["flush"].pk
        with transaction.atomic(), connection.cursor() as cursor:
            cursor.execute("DELETE FROM likes_like WHERE subject_id = %s", [f])
            cursor.execute("UPDATE comment_index SET like_count = 0 WHERE subject_id = %s AND like_count <> 0", [f])
        drop_states(self.admin, f)
        self.admin.delete(keys.events(f))

    def _facts(self):
        from django.db import connection
        from django.db.models import Max, Sum

        from comments.models import Comment
        from likes.models import Like

        f = self.facts
        for name, subject in self.subjects.items():
            rows = Comment.objects.filter(subject_id=subject.pk)
            agg = rows.aggregate(total=Sum("like_count"), top=Max("like_count"))
            f[f"{name}_comments"] = rows.count()
            f[f"{name}_likeable"] = rows.filter(status="published", visibility="public").count()
            f[f"{name}_likes"] = agg["total"] or 0
            f[f"{name}_top"] = agg["top"] or 0
        big = Comment.objects.filter(subject_id=self.subjects["million"].pk).order_by("-like_count", "pk").first()
        self.big = big
        f["all_likes"] = Like.objects.count()
        with connection.cursor() as cursor:
            cursor.execute(
                "SELECT pg_size_pretty(pg_total_relation_size('likes_like')), "
                "pg_size_pretty(pg_total_relation_size('comments_user')), (SELECT count(*) FROM comments_user)"
            )
            f["likes_size"], f["users_size"], f["all_users"] = cursor.fetchone()
            cursor.execute("SHOW autovacuum")
            f["autovacuum"] = cursor.fetchone()[0]

    # 1. the like endpoint --------------------------------------------------------------------

    def run_endpoint(self):
        from likes import state_sync

        sid = self.subjects["endpoint"].pk
        targets = comment_ids(sid, likeable=True)
        actors = self.endpoint_actors
        tokens = dict(zip(actors, issue_tokens(actors), strict=True))
        rng = random.Random(5)
        liked: list[tuple[int, int]] = []
        where: dict[tuple[int, int], int] = {}

        def call(method, pair):
            user, comment = pair
            fn = self.client.put if method == "PUT" else self.client.delete
            return lambda: fn(f"/api/v1/comments/{comment}/like", headers=auth(tokens[user]))

        def mark(pair, now_liked):
            if now_liked and pair not in where:
                where[pair] = len(liked)
                liked.append(pair)
            elif not now_liked and pair in where:
                i = where.pop(pair)
                last = liked.pop()
                if i < len(liked):
                    liked[i] = last
                    where[last] = i

        def fresh_pair():
            while True:
                pair = (rng.choice(actors), rng.choice(targets))
                if pair not in where:
                    return pair

        log("bench: 1. the like endpoint (p50/p99 ms)")
        # First touches: the comment's state is not in Redis and is loaded from its rows.
        cold_wall, cold_q = [], None
        from django.db import connection
        from django.test.utils import CaptureQueriesContext

        for comment in rng.sample(targets, min(30, len(targets))):
            pair = (rng.choice(actors), comment)
            with CaptureQueriesContext(connection) as ctx, RoundTrips() as trips:
                wall, _, response = timed(call("PUT", pair))
            cold_q = cold_q or (len(ctx.captured_queries), (trips.total, trips.likes))
            cold_wall.append(wall)
            mark(pair, True)
        average = self.facts["endpoint_likes"] / max(1, self.facts["endpoint_likeable"])
        self.endpoint.append(
            Measured(
                "first like of a comment whose state is not in Redis (loaded from its rows)",
                "PUT /api/v1/comments/{id}/like",
                Timing.of(cold_wall),
                queries=cold_q[0],
                redis=cold_q[1],
                note=f"{len(cold_wall)} comments, ~{average:.0f} likers each on average",
            )
        )
        log(f"  first touch (cold)  p50 {self.endpoint[-1].timing.p50:.2f}  p99 {self.endpoint[-1].timing.p99:.2f}")
        # Steady state: every comment's state in Redis (as after its first touch, or its posting).
        started = time.perf_counter()
        for comment in targets:
            state_sync.load(self.r, comment_id=comment, subject_id=sid)
        log(f"  loaded the state of {len(targets)} comments in {time.perf_counter() - started:.1f} s")
        # Queries and round trips of one like and one unlike.
        counts = {}
        for method, now_liked in (("PUT", True), ("DELETE", False)):
            pair = (actors[0], targets[0])
            c = call(method, pair)
            _, sql, sql_ms = capture(c, 200, repeat=11)
            with RoundTrips() as trips:
                response = c()
            assert response.json()["liked"] is now_liked, response.content
            counts[method] = (len(sql), (trips.total, trips.likes), sql_ms, sql)
            mark(pair, now_liked)
        self.endpoint_sql = {m: v[3] for m, v in counts.items()}
        # Alternating: a like of a pair not liked, then an unlike of a liked pair, over and over.
        samples: dict[str, tuple[list, list]] = {"PUT": ([], []), "DELETE": ([], [])}
        before = cpu_sample()
        total = self.args.warmup + self.args.iterations
        for k in range(2 * total):
            method = "PUT" if k % 2 == 0 else "DELETE"
            pair = fresh_pair() if method == "PUT" else liked[rng.randrange(len(liked))]
            if k == 2 * self.args.warmup:
                settle_heap()
            wall, cpu, response = timed(call(method, pair))
            body = response.json()
            if body["liked"] is not (method == "PUT"):
                raise RuntimeError(f"{method} answered {body}")
            mark(pair, method == "PUT")
            if k >= 2 * self.args.warmup:
                samples[method][0].append(wall)
                samples[method][1].append(cpu)
        self.facts["cpu_endpoint"] = cpu_share(before, cpu_sample())
        for method, verb in (("PUT", "like"), ("DELETE", "unlike")):
            wall, cpu = samples[method]
            q, trips, sql_ms, _ = counts[method]
            self.endpoint.append(
                Measured(
                    f"{verb} (state in Redis)",
                    f"{method} /api/v1/comments/{{id}}/like",
                    Timing.of(wall),
                    Timing.of(cpu),
                    queries=q,
                    redis=trips,
                    sql_ms=sql_ms,
                    note=f"{len(actors)} users over {len(targets)} comments, alternating like/unlike",
                )
            )
            m = self.endpoint[-1]
            log(
                f"  {verb:<6} queries {q}, Redis round trips {trips[0]} ({trips[1]} likes)  "
                f"p50 {m.timing.p50:.2f}  p99 {m.timing.p99:.2f}  max {m.timing.max:.2f}"
            )
        self.facts["endpoint_liked_left"] = len(liked)
        # Everything reaches the database and agrees with Redis.
        flushed = drain(self.r)
        self.check_subject(sid, targets, "measurement 1", expected=set(where), actors=actors, flushed=flushed)

    def check_subject(self, sid, targets, label, *, expected, actors, flushed):
        """After a flush: each comment's like_count and active rows equal its Redis state, and the
        benchmark users' likes are those it left in place."""
        from django.db import connection

        from likes import keys

        pipe = self.r.pipeline(transaction=False)
        for c in targets:
            pipe.zcard(keys.likers(sid, c))
        live_counts = dict(zip(targets, (n - 1 if n else None for n in pipe.execute()), strict=True))
        with connection.cursor() as cursor:
            cursor.execute(
                "SELECT c.id, c.like_count, (SELECT count(*) FROM likes_like l WHERE l.comment_id = c.id "
                "AND l.subject_id = c.subject_id AND l.active) "
                "FROM comment_index c WHERE c.subject_id = %s",
                [sid],
            )
            rows = {c: (n, active) for c, n, active in cursor.fetchall()}
            cursor.execute(
                "SELECT user_id, comment_id FROM likes_like WHERE subject_id = %s AND active AND user_id = ANY(%s)",
                [sid, list(actors)],
            )
            stored = set(cursor.fetchall())
        bad = [c for c in targets if live_counts[c] is not None and not (live_counts[c] == rows[c][0] == rows[c][1])]
        bad += [c for c, (n, active) in rows.items() if n != active and c not in bad]
        ok = not bad and stored == expected
        detail = (
            f"flushed {flushed:,} events; like_count = active rows = Redis count for all {len(rows)} comments, "
            f"and the {len(stored):,} likes left by the benchmark users are in the database"
            if ok
            else f"{len(bad)} comments disagree (e.g. {[(c, live_counts.get(c), rows.get(c)) for c in bad[:3]]}); "
            f"benchmark likes in the database {len(stored)} vs expected {len(expected)}"
        )
        self.checks.append((f"{label}: database agrees with Redis after the flush", ok, detail))
        log(f"  {'PASS' if ok else 'FAIL'} {label}: {detail}")

    # 3. the flush ---------------------------------------------------------------------------------

    def run_flush(self):
        from django.conf import settings
        from django.db import connection

        from infra import streams
        from likes import keys, live

        sid = self.subjects["flush"].pk
        comments = comment_ids(sid)
        users = self.users[: self.args.flush_users]
        default = settings.LIKES_FLUSH_BATCH
        extra = [int(b) for b in self.args.flush_batches.split(",") if b.strip()]
        runs = [("like", default), ("unlike", default)] + [("like", b) for b in extra if b != default]
        pairs = [(c, u) for c in comments for u in users]
        random.Random(13).shuffle(pairs)  # as traffic comes: every batch touches every comment
        n = len(pairs)
        log(f"bench: 3. the flush ({n:,} events: {len(users):,} users x {len(comments)} comments)")
        stream = keys.events(sid)
        for kind, batch in runs:
            if kind == "like":
                self.reset_flush_subject()
                live.mark_empty(self.admin, [(c, sid, live.OPEN) for c in comments])
            queue_s = self.queue_actions(sid, pairs, liked=kind == "like")
            length = streams.stream_length(self.r, stream)
            sql = [0.0, 0]

            def timer(execute, statement, params, many, context):
                t0 = time.perf_counter()
                try:
                    return execute(statement, params, many, context)
                finally:
                    sql[0] += time.perf_counter() - t0  # noqa: B023 - called before the loop moves on
                    sql[1] += 1  # noqa: B023 - called before the loop moves on

            started = time.perf_counter()
            reports = []
            with connection.execute_wrapper(timer):
                while streams.stream_length(self.r, stream):
                    reports.append(live_flush(batch))
                    if len(reports) > 50:
                        break
            seconds = time.perf_counter() - started
            result = {
                "kind": kind,
                "batch": batch,
                "default": batch == default,
                "events": length,
                "seconds": seconds,
                "queue_s": queue_s,
                "batches": sum(r.batches for r in reports),
                "flushed": sum(r.events for r in reports),
                "calls": len(reports),
                "sql_s": sql[0],
                "statements": sql[1],
            }
            result["ok"], result["check"] = self.check_flush(sid, comments, users, kind, n)
            self.flushes.append(result)
            log(
                f"  {kind:<6} batch {batch:>6}: {length:,} events in {seconds:.2f} s ({length / seconds:,.0f}/s), "
                f"{result['batches']} batches, SQL {sql[0]:.2f} s; queued in {queue_s:.2f} s; {'PASS' if result['ok'] else 'FAIL'} "
                f"{result['check']}"
            )
        self.reset_flush_subject()
        analyze()  # 400,000 rows inserted, updated and deleted: vacuumed before the next measurement

    def queue_actions(self, sid, pairs, *, liked: bool, chunk: int = 2000) -> float:
        """Append the actions as the endpoint does (the real like script, with the subject
        registered for the flush), ``chunk`` scripts per pipeline round trip."""
        from likes import keys, live

        self.admin.script_load(live.LIKE.source)
        subject_keys = [keys.events(sid), keys.pending(sid), keys.written(sid), keys.subject_open(sid)]
        started = time.perf_counter()
        for start in range(0, len(pairs), chunk):
            pipe = self.admin.pipeline(transaction=False)
            pipe.zadd(keys.DIRTY_SUBJECTS, {str(sid): live.now_ms()})
            for c, u in pairs[start : start + chunk]:
                live.LIKE.queue(pipe, [keys.likers(sid, c), *subject_keys], [u, int(liked), c, 1, 0])
            results = pipe.execute()
            if any(reply[0] < 0 for reply in results[1:]):
                raise RuntimeError("the like script found a comment state not loaded")
        return time.perf_counter() - started

    def check_flush(self, sid, comments, users, kind, n) -> tuple[bool, str]:
        from django.db import connection

        from likes import keys

        with connection.cursor() as cursor:
            cursor.execute(
                "SELECT count(*) FILTER (WHERE active), count(*) FROM likes_like WHERE subject_id = %s", [sid]
            )
            active, rows = cursor.fetchone()
            cursor.execute(
                "SELECT coalesce(sum(like_count), 0), min(like_count), max(like_count) FROM comment_index "
                "WHERE subject_id = %s",
                [sid],
            )
            total, low, high = cursor.fetchone()
        stream = keys.events(sid)
        left = self.admin.xlen(stream)
        want_active = n if kind == "like" else 0
        per = len(users) if kind == "like" else 0
        ok = rows == n and active == want_active and total == want_active and low == high == per and left == 0
        return ok, (
            f"rows {rows:,}, active {active:,} (want {want_active:,}), sum of like_count {total:,}, "
            f"per comment {low}..{high} (want {per}), stream entries left {left}"
        )

    # 4. a comment with a million likes ------------------------------------------------------------

    def run_million(self):
        from django.db import connection
        from django.test.utils import CaptureQueriesContext

        from comments.queries import encode_cursor
        from likes import keys, live, queries, state_sync

        sid = self.subjects["million"].pk
        big = self.big
        key = keys.likers(sid, big.pk)
        actors = self.million_actors
        tokens = issue_tokens(actors)
        log(f"bench: 4. comment {big.pk} with {big.like_count:,} likes")
        drain(self.r)

        def drop_big():
            live.drop(self.r, [(big.pk, sid)])  # UNLINK: freed off Redis's main thread
            while self.admin.exists(key):
                time.sleep(0.01)

        # Cold: the first request after the state went (evicted, Redis restarted).
        drop_big()
        path = f"/api/v1/comments/{big.pk}/like"
        with CaptureQueriesContext(connection) as ctx, RoundTrips() as trips:
            wall, _, response = timed(lambda: self.client.delete(path, headers=auth(tokens[0])))
        body = response.json()
        first = {"ms": wall, "queries": len(ctx.captured_queries), "redis": trips.total, "count": body["like_count"]}
        timed(lambda: self.client.put(path, headers=auth(tokens[0])))
        loads = []
        drain(self.r)
        drop_big()
        started = time.perf_counter()
        state_sync.load(self.r, comment_id=big.pk, subject_id=sid)
        loads.append((time.perf_counter() - started) * 1000)
        memory = self.admin.memory_usage(key)
        self.cold = {"first": first, "loads": loads, "members": self.r.zcard(key) - 1, "memory": memory}
        log(
            f"  cold first touch (unlike) {first['ms']:.0f} ms; state_sync.load {', '.join(f'{x:.0f}' for x in loads)} ms; "
            f"{self.cold['members']:,} members, {memory / 2**20:.0f} MiB in Redis"
        )
        # The page: flat, oldest first, 20 comments, the big one among them; every state loaded.
        list_path = f"/api/v1/subjects/{sid}/comments"
        params: dict[str, str | int] = {"mode": "flat", "limit": 20}
        page = self.client.get(list_path, params, headers=auth(tokens[0])).json()["items"]
        page_ids = [item["id"] for item in page]
        assert big.pk in page_ids, "the big comment is not on page 1"
        for c in page_ids:
            state_sync.load(self.r, comment_id=c, subject_id=sid)
        # Like and unlike: benchmark users who like it unlike it, then like it again.
        samples: dict[str, tuple[list, list]] = {"DELETE": ([], []), "PUT": ([], [])}
        counts = {}
        for method in ("DELETE", "PUT"):
            fn = self.client.delete if method == "DELETE" else self.client.put
            c = lambda fn=fn: fn(path, headers=auth(tokens[1]))  # noqa: E731
            _, sql, sql_ms = capture(c, 200, repeat=5)
            with RoundTrips() as trips:
                c()
            counts[method] = (len(sql), (trips.total, trips.likes), sql_ms)
        for i in range(self.args.warmup + self.args.iterations):
            token = tokens[i % len(tokens)]
            if i == self.args.warmup:
                settle_heap()
            for method, fn, want in (("DELETE", self.client.delete, False), ("PUT", self.client.put, True)):
                wall, cpu, response = timed(lambda: fn(path, headers=auth(token)))  # noqa: B023
                body = response.json()
                if body["liked"] is not want or body["like_count"] < big.like_count - 1:
                    raise RuntimeError(f"{method} answered {body}")
                if i >= self.args.warmup:
                    samples[method][0].append(wall)
                    samples[method][1].append(cpu)
        for method, verb in (("PUT", "like"), ("DELETE", "unlike")):
            q, trips, sql_ms = counts[method]
            wall, cpu = samples[method]
            self.million.append(
                Measured(
                    f"{verb} the comment",
                    f"{method} {path.replace(str(big.pk), '{id}')}",
                    Timing.of(wall),
                    Timing.of(cpu),
                    queries=q,
                    redis=trips,
                    sql_ms=sql_ms,
                    note=f"{len(tokens)} users who like it: unlike, then like again",
                )
            )
        # "liked" and counts of the page: the live provider the list calls.
        pairs = [(c, sid) for c in page_ids]
        viewer = actors[0]
        for _ in range(self.args.warmup):
            queries.page_like_state(pairs, viewer)
        with RoundTrips() as trips:
            got = queries.page_like_state(pairs, viewer)
        assert len(got) == len(pairs) and got[big.pk][1] is True and got[big.pk][0] >= big.like_count - 1, got.get(
            big.pk
        )
        wall, cpu = [], []
        settle_heap()
        for _ in range(self.args.iterations):
            c0, w0 = time.process_time(), time.perf_counter()
            queries.page_like_state(pairs, viewer)
            wall.append((time.perf_counter() - w0) * 1000)
            cpu.append((time.process_time() - c0) * 1000)
        self.million.append(
            Measured(
                "like state of a 20-comment page including it (`page_like_state`)",
                "likes.queries.page_like_state(20 comments, viewer)",
                Timing.of(wall),
                Timing.of(cpu),
                queries=0,
                redis=(trips.total, trips.likes),
                note='count and "liked" of each, one pipeline',
            )
        )
        # The same page as the list serves it.
        self.measure_get(
            "that page as the list serves it (authenticated)",
            f"GET {list_path.replace(str(sid), '{subject}')}?mode=flat&limit=20",
            lambda: self.client.get(list_path, params, headers=auth(tokens[0])),
            "20 comments, all states in Redis",
        )
        # The likers: first page, and a page from the middle by cursor.
        likers_path = f"/api/v1/comments/{big.pk}/likers"
        self.measure_get(
            "likers, first page",
            f"GET {likers_path.replace(str(big.pk), '{id}')}",
            lambda: self.client.get(likers_path),
            "20 likers, oldest first (anonymous reader)",
        )
        member, score = self.admin.zrange(key, self.cold["members"] // 2, self.cold["members"] // 2, withscores=True)[0]  # type: ignore[str-unpack]  # (member, score)
        cursor = encode_cursor(scope=f"likers:{big.pk}", position={"t": int(score) * 1000, "u": int(member)})
        self.measure_get(
            f"likers, page after the {self.cold['members'] // 2:,}th",
            f"GET {likers_path.replace(str(big.pk), '{id}')}?cursor=…",
            lambda: self.client.get(likers_path, {"cursor": cursor}),
            "by cursor (anonymous reader)",
        )
        for m in self.million:
            log(
                f"  {m.title[:60]:<60} queries {m.queries}  Redis {m.redis[0] if m.redis else '-'}  "
                f"p50 {m.timing.p50:.2f}  p99 {m.timing.p99:.2f}"
            )
        flushed = drain(self.r)
        self.check_subject(
            sid, [big.pk], "measurement 4", expected={(u, big.pk) for u in actors}, actors=actors, flushed=flushed
        )
        live.drop(self.r, [(big.pk, sid)])  # 80+ MiB of Redis; the next run measures loading it again anyway

    def measure_get(self, title, request, call, note):
        call()
        _, sql, sql_ms = capture(call, 200, repeat=5)
        with RoundTrips() as trips:
            call()
        for _ in range(self.args.warmup):
            timed(call)
        settle_heap()
        wall, cpu = [], []
        for _ in range(self.args.iterations):
            w, c, _ = timed(call)
            wall.append(w)
            cpu.append(c)
        self.million.append(
            Measured(
                title,
                request,
                Timing.of(wall),
                Timing.of(cpu),
                queries=len(sql),
                redis=(trips.total, trips.likes),
                sql_ms=sql_ms,
                note=note,
            )
        )

    # 2. throughput --------------------------------------------------------------------------------

    def run_throughput(self):
        from likes import state_sync

        sid = self.subjects["endpoint"].pk
        targets = comment_ids(sid, likeable=True)[:200]
        actors = self.endpoint_actors[:50]
        tokens = issue_tokens(actors)
        generator = self.args.load_generator
        if generator == "auto":
            generator = "wrk" if shutil.which("wrk") else "python"
        if generator == "wrk" and not shutil.which("wrk"):
            sys.exit("bench.likes: wrk is not installed (apt-get install wrk), or use --load-generator python")
        port = free_port()
        base = f"http://127.0.0.1:{port}"
        log(
            f"bench: 2. throughput: gunicorn {self.args.workers} workers x {self.args.threads} threads (gthread) on "
            f"{base}, {generator}, {self.args.connections} connections"
        )
        server = Server(
            port, settings_module="bench.likes_settings", workers=self.args.workers, threads=self.args.threads
        )
        t = self.throughput = {
            "generator": generator,
            "port": port,
            "tokens": len(tokens),
            "comments": len(targets),
            "gunicorn": server.description,
            "runs": [],
        }
        workdir = Path(tempfile.mkdtemp(prefix="bench-likes-"))
        # Steady state, as in measurement 1: every target's like state in Redis before the
        # first request, not loaded by whichever run first touches it.
        for comment in targets:
            state_sync.load(self.r, comment_id=comment, subject_id=sid)
        try:
            server.start("PUT", EMPTY_PATH, auth(tokens[0]))
            like_paths = [f"/api/v1/comments/{c}/like" for c in targets]
            plans = {"empty": [EMPTY_PATH], "like": like_paths}
            for view in ("empty", "like"):
                self.load(generator, workdir, base, view, plans[view], tokens, self.args.warmup_seconds, server)
            for round_no in range(self.args.rounds):
                # ABBA: each view runs first in every other round, so a drift of the machine's
                # speed over a round does not always fall on the same view.
                for view in ("empty", "like") if round_no % 2 == 0 else ("like", "empty"):
                    run = self.load(generator, workdir, base, view, plans[view], tokens, self.args.duration, server)
                    run["round"] = round_no + 1
                    t["runs"].append(run)
                    log(
                        f"  {view:<5} round {round_no + 1}: {run['rps']:8.0f} req/s, latency p50 {run['p50']:.2f} "
                        f"p99 {run['p99']:.2f} ms, errors {run['errors']}, CPU ms/req "
                        + " ".join(f"{k} {v:.2f}" for k, v in run["cpu"].items())
                        + (f", busiest worker {run['busiest_worker']:.0%}" if run["busiest_worker"] is not None else "")
                    )
        finally:
            server.stop()
            t["server_log"] = server.log_tail()
            shutil.rmtree(workdir, ignore_errors=True)
        for view in ("empty", "like"):
            runs = [r for r in t["runs"] if r["view"] == view]
            requests = sum(r["requests"] for r in runs)
            t[view] = requests / sum(r["seconds"] for r in runs)
            # CPU per request of everything serving it (server, PostgreSQL, Redis, load generator),
            # weighted by requests: what the rate would be limited by on a saturated machine.
            t[f"{view}_cpu"] = sum(sum(r["cpu"].values()) * r["requests"] for r in runs) / max(1, requests)
            t[f"{view}_server_cpu"] = sum(r["cpu"]["gunicorn"] * r["requests"] for r in runs) / max(1, requests)
        t["ratio"] = t["like"] / t["empty"]
        t["cpu_ratio"] = t["empty_cpu"] / t["like_cpu"]
        log(
            f"  like {t['like']:.0f} req/s vs empty {t['empty']:.0f} req/s: ratio {t['ratio']:.2f}; CPU per request "
            f"{t['like_cpu']:.2f} vs {t['empty_cpu']:.2f} ms: ratio {t['cpu_ratio']:.2f}"
        )
        t["flushed"] = drain(self.r)
        self.reset()  # the next measurements start from the seeded likes again

    def load(self, generator, workdir, base, view, paths, tokens, seconds, server) -> dict:
        import resource

        before = proc_cpu(server.pid)
        children = resource.getrusage(resource.RUSAGE_CHILDREN)
        machine_before = cpu_sample()
        if generator == "wrk":
            out = run_wrk(workdir, base, paths, tokens, seconds, self.args.connections)
        else:
            out = run_python_load(base, paths, tokens, seconds, self.args.connections)
        after = proc_cpu(server.pid)
        used = cpu_used(before, after)
        # How evenly the workers shared the load: the busiest one's part of the server's CPU
        # (0.5 with two workers sharing evenly, 1.0 when one served every connection).
        per_worker = [s - before.get(k, 0.0) for k, s in after.items() if k[0] == "gunicorn" and k[1] != server.pid]
        busiest = max(per_worker) / sum(per_worker) if per_worker and sum(per_worker) else None
        machine_after = cpu_sample()
        done = resource.getrusage(resource.RUSAGE_CHILDREN)
        # The load generator is a child of this process that has exited: its CPU is in
        # RUSAGE_CHILDREN.
        used["load"] = (done.ru_utime + done.ru_stime) - (children.ru_utime + children.ru_stime)
        n = max(1, out["requests"])
        cpu = {k: v * 1000 / n for k, v in used.items()}
        busy = None
        if machine_before and machine_after:
            total, idle = machine_after[0] - machine_before[0], machine_after[1] - machine_before[1]
            busy = (total - idle) / total if total else None
        return {
            "view": view,
            "requests": out["requests"],
            "seconds": out["seconds"],
            "rps": out["requests"] / out["seconds"],
            "errors": out["errors"],
            "p50": out["p50"],
            "p99": out["p99"],
            "cpu": cpu,
            "busy": busy,
            "busiest_worker": busiest,
        }


def live_flush(batch):
    from likes.services import likes_flush

    return likes_flush(batch=batch, max_seconds=300)


# --- the load generators --------------------------------------------------------------------------


WRK_SCRIPT = """
local tokens = {%(tokens)s}
local paths = {%(paths)s}
local n = 0
local pairs = #tokens * #paths

-- Pair k = (token k mod T, path k div T); the first pass over every pair likes (PUT), the next
-- one unlikes (DELETE), and so on: alternating like/unlike by many users over many comments.
request = function()
  local k = n %% pairs
  local method = (math.floor(n / pairs) %% 2 == 0) and "PUT" or "DELETE"
  n = n + 1
  local headers = {["Authorization"] = "Bearer " .. tokens[(k %% #tokens) + 1]}
  return wrk.format(method, paths[math.floor(k / #tokens) + 1], headers)
end

done = function(summary, latency, requests)
  local e = summary.errors
  io.write(string.format(
    'WRK {"requests": %%d, "duration_us": %%d, "connect": %%d, "read": %%d, "write": %%d, "status": %%d, ' ..
    '"timeout": %%d, "p50_us": %%d, "p99_us": %%d}\\n',
    summary.requests, summary.duration, e.connect, e.read, e.write, e.status, e.timeout,
    latency:percentile(50), latency:percentile(99)))
end
"""


def run_wrk(workdir: Path, base: str, paths: list[str], tokens: list[str], seconds: float, connections: int) -> dict:
    script = WRK_SCRIPT % {
        "tokens": ", ".join(json.dumps(t) for t in tokens),
        "paths": ", ".join(json.dumps(p) for p in paths),
    }
    data = run_wrk_script(script, base, seconds=seconds, connections=connections, threads=1, workdir=workdir)
    errors = data["connect"] + data["read"] + data["write"] + data["status"] + data["timeout"]
    return {
        "requests": data["requests"],
        "seconds": data["duration_us"] / 1e6,
        "errors": errors,
        "p50": data["p50_us"] / 1000,
        "p99": data["p99_us"] / 1000,
    }


def run_python_load(base: str, paths: list[str], tokens: list[str], seconds: float, connections: int) -> dict:
    """The fallback without wrk: another Python process (``bench-load`` in its command line)
    with ``connections`` threads, each a keep-alive connection, the same request sequence as
    the wrk script, stopping after ``seconds``."""
    code = (
        "import json, sys\n"
        "from bench.likes import _python_load\n"
        "print(json.dumps(_python_load(*json.loads(sys.argv[1]))))\n"
    )
    payload = json.dumps([base, paths, tokens, seconds, connections])
    done = subprocess.run(
        [sys.executable, "-c", code, payload, "bench-load"],
        capture_output=True,
        text=True,
        timeout=seconds + 60,
        cwd=BASE_DIR,
    )
    if done.returncode != 0:
        raise RuntimeError(f"the load generator failed: {done.stderr[-2000:]}")
    return json.loads(done.stdout.strip().splitlines()[-1])


def _python_load(base: str, paths: list[str], tokens: list[str], seconds: float, connections: int) -> dict:
    import http.client
    import itertools
    import threading
    from urllib.parse import urlsplit

    host, port = urlsplit(base).hostname, urlsplit(base).port
    counter = itertools.count()
    pairs = len(tokens) * len(paths)
    latencies: list[float] = []
    errors = [0]
    lock = threading.Lock()
    stop = time.monotonic() + seconds

    def worker():
        conn = http.client.HTTPConnection(host, port, timeout=5)
        mine = []
        while time.monotonic() < stop:
            n = next(counter)
            k = n % pairs
            method = "PUT" if (n // pairs) % 2 == 0 else "DELETE"
            started = time.perf_counter()
            try:
                conn.request(
                    method, paths[k // len(tokens)], headers={"Authorization": f"Bearer {tokens[k % len(tokens)]}"}
                )
                response = conn.getresponse()
                response.read()
                ok = response.status == 200
            except OSError:
                conn.close()
                conn = http.client.HTTPConnection(host, port, timeout=5)
                ok = False
            mine.append((time.perf_counter() - started) * 1000)
            if not ok:
                with lock:
                    errors[0] += 1
        with lock:
            latencies.extend(mine)

    started = time.monotonic()
    threads = [threading.Thread(target=worker) for _ in range(connections)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    took = time.monotonic() - started
    latencies.sort()
    pick = lambda p: latencies[min(len(latencies) - 1, int(p / 100 * len(latencies)))] if latencies else 0.0  # noqa: E731
    return {"requests": len(latencies), "seconds": took, "errors": errors[0], "p50": pick(50), "p99": pick(99)}


# --- the report ----------------------------------------------------------------------------------


ENV_NAMES = (
    "DJANGO_SECRET_KEY",
    "DATABASE_URL",
    "REDIS_URL",
    "LIKES_REDIS_URL",
    "CELERY_BROKER_URL",
    "RATE_LIMITS",
    "LIKES_FLUSH_BATCH",
)
# As given on the command line: Celery's configuration writes CELERY_BROKER_URL into os.environ.
ENV_AT_START = {name: os.environ.get(name) for name in ENV_NAMES}


def command_line() -> str:
    env = []
    for name in ENV_NAMES:
        value = ENV_AT_START.get(name)
        if value:
            if name == "DATABASE_URL":
                value = re.sub(r"//([^:@/]+):[^@/]+@", r"//\1:***@", value)
            env.append(f"{name}={value}")
    import shlex

    args = shlex.join(sys.argv[1:])
    return " ".join(env + [".venv/bin/python -m bench.likes"] + ([args] if args else []))


def verdicts(bench: LikesBench) -> list[Verdict]:
    out = []
    by_title = {m.title: m for m in bench.endpoint}
    for verb in ("like", "unlike"):
        m = by_title.get(f"{verb} (state in Redis)")
        if m:
            out.append(
                Verdict(
                    f"{verb} endpoint p99 < {LIKE_P99_MS:g} ms (server-side)",
                    f"p99 {m.timing.p99:.2f} ms (p50 {m.timing.p50:.2f}, {m.queries} queries, {m.redis[0]} Redis round trips)",
                    m.timing.p99 < LIKE_P99_MS,
                )
            )
    t = bench.throughput
    if t.get("runs"):
        errors = sum(r["errors"] for r in t["runs"])
        out.append(
            Verdict(
                f"like endpoint throughput >= {THROUGHPUT_RATIO:g} x an empty authenticated DRF view",
                f"{t['like']:,.0f} vs {t['empty']:,.0f} req/s: x{t['ratio']:.2f} (CPU per request of all processes: "
                f"{t['like_cpu']:.2f} vs {t['empty_cpu']:.2f} ms, x{t['cpu_ratio']:.2f})"
                + (f"; {errors} failed requests" if errors else ""),
                t["ratio"] >= THROUGHPUT_RATIO and errors == 0,
            )
        )
    for run in bench.flushes:
        if run["default"] and run["kind"] == "like":
            out.append(
                Verdict(
                    f"{run['events']:,} queued like events flushed in < {FLUSH_SECONDS:g} s (LIKES_FLUSH_BATCH={run['batch']})",
                    f"{run['seconds']:.2f} s ({run['events'] / run['seconds']:,.0f} events/s)",
                    run["seconds"] < FLUSH_SECONDS and run["ok"],
                )
            )
    for m in bench.million:
        if m.title.startswith(("like the", "unlike the", "like state", "likers, first")):
            out.append(
                Verdict(
                    f"comment with {bench.big.like_count:,} likes: {m.title.split(' (')[0]} p99 < {LIKE_P99_MS:g} ms",
                    f"p99 {m.timing.p99:.2f} ms (p50 {m.timing.p50:.2f})",
                    m.timing.p99 < LIKE_P99_MS,
                )
            )
    for what, ok, detail in bench.checks:
        out.append(Verdict(f"check: {what}", detail, ok))
    for run in bench.flushes:
        out.append(
            Verdict(
                f"check: the {run['kind']} flush (batch {run['batch']}) wrote exactly what was queued",
                run["check"],
                run["ok"],
            )
        )
    return out


def measured_table(rows: list[Measured]) -> list[str]:
    out = [
        "| measured | request | SQL queries | Redis round trips (likes) | p50 ms | p99 ms | mean ms | max ms | app CPU p50 ms | SQL ms | n | notes |",
        "|---|---|---:|---|---:|---:|---:|---:|---:|---:|---:|---|",
    ]
    for m in rows:
        redis_trips = f"{m.redis[0]} ({m.redis[1]})" if m.redis else "–"
        out.append(
            f"| {m.title} | `{m.request}` | {m.queries if m.queries is not None else '–'} | {redis_trips} | "
            f"{m.timing.p50:.2f} | {m.timing.p99:.2f} | {m.timing.mean:.2f} | {m.timing.max:.2f} | "
            f"{f'{m.cpu.p50:.2f}' if m.cpu else '–'} | {f'{m.sql_ms:.2f}' if m.sql_ms is not None else '–'} | "
            f"{m.timing.n} | {m.note} |"
        )
    return out


def render(
    bench: LikesBench, info: dict, verdict_list: list[Verdict], started: datetime, took: float, notes: str
) -> str:
    from django.conf import settings

    f, a = bench.facts, bench.args
    out = [
        START,
        "## Likes",
        "",
        f"Generated by `bench/likes.py` on {started.strftime('%Y-%m-%d %H:%M UTC')} (run time {took / 60:.1f} min); "
        "re-run the command to refresh this section (the rest of the file is `bench/core.py`'s). Only the *Notes* "
        "at the end are hand-written (the script keeps them).",
        "",
        "```sh",
        command_line(),
        "```",
        "",
        f"Options: `--iterations` ({a.iterations}), `--warmup` ({a.warmup}), `--million` ({a.million}), `--duration` "
        f"({a.duration:g} s), `--rounds` ({a.rounds}), `--connections` ({a.connections}), `--workers` ({a.workers}), "
        f"`--threads` ({a.threads}), `--flush-batches` ({a.flush_batches or 'none'}), `--load-generator`, `--only`, "
        "`--reseed`, `--output`.",
        "",
        "### Machine and data",
        "",
        f"- {info.get('nproc')} CPUs ({info.get('cpu', 'unknown CPU')}), {info.get('memory', '?')} memory; load "
        f"average at the start {f.get('load_start')}, at the end {info.get('load')}",
        f"- Python speed check (bench/core.py's `calibrate()`, lower is faster): {f.get('calibration_start', 0):.0f} ms "
        f"before, {f.get('calibration_end', 0):.0f} ms after (and around each measurement, below: this virtual "
        "machine's speed varies by up to 2x from minute to minute even when nothing else runs, so compare figures "
        "within a run)",
        f"- {info.get('database')} ({info.get('db_settings', '')}); Redis {f.get('redis_version', '?')}: like state "
        f"and streams at `{settings.LIKES_REDIS_URL}`, the cache (rate limiter) at `{settings.REDIS_URL}`; all on "
        "this machine over TCP",
        f"- code measured: {info.get('code')}; Python {info.get('python')}, Django {info.get('django')}",
        f"- site `{SITE_KEY}`: {f['users']}; "
        f"`likes-endpoint` {f['endpoint_comments']:,} comments ({f['endpoint_likeable']:,} published and public) "
        f"with {f['endpoint_likes']:,} seeded likes ({f['subject_endpoint']}); "
        f"`likes-million` {f['million_comments']:,} comments, {f['million_likes']:,} likes, the oldest top-level one "
        f"with {f['million_top']:,} ({f['subject_million']}); "
        f"`likes-flush` {f['flush_comments']:,} comments, emptied before each flush ({f['subject_flush']})",
        f"- the database as a whole: {f['all_likes']:,} like rows ({f['likes_size']} with indexes), "
        f"{f['all_users']:,} users ({f['users_size']}); the like events of earlier runs ({bench.drained_before:,}) "
        "were flushed and the subjects put back as seeded before measuring; the tables were vacuumed and analyzed "
        f"before measuring and after the flush measurement (autovacuum is `{f.get('autovacuum')}` on this server)",
    ]
    if bench.disturbed:
        out.append(
            "- measured again because another process emptied the Redis database meanwhile (a test suite pointed at "
            "it?): " + ", ".join(bench.disturbed)
        )
    out.append("")
    if bench.endpoint:
        out += [
            "### 1. The like endpoint, server-side",
            "",
            "Milliseconds per request measured in-process around Django's test `Client` (routing, middleware, "
            "bearer-token authentication, DRF, the like throttle, the comment lookup, the like script, JSON; no "
            "network, no HTTP server), as `bench/core.py` measures. "
            f"After {a.warmup} untimed pairs, {a.iterations} likes and {a.iterations} unlikes alternate: a like of a "
            "random (user, comment) pair that is not liked, then an unlike of a random liked pair. SQL queries are "
            "counted with `CaptureQueriesContext`; *Redis round trips* counts every socket write to Redis (one per "
            "command or pipeline), in parentheses those of the likes client; the others go to the cache: the rate "
            "limiter's `get`+`set` (rate limits kept, raised out of reach, as bench/core.py does) and the ban check's "
            "`get` (`moderation.queries.standing_of`). Not counted: Django's "
            "`CONN_HEALTH_CHECKS` `SELECT 1`, which a real server sends once per request (the test client skips it). "
            "*app CPU*: this process's CPU time per request; *SQL ms*: time inside `cursor.execute()` per request "
            "(median of a few).",
            "",
        ]
        out += measured_table(bench.endpoint)
        out += [
            "",
            f"CPU during the timed requests: {f.get('cpu_endpoint', 'unknown')}. Over this whole measurement: "
            f"{f.get('cpu_part_endpoint', 'unknown')}.",
            "",
        ]
    t = bench.throughput
    if t.get("runs"):
        out += [
            "### 2. Throughput: the like endpoint against an empty view",
            "",
            f"One server, {t['gunicorn']} on 127.0.0.1:{t['port']} with `DJANGO_SETTINGS_MODULE=bench.likes_settings` "
            "(the application's settings, URLconf `bench/likes_urls.py`: the real API plus `PUT "
            f"{EMPTY_PATH}`, an `APIView` with the like endpoint's authentication classes and `IsAuthenticated` "
            "returning `{}`; both pay for the middleware, the bearer-token lookup, Django's per-request connection "
            "health check and DRF) and `RATE_LIMITS=off`. Load: "
            + (
                f"`wrk -t1 -c{a.connections} -d{max(1, round(a.duration))}s` (Debian's wrk) with a Lua script"
                if t["generator"] == "wrk"
                else f"a Python load generator in a separate process ({a.connections} threads, keep-alive connections)"
            )
            + f" rotating {t['tokens']} bearer tokens over {t['comments']} comments: each (user, comment) pair is "
            "liked on one pass and unliked on the next; the empty view gets the same requests at its own path. "
            f"{a.warmup_seconds:g} s of each first (untimed: connections, comment states), then {a.rounds} timed runs "
            f"of {a.duration:g} s per view, alternating, each view first in every other round. No flush runs meanwhile (no Celery worker): the like events "
            f"queue up in Redis and were flushed afterwards ({t['flushed']:,} events). Client latencies include the "
            "loopback HTTP. CPU per request from /proc over each run (PostgreSQL: every backend on the machine).",
            "",
            "| view | run | requests | req/s | latency p50 ms | latency p99 ms | failed | CPU ms/request: gunicorn / PostgreSQL / Redis / load generator | all CPUs busy | busiest worker's part of the server CPU |",
            "|---|---:|---:|---:|---:|---:|---:|---|---:|---:|",
        ]
        for run in t["runs"]:
            c = run["cpu"]
            out.append(
                f"| {'like (PUT/DELETE)' if run['view'] == 'like' else 'empty'} | {run['round']} | {run['requests']:,} | "
                f"{run['rps']:,.0f} | {run['p50']:.2f} | {run['p99']:.2f} | {run['errors']} | "
                f"{c['gunicorn']:.2f} / {c['postgres']:.2f} / {c['redis']:.2f} / {c['load']:.2f} | "
                f"{'?' if run['busy'] is None else format(run['busy'], '.0%')} | "
                f"{'?' if run.get('busiest_worker') is None else format(run['busiest_worker'], '.0%')} |"
            )
        out += [
            "",
            f"Like endpoint {t['like']:,.0f} req/s, empty view {t['empty']:,.0f} req/s (all timed runs): "
            f"**ratio {t['ratio']:.2f}** (target >= {THROUGHPUT_RATIO:g}). The machine's CPUs are saturated during "
            "these runs (server, PostgreSQL, Redis and load generator share 2 CPUs), so the rates follow the CPU each "
            f"request costs all of them: {t['like_cpu']:.2f} ms for a like, {t['empty_cpu']:.2f} ms for the empty "
            f"view (of which the gunicorn workers {t['like_server_cpu']:.2f} and {t['empty_server_cpu']:.2f} ms), a "
            f"ratio of {t['cpu_ratio']:.2f}; that ratio is the steadier figure when other work shares the machine. "
            f"Over this whole measurement: {f.get('cpu_part_throughput', 'unknown')}.",
            "",
        ]
    if bench.flushes:
        first = bench.flushes[0]
        out += [
            "### 3. The flush",
            "",
            f"{first['events']:,} actions ({a.flush_users:,} users x {a.flush_comments} comments of `likes-flush`, in "
            "shuffled order) appended by the real like script (`likes.live.LIKE`, 2,000 per pipeline, each "
            "registering the subject for the flush as the endpoint does), then `likes_flush(batch=...)` timed until "
            "the subject's stream is empty. *like*: the subject emptied first, so every action inserts a row; "
            "*unlike*: the same pairs unliked right after, so every action updates a row. Checked afterwards: rows, "
            f"active rows, `like_count`s and the stream. `LIKES_FLUSH_BATCH` is {first['batch']:,} here (its default "
            "is 5,000).",
            "",
            "| actions | batch | events | seconds | events/s | batches | of which SQL s (statements) | queueing s | check |",
            "|---|---:|---:|---:|---:|---:|---:|---:|---|",
        ]
        for run in bench.flushes:
            out.append(
                f"| {run['kind']}{' (setting)' if run['default'] else ''} | {run['batch']:,} | {run['events']:,} | "
                f"{run['seconds']:.2f} | {run['events'] / run['seconds']:,.0f} | {run['batches']} | "
                f"{run['sql_s']:.2f} ({run['statements']}) | {run['queue_s']:.2f} | "
                f"{'PASS' if run['ok'] else '**FAIL**'}: {run['check']} |"
            )
        out += ["", f"CPU over this whole measurement: {f.get('cpu_part_flush', 'unknown')}.", ""]
    if bench.million:
        c = bench.cold
        out += [
            f"### 4. A comment with {bench.big.like_count:,} likes",
            "",
            f"Comment {bench.big.pk} of `likes-million`, liked by all {bench.big.like_count:,} bench users. "
            f"**Loading its state from the database** (cold: the Redis key dropped, as after an eviction or a Redis "
            f"restart): the first request, an unlike, took {c['first']['ms']:,.0f} ms ({c['first']['queries']} SQL "
            f"queries, {c['first']['redis']} Redis round trips); `likes.state_sync.load()` alone took "
            + ", ".join(f"{x:,.0f}" for x in c["loads"])
            + f" ms. The state holds {c['members']:,} likers and takes {c['memory'] / 2**20:,.0f} MiB of Redis "
            "(`MEMORY USAGE`). Then, with the state loaded (in-process, as in 1):",
            "",
        ]
        out += measured_table(bench.million)
        out += ["", f"CPU over this whole measurement: {f.get('cpu_part_million', 'unknown')}.", ""]
    out += ["### Targets", "", "| target | measured | result |", "|---|---|---|"]
    out += [f"| {v.target} | {v.measured} | {'PASS' if v.ok else '**FAIL**'} |" for v in verdict_list]
    out += ["", "### Notes", "", notes or f"{NOTES_START}\n_No notes written yet._\n{NOTES_END}", END]
    return "\n".join(out)


def previous_notes(text: str) -> str:
    start, end = text.find(NOTES_START), text.find(NOTES_END)
    if start < 0 or end < start:
        return ""
    return text[start : end + len(NOTES_END)]


def write_block(path: Path, render_block) -> None:
    """Replace the likes block of ``path`` (or append it): the rest stays byte for byte."""
    text = path.read_text() if path.exists() else ""
    start = text.find(START)
    end = text.find(END, start) if start >= 0 else -1
    if start >= 0 and end >= 0:
        block = render_block(previous_notes(text[start:end]))
        text = text[:start] + block + text[end + len(END) :]
    else:
        block = render_block("")
        text = text + ("" if not text else "\n" if text.endswith("\n") else "\n\n") + block + "\n"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    configure(args)
    started_at = datetime.now(UTC)
    started = time.perf_counter()
    bench = LikesBench(args)
    bench.facts["load_start"] = " ".join(f"{x:.2f}" for x in os.getloadavg())
    bench.facts["calibration_start"] = calibrate()
    info = machine()  # the code as it was when the measurements started
    bench.prepare()
    bench.facts["redis_version"] = bench.r.info("server").get("redis_version")
    try:
        for part, run in (
            ("throughput", bench.run_throughput),
            ("flush", bench.run_flush),
            ("endpoint", bench.run_endpoint),
            ("million", bench.run_million),
        ):
            if part in bench.parts:
                bench.guarded(part, run)
    finally:
        drain(bench.r)
    bench.facts["calibration_end"] = calibrate()
    info["load"] = " ".join(f"{x:.2f}" for x in os.getloadavg())
    verdict_list = verdicts(bench)
    took = time.perf_counter() - started
    print()
    for v in verdict_list:
        print(f"{'PASS' if v.ok else 'FAIL'}  {v.target}: {v.measured}")
    if args.output != "-":
        path = Path(args.output)
        if not path.is_absolute():
            path = Path.cwd() / path
        write_block(path, lambda notes: render(bench, info, verdict_list, started_at, took, notes))
        print(f"\nbench: wrote the likes section of {path}")
    return 0 if all(v.ok for v in verdict_list) else 1


if __name__ == "__main__":
    sys.exit(main())

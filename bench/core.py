"""The performance benchmark of DESIGN.md ("Performance targets"), on PostgreSQL.

Seeds (once; ``--reseed`` rebuilds) a subject with 100,000 comments over realistic depths,
1,000 users and 1,000,000 likes (see ``bench/seed.py``), then drives the real request stack
(URL routing, middleware, DRF, serializers, queries, JSON rendering) in-process through
Django's test ``Client``, so each timing is server-side: no network, no HTTP server. For every
scenario it reports SQL queries per request (anonymous and authenticated with a bearer token)
and p50/p99/mean over ``--iterations`` timed requests after ``--warmup`` untimed ones, checks the
targets, runs ``EXPLAIN (ANALYZE, BUFFERS)`` on the list statements, and writes
``docs/benchmarks.md``.

    DJANGO_SECRET_KEY=bench DATABASE_URL=postgres://postgres@127.0.0.1:5432/bench \\
    REDIS_URL=redis://127.0.0.1:6379/14 .venv/bin/python -m bench.core

The database named in ``DATABASE_URL`` is created if missing and migrated. SQLite is refused
unless ``--allow-sqlite`` is given (a quick smoke run: ``--allow-sqlite --comments 3000``).
Posting adds comments as the user ``bench-poster``; they are removed (and the counters
reconciled) at the end, so the dataset stays the same from run to run.
"""

from __future__ import annotations

import argparse
import gc
import json
import math
import os
import platform
import random
import re
import statistics
import sys
import time
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from urllib.parse import urlsplit

BASE_DIR = Path(__file__).resolve().parent.parent
DEFAULT_OUTPUT = BASE_DIR / "docs" / "benchmarks.md"
ANALYSIS_START = "<!-- analysis:start -->"
ANALYSIS_END = "<!-- analysis:end -->"

# Targets (DESIGN.md, "Performance targets"; the issue's wording).
MAX_QUERIES = 6
DEEP_PAGE_TOLERANCE = 1.20
LIST_P99_MS = 20.0
POST_P99_MS = 30.0


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        prog="python -m bench.core",
        description="Seed a 100k-comment subject and measure queries and server-side latency per request.",
    )
    parser.add_argument("--comments", type=int, default=100_000, help="comments in the bench subject (100000)")
    parser.add_argument("--users", type=int, default=1_000, help="bench users (1000)")
    parser.add_argument("--likes", type=int, default=1_000_000, help="likes over the subject (1000000)")
    parser.add_argument("--seed", type=int, default=42, help="random seed of the dataset (42)")
    parser.add_argument(
        "--background-comments",
        type=int,
        default=100_000,
        help="comments of other subjects in the same tables (100000; 0 for none)",
    )
    parser.add_argument("--background-subjects", type=int, default=1_000, help="other subjects (1000)")
    parser.add_argument("--iterations", type=int, default=300, help="timed requests per scenario and viewer (300)")
    parser.add_argument("--warmup", type=int, default=20, help="untimed requests before each timed run (20)")
    parser.add_argument("--deep-page", type=int, default=500, help="the deep page reached by cursor (500)")
    parser.add_argument("--reseed", action="store_true", help="rebuild the dataset even if it is present")
    parser.add_argument(
        "--check-counters",
        action="store_true",
        help="run subject_reconcile_counters on a reused dataset too (always done after seeding)",
    )
    parser.add_argument("--allow-sqlite", action="store_true", help="allow a (smoke) run on SQLite")
    parser.add_argument("--skip-post", action="store_true", help="do not measure posting")
    parser.add_argument(
        "--output",
        default=str(DEFAULT_OUTPUT),
        help="Markdown report to write ('-' for none; default docs/benchmarks.md)",
    )
    return parser.parse_args(argv)


# --- environment ---------------------------------------------------------------------------


def configure(args: argparse.Namespace) -> None:
    """Settings module, database check (PostgreSQL unless --allow-sqlite), django.setup()."""
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
    url = os.environ.get("DATABASE_URL", "")
    scheme = urlsplit(url).scheme if url else ""
    if scheme not in {"postgres", "postgresql", "pgsql"}:
        if not args.allow_sqlite:
            sys.exit(
                "bench: the benchmark runs on PostgreSQL; set DATABASE_URL=postgres://... "
                "(or pass --allow-sqlite for a smoke run)."
            )
        if not url:
            (BASE_DIR / "var").mkdir(exist_ok=True)
            os.environ["DATABASE_URL"] = f"sqlite:///{BASE_DIR / 'var' / 'bench.sqlite3'}"
    # Cursors are signed with the secret key; any value will do for a benchmark.
    os.environ.setdefault("DJANGO_SECRET_KEY", "bench-only-secret-key")
    # Posting is measured as a web process pays for it: the background tasks a post triggers
    # (moderation's second check) are enqueued, not run inline as the embedded default's eager
    # Celery would. The in-memory transport takes them and nothing runs them.
    os.environ.setdefault("CELERY_BROKER_URL", "memory://")
    if str(BASE_DIR) not in sys.path:
        sys.path.insert(0, str(BASE_DIR))
    db = _database_settings()
    if db["ENGINE"].endswith("postgresql"):
        ensure_database(db)
    import django

    django.setup()
    relax_rate_limits()


def relax_rate_limits() -> None:
    """Keep every configured rate limit's machinery (its cache round trips are part of the cost
    of a post) but raise the limits so the benchmark's hundreds of posts are never throttled.
    ``RATE_LIMITS=off`` in the environment removes them altogether."""
    from django.conf import settings

    limits = getattr(settings, "RATE_LIMITS", None)
    if limits:
        settings.RATE_LIMITS = {scope: (10**9, period) for scope, (_, period) in limits.items()}


def _database_settings() -> dict:
    from django.conf import settings

    return settings.DATABASES["default"]


def ensure_database(db: dict) -> None:
    """Create the PostgreSQL database if it does not exist (connecting to ``postgres``)."""
    import psycopg
    from psycopg import sql

    params = {
        "dbname": "postgres",
        "user": db.get("USER") or None,
        "password": db.get("PASSWORD") or None,
        "host": db.get("HOST") or None,
        "port": db.get("PORT") or None,
    }
    with psycopg.connect(**{k: v for k, v in params.items() if v}, autocommit=True) as conn:
        exists = conn.execute("SELECT 1 FROM pg_database WHERE datname = %s", [db["NAME"]]).fetchone()
        if not exists:
            print(f"bench: creating database {db['NAME']!r}")
            conn.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(db["NAME"])))


# --- measuring -----------------------------------------------------------------------------


def percentile(samples: list[float], p: float) -> float:
    """Nearest-rank percentile."""
    ordered = sorted(samples)
    rank = max(1, math.ceil(p / 100 * len(ordered)))
    return ordered[rank - 1]


@dataclass
class Timing:
    p50: float
    p99: float
    mean: float
    max: float
    n: int

    @classmethod
    def of(cls, samples_ms: list[float]) -> Timing:
        return cls(
            p50=percentile(samples_ms, 50),
            p99=percentile(samples_ms, 99),
            mean=statistics.fmean(samples_ms),
            max=max(samples_ms),
            n=len(samples_ms),
        )


@dataclass
class ViewerResult:
    queries: int
    sql: list[str]
    timing: Timing | None
    rows: str = ""
    sql_ms: float | None = None  # median over a few requests of the time spent in cursor.execute()
    cpu: Timing | None = None  # this process's CPU time per request
    shown: int = 0  # comment objects on the page: items, their replies and their chains


@dataclass
class Scenario:
    key: str
    title: str
    request: str  # shown in the report
    kind: str  # "list", "list-size" (limit 100, counts), "chain", "tree", "post"
    results: dict[str, ViewerResult] = field(default_factory=dict)
    chain_queries: dict[str, int] = field(default_factory=dict)
    note: str = ""


def run_timed(call, iterations: int, warmup: int, expect: int) -> tuple[list[float], list[float]]:
    """Wall-clock milliseconds of each request, and this process's CPU milliseconds for each
    (the application's own work, unaffected by waiting for the database or for a busy CPU)."""
    for _ in range(warmup):
        response = call()
        if response.status_code != expect:
            raise RuntimeError(f"unexpected status {response.status_code}: {response.content[:300]!r}")
    settle_heap()
    samples, cpu = [], []
    for _ in range(iterations):
        cpu_started = time.process_time()
        started = time.perf_counter()
        response = call()
        elapsed = (time.perf_counter() - started) * 1000
        cpu.append((time.process_time() - cpu_started) * 1000)
        if response.status_code != expect:
            raise RuntimeError(f"unexpected status {response.status_code}: {response.content[:300]!r}")
        samples.append(elapsed)
    return samples, cpu


def settle_heap() -> None:
    """Collect garbage, then freeze what survives out of the collector (``gc.freeze``), as a
    server that preloads its application does: the harness's own data (the seeding plan, a
    million user ids) would otherwise make every full collection during the timed requests
    scan it, a pause no request of a web process pays."""
    gc.collect()
    gc.freeze()


def run_interleaved(calls, iterations: int, warmup: int, expect: int) -> list[tuple[list[float], list[float]]]:
    """``run_timed`` for several requests at once, alternating between them."""
    for _ in range(warmup):
        for call in calls:
            response = call()
            if response.status_code != expect:
                raise RuntimeError(f"unexpected status {response.status_code}: {response.content[:300]!r}")
    settle_heap()
    out: list[tuple[list, list]] = [([], []) for _ in calls]
    for _ in range(iterations):
        for call, (wall, cpu) in zip(calls, out, strict=True):
            cpu_started = time.process_time()
            started = time.perf_counter()
            response = call()
            wall.append((time.perf_counter() - started) * 1000)
            cpu.append((time.process_time() - cpu_started) * 1000)
            if response.status_code != expect:
                raise RuntimeError(f"unexpected status {response.status_code}: {response.content[:300]!r}")
    return out


def capture(call, expect: int, repeat: int = 1):
    """The response, the SQL of one request, and the median time its queries spent in the
    database driver (execute + fetch, as Django's debug cursor measures it) over ``repeat``
    requests."""
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    sql_times = []
    for _ in range(repeat):
        spent = [0.0]

        def timer(execute, sql, params, many, context):
            started = time.perf_counter()
            try:
                return execute(sql, params, many, context)
            finally:
                spent[0] += time.perf_counter() - started  # noqa: B023 - called before the loop moves on

        with CaptureQueriesContext(connection) as ctx, connection.execute_wrapper(timer):
            response = call()
        if response.status_code != expect:
            raise RuntimeError(f"unexpected status {response.status_code}: {response.content[:300]!r}")
        sql_times.append(spent[0] * 1000)
    return response, [q["sql"] for q in ctx.captured_queries], statistics.median(sql_times)  # type: ignore[possibly-undefined]  # repeat >= 1


def comments_shown(payload: dict) -> int:
    items = payload.get("items", [])
    return len(items) + sum(len(i.get("replies", [])) + len(i.get("chain", [])) for i in items)


def describe_rows(payload: dict) -> str:
    items = payload.get("items", [])
    extra = []
    nested = sum(len(i.get("replies", [])) for i in items)
    if nested:
        extra.append(f"+{nested} replies")
    chained = sum(len(i.get("chain", [])) for i in items)
    if chained:
        extra.append(f"+{chained} chain rows")
    return " ".join([f"{len(items)} items"] + extra)


# Rows by a list of ids: ``IN (...)`` (the ORM, SQLite) or ``= ANY(array)`` (rowsql on PostgreSQL).
CHAIN_ROWS_RE = re.compile(r'FROM "comment_index".*WHERE (?:"comment_index"\."id"|c\.id) (?:IN \(|= ANY\()', re.S)


# --- the benchmark -------------------------------------------------------------------------


class Bench:
    def __init__(self, args: argparse.Namespace):
        from django.test import Client

        from bench import seed

        self.args = args
        self.seed = seed
        self.shape = seed.Shape(
            comments=args.comments,
            users=args.users,
            likes=args.likes,
            seed=args.seed,
            background_comments=args.background_comments,
            background_subjects=args.background_subjects,
        )
        self.client = Client(SERVER_NAME="127.0.0.1")
        self.scenarios: list[Scenario] = []
        self.explains: list[dict] = []
        self.log_lines: list[str] = []
        self.facts: dict = {}

    def log(self, message: str) -> None:
        print(message, flush=True)

    # dataset ------------------------------------------------------------------------------

    def prepare(self):
        from django.core.management import call_command

        from comments.models import Comment, User
        from comments.services import subject_reconcile_counters

        started = time.perf_counter()
        call_command("migrate", interactive=False, verbosity=0)
        self.log(f"bench: migrated in {time.perf_counter() - started:.1f} s")
        self.poster = self._user("bench-poster", "Bench Poster")
        subject = self.seed.find_subject(self.shape)
        if subject is not None:
            leftovers = self.seed.purge_comments("subject_id = %s AND author_id = %s", [subject.pk, self.poster.pk])
            if leftovers:
                self.log(f"bench: removed {leftovers} comments left by an interrupted posting run")
                subject_reconcile_counters(subject_id=subject.pk)
        reuse = (
            subject is not None
            and not self.args.reseed
            and subject.title == self.shape.signature
            and Comment.objects.filter(subject_id=subject.pk).count() == self.shape.comments
            and self.seed.background_count() == self.shape.background_comments
        )
        if reuse:
            self.log(f"bench: reusing subject {subject.pk} ({self.shape.signature}); vacuuming ...")
            self.seed._analyze()  # every run starts from vacuumed tables with fresh statistics
            self.facts["seeded"] = "reused (seeded by an earlier run; vacuumed and analyzed before measuring)"
        else:
            self.log(f"bench: seeding {self.shape.signature} ...")
            started = time.perf_counter()
            subject = self.seed.seed(self.shape, log=self.log)
            took = time.perf_counter() - started
            self.log(f"bench: seeded in {took:.1f} s")
            self.facts["seeded"] = f"seeded by this run in {took:.0f} s"
        if not reuse or self.args.check_counters:
            started = time.perf_counter()
            report = subject_reconcile_counters(subject_id=subject.pk)
            took = time.perf_counter() - started
            self.facts["reconcile"] = (
                f"`subject_reconcile_counters` on the bench subject found {report.fixed_comments} comment(s) and "
                f"{'the subject' if report.fixed_subject else 'no subject counter'} to fix, and took {took:.1f} s"
            )
            self.facts["reconcile_s"] = took
            self.log(f"bench: counters checked: {self.facts['reconcile']}")
            if report.fixed_comments or report.fixed_subject:
                self.log("bench: WARNING: the seeded counters drifted from what reconcile computes")
        else:
            self.facts["reconcile"] = "counters checked when it was seeded (`--check-counters` checks again)"
        subject.refresh_from_db()
        self.subject = subject
        self.user_ids = self.seed.ensure_users(self.shape)
        self.viewer = User.objects.get(pk=self.user_ids[min(self.seed.VIEWER_INDEX, len(self.user_ids) - 1)])
        self._dataset_facts()

    def _user(self, username: str, name: str):
        from django.contrib.auth.hashers import make_password

        from comments.models import User

        user, _ = User.objects.get_or_create(
            username=username, defaults={"display_name": name, "password": make_password(None)}
        )
        return user

    def _dataset_facts(self):
        from django.db import connection
        from django.db.models import Count, Max, Sum

        from comments.models import Comment, Follow, Subject
        from likes.models import Like

        sid = self.subject.pk
        rows = Comment.objects.filter(subject_id=sid)
        f = self.facts
        f["comments"] = rows.count()
        f["roots"] = rows.filter(depth=0).count()
        f["status"] = dict(rows.values_list("status").annotate(n=Count("pk")).order_by())
        f["friends_only"] = rows.filter(visibility="friends").count()
        f["depths"] = dict(rows.values_list("depth").annotate(n=Count("pk")).order_by())
        threads = dict(rows.filter(depth__gt=0).values_list("root_id").annotate(n=Count("pk")).order_by())
        sizes = [threads.get(r, 0) for r in rows.filter(depth=0).values_list("pk", flat=True)]
        f["thread_sizes"] = sizes
        likes = rows.aggregate(total=Sum("like_count"), top=Max("like_count"))
        f["like_sum"], f["like_max"] = likes["total"] or 0, likes["top"] or 0
        f["like_rows"] = Like.objects.filter(subject_id=sid).count()
        f["users"] = len(self.user_ids)
        f["follows"] = Follow.objects.filter(follower_id__in=self.user_ids).count()
        f["placeholders"] = rows.filter(status__in=["deleted", "rejected"], descendant_count__gt=0).count()
        f["visible"] = (self.subject.comment_count, self.subject.root_count)
        f["pinned"] = rows.filter(pinned=True).count()
        f["viewer_comments"] = rows.filter(author_id=self.viewer.pk).count()
        f["all_comments"] = Comment.objects.count()
        f["all_subjects"] = Subject.objects.count()
        f["all_likes"] = Like.objects.count()
        with connection.cursor() as cursor:
            if connection.vendor == "postgresql":
                cursor.execute(
                    "SELECT pg_size_pretty(pg_total_relation_size('comment_index')), "
                    "pg_size_pretty(pg_total_relation_size('comment_content')), "
                    "pg_size_pretty(pg_total_relation_size('likes_like'))"
                )
                f["sizes"] = cursor.fetchone()
        # Scenario targets.
        max_depth = max(f["depths"])
        self.chain_tail = rows.filter(depth=max_depth).order_by("pk").first()
        self.hot_root = rows.filter(depth=0).order_by("-reply_count", "pk").first()
        pool = list(rows.filter(status="published", visibility="public", depth__lt=6).values_list("pk", flat=True))
        self.reply_targets = random.Random(7).sample(pool, min(2000, len(pool)))
        self.log(
            f"bench: dataset: {f['comments']:,} comments, {f['roots']:,} top-level, max depth {max_depth}, "
            f"largest thread {max(sizes):,}, {f['like_rows']:,} likes, {f['users']:,} users"
        )

    # requests -------------------------------------------------------------------------------

    def tokens(self):
        from comments.models import ApiToken
        from comments.services import token_issue

        ApiToken.objects.filter(user__in=[self.viewer, self.poster]).delete()
        self.viewer_token, _ = token_issue(user=self.viewer)
        self.poster_token, _ = token_issue(user=self.poster)

    def headers(self, viewer: str) -> dict:
        if viewer == "auth":
            return {"headers": {"Authorization": f"Bearer {self.viewer_token}"}}
        return {}

    def get(self, path: str, params: dict, viewer: str):
        return lambda: self.client.get(path, params, **self.headers(viewer))

    def walk(self, path: str, params: dict, page: int) -> tuple[str | None, int]:
        """The cursor of page ``page``, following next_cursor from page 1 (anonymously)."""
        cursor, reached = None, 1
        for _ in range(page - 1):
            query = dict(params, **({"cursor": cursor} if cursor else {}))
            response = self.client.get(path, query)
            assert response.status_code == 200, response.content[:300]
            nxt = response.json()["next_cursor"]
            if nxt is None:
                break
            cursor, reached = nxt, reached + 1
        return cursor, reached

    def measure_get(self, scenario: Scenario, path: str, params: dict, timed: bool = True):
        self.measure_group([(scenario, path, params)], timed)

    def measure_group(self, group: list[tuple[Scenario, str, dict]], timed: bool = True):
        """Measure scenarios together: their timed requests alternate, so a page 1 and its deep
        page see the same background load."""
        for viewer in ("anon", "auth"):
            calls = []
            for scenario, path, params in group:
                call = self.get(path, params, viewer)
                call()  # connection and caches warm before counting
                response, sql, sql_ms = capture(call, 200, repeat=11)
                scenario.results[viewer] = ViewerResult(
                    queries=len(sql),
                    sql=sql,
                    timing=None,
                    rows=describe_rows(response.json()),
                    sql_ms=sql_ms,
                    shown=comments_shown(response.json()),
                )
                scenario.chain_queries[viewer] = sum(1 for q in sql if CHAIN_ROWS_RE.search(q))
                calls.append(call)
            if timed:
                samples = run_interleaved(calls, self.args.iterations, self.args.warmup, 200)
                for (scenario, _, _), (wall, cpu_ms) in zip(group, samples, strict=True):
                    scenario.results[viewer].timing = Timing.of(wall)
                    scenario.results[viewer].cpu = Timing.of(cpu_ms)
        for scenario, _, _ in group:
            self.scenarios.append(scenario)
            a, u = scenario.results["anon"], scenario.results["auth"]
            shown = (
                f"anon {a.timing.p50:6.2f}/{a.timing.p99:6.2f} ms, auth {u.timing.p50:6.2f}/{u.timing.p99:6.2f} ms"
                if timed
                else "queries only"
            )
            self.log(f"  {scenario.title:<44} queries {a.queries}/{u.queries}  {shown}  ({a.rows})")

    def run_reads(self):
        sid = self.subject.pk
        lst = f"/api/v1/subjects/{sid}/comments"
        deep = self.args.deep_page
        lists = [
            ("two_level_hot", "two_level, sort=hot", {"mode": "two_level", "sort": "hot", "limit": 20, "replies": 3}),
            ("two_level_new", "two_level, sort=new", {"mode": "two_level", "sort": "new", "limit": 20, "replies": 3}),
            ("flat", "flat (sort=old)", {"mode": "flat", "limit": 20}),
            ("stacked", "stacked (sort=old)", {"mode": "stacked", "limit": 20}),
            ("stacked_new", "stacked, sort=new", {"mode": "stacked", "sort": "new", "limit": 20}),
        ]
        self.log("bench: reads (p50/p99 ms)")
        for key, title, params in lists:
            cursor, reached = self.walk(lst, params, deep)
            note = "" if reached == deep else f"the list ends at page {reached}"
            self.measure_group(
                [
                    (Scenario(f"{key}_p1", f"{title}, page 1", f"GET {lst}?{_qs(params)}", "list"), lst, params),
                    (
                        Scenario(
                            f"{key}_deep",
                            f"{title}, page {reached} (cursor)",
                            f"GET {lst}?{_qs(params)}&cursor=<page {reached}>",
                            "list",
                            note=note,
                        ),
                        lst,
                        dict(params, cursor=cursor),
                    ),
                ]
            )
            self.facts.setdefault("deep_pages", {})[key] = reached
        replies = f"/api/v1/comments/{self.hot_root.pk}/replies"
        self.measure_get(
            Scenario(
                "replies",
                "list 2: replies of the largest thread, page 1",
                f"GET {replies}?limit=20",
                "list",
                note=f"thread of {self.hot_root.reply_count:,} visible replies",
            ),
            replies,
            {"limit": 20},
        )
        chain = f"/api/v1/comments/{self.chain_tail.pk}/chain"
        self.measure_get(
            Scenario(
                "chain",
                f"chain of floor {self.chain_tail.depth + 1}",
                f"GET {chain}",
                "chain",
                note=f"depth {self.chain_tail.depth}",
            ),
            chain,
            {},
        )
        tree = f"/api/v1/comments/{self.hot_root.pk}/tree"
        self.measure_get(
            Scenario("tree", "subtree of the largest thread, page 1", f"GET {tree}?limit=20", "tree"),
            tree,
            {"limit": 20},
        )
        # Page size must not change the number of queries.
        big = [
            (
                "two_level_hot_100",
                "two_level hot, limit 100, 10 replies",
                {"mode": "two_level", "sort": "hot", "limit": 100, "replies": 10},
            ),
            ("flat_100", "flat, limit 100", {"mode": "flat", "limit": 100}),
            ("stacked_100", "stacked, limit 100, page 50", {"mode": "stacked", "limit": 100}),
        ]
        for key, title, params in big:
            if key == "stacked_100":
                cursor, _ = self.walk(lst, params, 50)
                params = dict(params, cursor=cursor)
            self.measure_get(Scenario(key, title, f"GET {lst}?{_qs(params)}", "list-size"), lst, params)

    def run_posts(self):
        import comments.services  # noqa: F401  (imported before timing)

        path = f"/api/v1/subjects/{self.subject.pk}/comments"
        headers = {"Authorization": f"Bearer {self.poster_token}"}
        rng = random.Random(11)
        counter = [0]

        def body():
            counter[0] += 1
            return f"Bench post {counter[0]}: " + " ".join(rng.choice(_POST_WORDS) for _ in range(rng.randint(8, 40)))

        def post_top():
            return self.client.post(
                path, json.dumps({"body": body()}), content_type="application/json", headers=headers
            )

        def post_reply():
            payload = {"body": body(), "reply_to_id": rng.choice(self.reply_targets)}
            return self.client.post(path, json.dumps(payload), content_type="application/json", headers=headers)

        self.snapshot_counters()
        self.log("bench: posting (p50/p99 ms)")
        for key, title, call, req in (
            ("post_top", "post a top-level comment", post_top, f"POST {path} {{body}}"),
            ("post_reply", "post a reply (random target, depth < 6)", post_reply, f"POST {path} {{body, reply_to_id}}"),
        ):
            call()
            _, sql, sql_ms = capture(call, 201, repeat=5)
            wall, cpu_ms = run_timed(call, self.args.iterations, self.args.warmup, 201)
            timing = Timing.of(wall)
            scenario = Scenario(key, title, req, "post")
            scenario.results["auth"] = ViewerResult(
                queries=len(sql), sql=sql, timing=timing, rows="1 comment", sql_ms=sql_ms, cpu=Timing.of(cpu_ms)
            )
            self.scenarios.append(scenario)
            self.log(f"  {title:<44} queries -/{len(sql)}  auth {timing.p50:6.2f}/{timing.p99:6.2f} ms")

    def snapshot_counters(self):
        """Every counter of the bench subject before posting, to put back afterwards."""
        from django.db import connection

        with connection.cursor() as cursor:
            cursor.execute(
                "SELECT id, descendant_count, reply_count, reply_floor_seq FROM comment_index WHERE subject_id = %s",
                [self.subject.pk],
            )
            rows = {r[0]: tuple(r[1:]) for r in cursor.fetchall()}
            cursor.execute(
                "SELECT comment_count, root_count, floor_seq FROM comment_subject WHERE id = %s", [self.subject.pk]
            )
            self._snapshot = (rows, cursor.fetchone())

    def cleanup_posts(self, authors=None):
        """Remove the posted comments (``bench-poster``'s, or those of ``authors``: bench.http
        posts as several users) and put every counter back as it was (the posts went through
        the service, which kept the counters right; deleting rows underneath it does not)."""
        from django.db import connection, transaction

        removed = sum(
            self.seed.purge_comments("subject_id = %s AND author_id = %s", [self.subject.pk, author.pk])
            for author in authors or [self.poster]
        )
        snapshot = getattr(self, "_snapshot", None)
        if snapshot is None:
            return
        before, subject_row = snapshot
        with transaction.atomic(), connection.cursor() as cursor:
            cursor.execute(
                "SELECT id, descendant_count, reply_count, reply_floor_seq FROM comment_index WHERE subject_id = %s",
                [self.subject.pk],
            )
            changed = [
                (*before[r[0]], r[0]) for r in cursor.fetchall() if before.get(r[0], tuple(r[1:])) != tuple(r[1:])
            ]
            cursor.executemany(
                "UPDATE comment_index SET descendant_count = %s, reply_count = %s, reply_floor_seq = %s WHERE id = %s",
                changed,
            )
            cursor.execute(
                "UPDATE comment_subject SET comment_count = %s, root_count = %s, floor_seq = %s WHERE id = %s",
                [*subject_row, self.subject.pk],
            )
        self.log(f"bench: removed {removed} posted comments and restored {len(changed)} comment counters")

    # plans ------------------------------------------------------------------------------------

    def explain(self):
        from django.db import connection

        if connection.vendor != "postgresql":
            self.log("bench: EXPLAIN skipped (not PostgreSQL)")
            return
        self.log("bench: EXPLAIN (ANALYZE, BUFFERS) of the comment statements")
        seen = set()
        for scenario in self.scenarios:
            if scenario.kind not in ("list", "chain", "tree"):
                continue
            for viewer, result in scenario.results.items():
                for n, sql in enumerate(result.sql, 1):
                    label = label_sql(sql)
                    if label is None:
                        continue
                    key = (scenario.key, viewer, n)
                    if key in seen:
                        continue
                    seen.add(key)
                    with connection.cursor() as cursor:
                        cursor.execute("EXPLAIN (ANALYZE, BUFFERS, FORMAT JSON) " + sql)
                        doc = cursor.fetchone()[0]
                    if isinstance(doc, str):
                        doc = json.loads(doc)
                    summary = summarize_plan(doc[0])
                    summary.update(scenario=scenario.title, viewer=viewer, n=n, label=label, sql=sql)
                    self.explains.append(summary)
                    flag = "index" if summary["index_only"] else "SEQ SCAN"
                    self.log(
                        f"  {scenario.title[:34]:<34} {viewer:<4} #{n} {label:<40} plan {summary['planning_ms']:5.2f} "
                        f"exec {summary['exec_ms']:5.2f} ms {flag:<8} {summary['plan']}"
                    )


def _qs(params: dict) -> str:
    return "&".join(f"{k}={v}" for k, v in params.items() if k != "cursor")


_POST_WORDS = (
    "the",
    "cache",
    "latency",
    "is",
    "fine",
    "but",
    "**really**",
    "depends",
    "on",
    "workload",
    "and",
    "index",
    "see",
    "https://example.com/bench",
    "`EXPLAIN`",
    "thanks",
    "agree",
    "disagree",
    "numbers",
    "page",
    "thread",
)


def _top_level(sql: str) -> str:
    """``sql`` with every parenthesized part (subqueries, IN lists) blanked out."""
    out, depth = [], 0
    for ch in sql:
        if ch == "(":
            depth += 1
        if depth == 0:
            out.append(ch)
        if ch == ")" and depth:
            depth -= 1
    return "".join(out)


def label_sql(sql: str) -> str | None:
    """A short name for a statement worth explaining; ``None`` for subject/token lookups."""
    if "ROW_NUMBER() OVER" in sql:
        return "reply previews (window)"
    if " UNION ALL " in sql:
        return "reply previews (union of per-root LIMIT)"
    if " LATERAL " in sql:
        return "reply previews (LATERAL per-root LIMIT)"
    top = _top_level(sql)
    found = re.search(r' FROM "(\w+)"', top)
    table = found.group(1) if found else ""
    if table == "comment_content":
        return "contents by id" + (" + viewer's likes" if '"likes_like"' in sql else "")
    if table == "likes_like":
        return "viewer's likes"
    if table != "comment_index":
        return None
    # Both spellings: the ORM's ("comment_index"."id") and comments/rowsql.py's (c.id).
    where = sql.split(" WHERE ", 1)[1] if " WHERE " in sql else ""
    where = re.sub(r'"comment_index"\.|\bc\.', "", where).replace('"', "")
    if re.search(r"\bid = \d+", where) and top.rstrip().endswith("LIMIT 1"):
        return "comment by id"
    if "path >=" in where:
        return "subtree (path range)"
    order = re.search(r"ORDER BY (.*?)(?: LIMIT (\d+))?$", sql, re.S)
    if order is None:
        return "rows by id (chain/ancestors)" if re.search(r"\bid (IN \(|= ANY\()", where) else "comment_index"
    cols = re.sub(r'"comment_index"\.|\bc\.', "", order.group(1)).replace('"', "")
    limit = f" limit {order.group(2)}" if order.group(2) else ""
    scope = "roots" if "depth = 0" in where else ("thread" if re.search(r"\broot_id = \d", where) else "subject")
    after = " after cursor" if re.search(r"\bid [<>] \d+", where) else ""
    return f"{scope} by {cols}{limit}{after}"


COMMENT_TABLES = ("comment_index", "comment_content", "likes_like")


def summarize_plan(doc: dict) -> dict:
    """Every scan of the plan, grouped: ``index (table) xloops: rows, filtered``."""
    scans = []
    grouped: dict[str, list[float]] = {}

    def walk(node):
        kind = node["Node Type"]
        if "Scan" in kind and node.get("Relation Name"):
            loops = node.get("Actual Loops", 1)
            rows = node.get("Actual Rows", 0) * loops
            removed = (node.get("Rows Removed by Filter", 0) + node.get("Rows Removed by Index Recheck", 0)) * loops
            how = f"{kind.replace(' Scan', '').replace('Index', 'idx').replace('Only', 'only')}"
            name = f"{node['Relation Name']}." + (node.get("Index Name") or kind.replace(" ", "")) + f" [{how}]"
            if node["Relation Name"] in COMMENT_TABLES:
                scans.append(
                    {
                        "kind": kind,
                        "index": node.get("Index Name"),
                        "table": node["Relation Name"],
                        "rows": rows,
                        "removed": removed,
                    }
                )
            acc = grouped.setdefault(name, [0, 0, 0])
            acc[0] += 1
            acc[1] += rows
            acc[2] += removed
        for child in node.get("Plans", []):
            walk(child)

    walk(doc["Plan"])
    plan = doc["Plan"]
    parts = []
    for name, (n, rows, removed) in grouped.items():
        if not name.startswith(COMMENT_TABLES) and "SeqScan" not in name:
            continue  # user/site/follow lookups by primary key: noise
        parts.append(
            f"{name}{f' x{n}' if n > 1 else ''}: {rows:g} rows" + (f", {removed:g} filtered out" if removed else "")
        )
    return {
        "plan": "; ".join(parts),
        "exec_ms": doc.get("Execution Time", 0.0),
        "planning_ms": doc.get("Planning Time", 0.0),
        "hit": plan.get("Shared Hit Blocks", 0),
        "read": plan.get("Shared Read Blocks", 0),
        "scans": scans,
        "index_only": bool(scans) and all(s["kind"] != "Seq Scan" for s in scans),
    }


# --- the report ------------------------------------------------------------------------------


@dataclass
class Verdict:
    target: str
    measured: str
    ok: bool
    counted: bool = True  # False: measured and shown against the target, but not one of the issue's


def verdicts(bench: Bench) -> list[Verdict]:
    by_key = {s.key: s for s in bench.scenarios}
    out = []
    reads = [s for s in bench.scenarios if s.kind in ("list", "list-size", "chain", "tree")]
    worst = max(reads, key=lambda s: max(r.queries for r in s.results.values()))
    worst_q = max(r.queries for r in worst.results.values())
    over = [s.title for s in reads if max(r.queries for r in s.results.values()) > MAX_QUERIES]
    out.append(
        Verdict(
            f"at most {MAX_QUERIES} SQL queries per page, whatever its size (every read, anon and auth, limit 20 and 100)",
            f"max {worst_q} ({worst.title})" + (f"; over: {', '.join(over)}" if over else ""),
            worst_q <= MAX_QUERIES,
        )
    )
    for key in ("two_level_hot", "two_level_new", "flat", "stacked", "stacked_new"):
        first, deep = by_key.get(f"{key}_p1"), by_key.get(f"{key}_deep")
        if not first or not deep:
            continue
        ratios = {v: deep.results[v].timing.p50 / first.results[v].timing.p50 for v in ("anon", "auth")}
        ok = all(r <= DEEP_PAGE_TOLERANCE for r in ratios.values())
        # The issue sets the deep-page target for list 1 (two-level); the other lists' deep
        # pages are measured and shown the same way. A stacked page's size is its items plus
        # their chains, which lengthen as a discussion ages (page 1 of sort=old is the smallest
        # page of the whole list), so its deep page is also given per comment shown.
        counted = key.startswith("two_level")
        per_comment = ""
        if key.startswith("stacked"):
            n1, n2 = first.results["anon"].shown, deep.results["anon"].shown
            per_comment = "; per comment shown: " + ", ".join(
                f"{v} x{(deep.results[v].timing.p50 / n2) / (first.results[v].timing.p50 / n1):.2f}"
                for v in ("anon", "auth")
            )
        statement = ""
        e1, e2 = list_statement(bench, first), list_statement(bench, deep)
        if e1 and e2:
            statement = (
                f"; the list statement itself (EXPLAIN ANALYZE, anon): {e2['exec_ms']:.2f} vs {e1['exec_ms']:.2f} ms, "
                f"{e2['hit']} vs {e1['hit']} buffers"
            )
        out.append(
            Verdict(
                f"deep page within 20% of page 1: {deep.title} vs page 1 (p50)"
                + ("" if counted else " (shown; the target is list 1's)"),
                ", ".join(
                    f"{v} {deep.results[v].timing.p50:.2f} vs {first.results[v].timing.p50:.2f} ms (x{r:.2f})"
                    for v, r in ratios.items()
                )
                + f"; page contents: {deep.results['anon'].rows} vs {first.results['anon'].rows}"
                + per_comment
                + statement,
                ok,
                counted,
            )
        )
    chain = by_key.get("chain")
    if chain:
        n = max(chain.chain_queries.values())
        out.append(
            Verdict(
                "reply chain of 100 floors in one query",
                f"{n} query fetches the chain rows ({chain.results['anon'].queries}/{chain.results['auth'].queries} "
                f"queries per request anon/auth)",
                n == 1,
            )
        )
    lists = [s for s in bench.scenarios if s.kind == "list"]
    if lists:
        worst = max(lists, key=lambda s: max(r.timing.p99 for r in s.results.values()))
        worst_p99 = max(r.timing.p99 for r in worst.results.values())
        over = [s.title for s in lists if max(r.timing.p99 for r in s.results.values()) >= LIST_P99_MS]
        out.append(
            Verdict(
                f"list p99 < {LIST_P99_MS:g} ms (every list page above, limit 20, anon and auth)",
                f"worst {worst_p99:.2f} ms ({worst.title})" + (f"; over: {', '.join(over)}" if over else ""),
                worst_p99 < LIST_P99_MS,
            )
        )
        first = by_key["two_level_hot_p1"]
        p99 = max(r.timing.p99 for r in first.results.values())
        out.append(
            Verdict(
                f"list 1 page 1 (20 top-level + 3 replies each) p99 < {LIST_P99_MS:g} ms",
                f"{p99:.2f} ms",
                p99 < LIST_P99_MS,
            )
        )
    posts = [s for s in bench.scenarios if s.kind == "post"]
    if posts:
        worst = max(posts, key=lambda s: s.results["auth"].timing.p99)
        p99 = worst.results["auth"].timing.p99
        out.append(
            Verdict(
                f"post p99 < {POST_P99_MS:g} ms (top-level and reply)",
                ", ".join(f"{s.title.split(' (')[0]}: {s.results['auth'].timing.p99:.2f} ms" for s in posts),
                p99 < POST_P99_MS,
            )
        )
    return out


def calibrate() -> float:
    """Milliseconds of CPU for a fixed pure-Python loop (best of 3): how fast this machine runs
    Python right now, to compare runs made on different days or machines."""
    best = float("inf")
    for _ in range(3):
        started = time.process_time()
        total = 0
        for i in range(1_000_000):
            total += i * i
        best = min(best, time.process_time() - started)
    return best * 1000


def cpu_sample() -> tuple[float, float, float] | None:
    """(all CPUs' time, their idle time, this process's CPU time), in seconds."""
    try:
        values = [int(v) for v in Path("/proc/stat").read_text().split("\n", 1)[0].split()[1:9]]
    except (OSError, ValueError):
        return None
    tick = os.sysconf("SC_CLK_TCK")
    own = os.times()
    return sum(values) / tick, (values[3] + values[4]) / tick, own.user + own.system


def cpu_share(
    before,
    after,
    *,
    own: float | None = None,
    own_label: str = "this benchmark process",
    others_label: str = "the PostgreSQL backend serving it, other users of the machine",
) -> str:
    """How busy the CPUs were between two ``cpu_sample``s, and this process's part (or ``own``
    CPU seconds spent elsewhere, e.g. by a child process, named by ``own_label``)."""
    if not before or not after:
        return "unknown"
    total, idle, mine = (a - b for a, b in zip(after, before, strict=True))
    own = mine if own is None else own
    busy = total - idle
    return (
        f"{busy / total:.0%} of all CPUs busy: {own_label} {own / total:.0%}, everything else "
        f"({others_label}) {max(0.0, busy - own) / total:.0%}"
    )


def list_statement(bench: Bench, scenario: Scenario) -> dict | None:
    """The EXPLAIN summary of the statement that pages through the list (anonymous viewer)."""
    for e in bench.explains:
        if (
            e["scenario"] == scenario.title
            and e["viewer"] == "anon"
            and e["label"].startswith(("roots", "subject", "thread"))
        ):
            return e
    return None


def code_version() -> str:
    """The commit measured, and any uncommitted change to the application."""
    import subprocess

    try:
        head = subprocess.run(
            ["git", "-C", str(BASE_DIR), "log", "-1", "--format=%h %s"], capture_output=True, text=True, check=True
        ).stdout.strip()
        status = subprocess.run(
            ["git", "-C", str(BASE_DIR), "status", "--porcelain", "--", "comments", "likes", "moderation", "config"],
            capture_output=True,
            text=True,
            check=True,
        ).stdout.split("\n")
    except (OSError, subprocess.CalledProcessError):
        return "unknown (not a git checkout)"
    dirty = [line[3:] for line in status if line.strip()]
    return f"`{head}`" + (f", with uncommitted changes to {', '.join(dirty)}" if dirty else "")


def machine() -> dict:
    info = {"nproc": os.cpu_count(), "python": platform.python_version()}
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                info["cpu"] = line.split(":", 1)[1].strip()
                break
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith("MemTotal"):
                info["memory"] = f"{int(line.split()[1]) / 1024 / 1024:.1f} GiB"
    except OSError:
        pass
    info["load"] = " ".join(f"{x:.2f}" for x in os.getloadavg())
    info["code"] = code_version()
    import django

    info["django"] = django.get_version()
    from django.db import connection

    with connection.cursor() as cursor:
        if connection.vendor == "postgresql":
            cursor.execute("SHOW server_version")
            info["database"] = f"PostgreSQL {cursor.fetchone()[0]}"
            settings = []
            for name in ("shared_buffers", "work_mem", "effective_cache_size", "synchronous_commit", "jit"):
                cursor.execute(f"SHOW {name}")
                settings.append(f"{name}={cursor.fetchone()[0]}")
            info["db_settings"] = ", ".join(settings)
        else:
            info["database"] = f"SQLite {connection.Database.sqlite_version}"  # type: ignore[attr-defined]  # the DB-API module
    return info


def command_line() -> str:
    env = []
    for name in ("DJANGO_SECRET_KEY", "DATABASE_URL", "REDIS_URL", "CELERY_BROKER_URL"):
        value = os.environ.get(name)
        if value:
            if name == "DATABASE_URL":
                value = re.sub(r"//([^:@/]+):[^@/]+@", r"//\1:***@", value)  # hide a password
            env.append(f"{name}={value}")
    args = " ".join(sys.argv[1:])
    return " ".join(env + [".venv/bin/python -m bench.core"] + ([args] if args else []))


def _fmt(t: Timing | None) -> tuple[str, str, str]:
    if t is None:
        return "–", "–", "–"
    return f"{t.p50:.2f}", f"{t.p99:.2f}", f"{t.mean:.2f}"


def results_table(bench: Bench) -> list[str]:
    lines = [
        "| scenario | queries anon / auth | anon p50 | anon p99 | anon mean | auth p50 | auth p99 | auth mean "
        "| app CPU p50 anon / auth | SQL anon / auth | page |",
        "|---|---|---:|---:|---:|---:|---:|---:|---|---|---|",
    ]
    for s in bench.scenarios:
        a, u = s.results.get("anon"), s.results.get("auth")
        qa = str(a.queries) if a else "–"
        qu = str(u.queries) if u else "–"
        q = f"{qa} / {qu}"
        if s.kind == "chain":
            q += f" (chain rows: {max(s.chain_queries.values())} query)"
        rows = (a or u).rows + (f"; {s.note}" if s.note else "")
        sql_ms = " / ".join(f"{r.sql_ms:.2f}" if r and r.sql_ms is not None else "–" for r in (a, u))
        cpu = " / ".join(f"{r.cpu.p50:.2f}" if r and r.cpu is not None else "–" for r in (a, u))
        lines.append(
            f"| {s.title} | {q} | "
            + " | ".join(_fmt(a.timing if a else None))
            + " | "
            + " | ".join(_fmt(u.timing if u else None))
            + f" | {cpu} | {sql_ms} | {rows} |"
        )
    return lines


def depth_buckets(depths: dict[int, int]) -> list[tuple[str, int]]:
    buckets = [
        ("0 (top level)", 0, 0),
        ("1", 1, 1),
        ("2", 2, 2),
        ("3", 3, 3),
        ("4-5", 4, 5),
        ("6-10", 6, 10),
        ("11-20", 11, 20),
        ("21-50", 21, 50),
        ("51-128", 51, 128),
    ]
    return [(name, sum(n for d, n in depths.items() if lo <= d <= hi)) for name, lo, hi in buckets]


def thread_buckets(sizes: list[int]) -> list[tuple[str, int]]:
    buckets = [("0", 0, 0), ("1-10", 1, 10), ("11-100", 11, 100), ("101-1,000", 101, 1000), ("> 1,000", 1001, 10**9)]
    return [(name, sum(1 for s in sizes if lo <= s <= hi)) for name, lo, hi in buckets]


def render_report(
    bench: Bench, info: dict, verdict_list: list[Verdict], started: datetime, took: float, previous: str
) -> str:
    f = bench.facts
    out = ["# Benchmarks", ""]
    out += [
        f"Generated by `bench/core.py` on {started.strftime('%Y-%m-%d %H:%M UTC')} (run time {took / 60:.1f} min). "
        "Re-run the command below to refresh every figure; only the *Analysis* section is hand-written "
        "(the script keeps it).",
        "",
        "## Command",
        "",
        "```sh",
        command_line(),
        "```",
        "",
        "The database named by `DATABASE_URL` is created if missing and migrated; the dataset is seeded once "
        "and reused by later runs (`--reseed` rebuilds it). Options: `--iterations` (300), `--warmup` (20), "
        "`--comments`, `--users`, `--likes`, `--background-comments`, `--background-subjects`, `--deep-page` (500), "
        "`--skip-post`, `--output` "
        "(this file; `-` for none), `--allow-sqlite` (smoke runs only).",
        "",
        "## Machine",
        "",
        f"- {info.get('nproc')} CPUs ({info.get('cpu', 'unknown CPU')}), {info.get('memory', '?')} memory; "
        f"load average at the start {f.get('load_start', '?')}, at the end {info.get('load')}",
        f"- {info.get('database')}"
        + (f" ({info['db_settings']})" if info.get("db_settings") else "")
        + (" on the same machine, reached over TCP" if info.get("db_settings") else ""),
        f"- Python speed check (a fixed 1,000,000-iteration loop, best of 3; lower is faster): "
        f"{f.get('calibration_start', 0):.0f} ms before the measurements, {f.get('calibration_end', 0):.0f} ms after",
        f"- code measured: {info.get('code')}",
        f"- Python {info.get('python')}, Django {info.get('django')}; Redis configured: "
        f"{'yes' if os.environ.get('REDIS_URL') else 'no'}; Celery eager: "
        f"{'yes' if not os.environ.get('CELERY_BROKER_URL') else 'no'}",
        f"- CPU during the measurements: {f.get('cpu', 'unknown')}. Other work may share this machine (the "
        "project's test suite runs against the same PostgreSQL server); on a 2-CPU machine a concurrent "
        "CPU-bound process inflates latencies, the p99s most.",
        "",
        "## Dataset",
        "",
        f"One subject (`{bench.shape.signature}`), {f['seeded']}; {f['reconcile']}.",
        "",
        f"- comments: {f['comments']:,} ({f['roots']:,} top-level, {f['comments'] - f['roots']:,} replies); "
        f"publicly visible {f['visible'][0]:,} ({f['visible'][1]:,} top-level)",
        "- statuses: "
        + ", ".join(f"{k} {v:,}" for k, v in sorted(f["status"].items(), key=lambda kv: -kv[1]))
        + f"; friends-only {f['friends_only']:,}; deleted/rejected kept as placeholders (visible replies below) "
        f"{f['placeholders']:,}; pinned {f['pinned']}",
        f"- users: {f['users']:,} (plus `bench-poster`); follows: {f['follows']:,}; likes: {f['like_rows']:,} rows "
        f"(= sum of `like_count` {f['like_sum']:,}; most liked comment {f['like_max']:,})",
        f"- the authenticated reader (`bench{bench.seed.VIEWER_INDEX:04d}`) wrote {f['viewer_comments']:,} of the "
        "comments (some pending/shadow/friends-only, which only they see) and has mutual follows",
    ]
    out.append(
        f"- the same tables also hold other subjects' comments, interleaved in time and id order with the bench "
        f"subject's ({bench.shape.background_comments:,} over {bench.shape.background_subjects:,} subjects of "
        f"the bench site): in all {f['all_comments']:,} comments, {f['all_subjects']:,} subjects and "
        f"{f['all_likes']:,} likes, so the planner has to pick the per-subject indexes"
    )
    if f.get("sizes"):
        out.append(
            f"- table sizes with indexes: comment_index {f['sizes'][0]}, comment_content {f['sizes'][1]}, "
            f"likes_like {f['sizes'][2]}"
        )
    sizes = sorted(f["thread_sizes"], reverse=True)
    out += [
        f"- largest threads (replies): {', '.join(f'{s:,}' for s in sizes[:8])}; median thread "
        f"{statistics.median(sizes):g} replies",
        f"- the chain: floor {bench.chain_tail.depth + 1} at depth {bench.chain_tail.depth}, each reply answering the previous one",
        "",
        "| depth | comments |",
        "|---|---:|",
    ]
    out += [f"| {name} | {n:,} |" for name, n in depth_buckets(f["depths"]) if n]
    out += ["", "| replies in a thread | threads |", "|---|---:|"]
    out += [f"| {name} | {n:,} |" for name, n in thread_buckets(f["thread_sizes"])]
    out += [
        "",
        "## Results",
        "",
        f"Server-side milliseconds per request over {bench.args.iterations} timed requests after "
        f"{bench.args.warmup} warm-up ones, measured in-process around Django's test `Client` (routing, "
        "middleware, authentication, DRF, queries, JSON rendering; no network or HTTP server). Queries are "
        "counted with `CaptureQueriesContext` on one request. *anon* is an anonymous reader, *auth* the reader "
        "above with a bearer token (its lookup is one more query). Posting is authenticated only. Deep pages are reached by following `next_cursor` from page 1. *app CPU* is the CPU time the "
        "benchmark process (Django, DRF, the app, the driver) spent per request, p50 — unlike wall-clock time it "
        "does not grow when other processes compete for the CPUs; *SQL* is the median time per request spent "
        "inside `cursor.execute()` (round trips and PostgreSQL's work) over 11 requests. Roughly, an idle machine "
        "would show p50 ≈ app CPU + SQL.",
        "",
    ]
    out += results_table(bench)
    out += ["", "## Targets", "", "| target | measured | result |", "|---|---|---|"]
    out += [
        f"| {v.target} | {v.measured} | "
        f"{('PASS' if v.ok else '**FAIL**') if v.counted else ('(within)' if v.ok else '(over)')} |"
        for v in verdict_list
    ]
    out += [
        "",
        "\"Within 20%\" is read as: the deep page's p50 is at most 1.2 x page 1's p50 (a deep page that is faster "
        "passes). The issue sets that target for list 1 (page 1 and page 500 of the two-level list); the flat and "
        "stacked lists' deep pages are measured and compared the same way and shown in brackets. A stacked page "
        "shows its items and their chains, and chains lengthen as a discussion ages: page 1 of sort=old, the "
        "discussion's opening, is the smallest page of the whole list, so its page 500 is also compared per comment "
        "shown.",
        "",
    ]
    if bench.explains:
        out += [
            "## Query plans",
            "",
            "`EXPLAIN (ANALYZE, BUFFERS)` of each comment statement captured above (the subject and token "
            "lookups by primary key are left out). *scans* lists the scans of the comment tables (and any "
            "sequential scan) as `table.index [scan kind] xloops: rows produced, rows filtered out`; "
            "lookups of users by primary key are left out.",
            "",
            "| scenario | viewer | statement | planning ms | execution ms | buffers hit/read | indexes only | scans |",
            "|---|---|---|---:|---:|---:|---|---|",
        ]
        for e in bench.explains:
            out.append(
                f"| {e['scenario']} | {e['viewer']} | {e['label']} | {e['planning_ms']:.2f} | {e['exec_ms']:.2f} | "
                f"{e['hit']}/{e['read']} | {'yes' if e['index_only'] else '**no**'} | {e['plan']} |"
            )
        out.append("")
    out += ["## Analysis", "", previous or (ANALYSIS_START + "\n_No analysis written yet._\n" + ANALYSIS_END), ""]
    return "\n".join(out)


def write_marked_block(path: Path, start: str, end: str, block: str) -> None:
    """Put ``block`` (which starts with ``start`` and ends with ``end``) in place of the text
    between those markers in ``path``, or at its end when it has none (the benchmarks that own
    a section of ``docs/benchmarks.md``)."""
    text = path.read_text() if path.exists() else ""
    pattern = re.compile(re.escape(start) + ".*?" + re.escape(end), re.S)
    text = pattern.sub(lambda _: block, text) if pattern.search(text) else text.rstrip("\n") + "\n\n" + block + "\n"
    path.write_text(text)


KEPT_BLOCK_RE = re.compile(r"<!-- (\w+):start -->.*?<!-- \1:end -->", re.S)


def kept_sections(path: Path) -> str:
    """Sections that other benchmarks write into the same file between their own
    ``<!-- name:start -->`` / ``<!-- name:end -->`` markers (e.g. ``bench.likes``), kept as they
    are at the end of the report; the analysis block is placed by ``render_report``."""
    try:
        text = path.read_text()
    except OSError:
        return ""
    blocks = [m.group(0) for m in KEPT_BLOCK_RE.finditer(text) if m.group(1) != "analysis"]
    return "\n\n".join(blocks) + "\n" if blocks else ""


def previous_analysis(path: Path) -> str:
    try:
        text = path.read_text()
    except OSError:
        return ""
    start, end = text.find(ANALYSIS_START), text.find(ANALYSIS_END)
    if start < 0 or end < start:
        return ""
    return text[start : end + len(ANALYSIS_END)]


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    configure(args)
    started_at = datetime.now(UTC)
    started = time.perf_counter()
    bench = Bench(args)
    bench.facts["load_start"] = " ".join(f"{x:.2f}" for x in os.getloadavg())
    bench.facts["calibration_start"] = calibrate()
    bench.prepare()
    bench.tokens()
    before = cpu_sample()
    bench.run_reads()
    if not args.skip_post:
        try:
            bench.run_posts()
        finally:
            bench.cleanup_posts()
    bench.facts["cpu"] = cpu_share(before, cpu_sample())
    bench.facts["calibration_end"] = calibrate()
    bench.log(f"bench: CPU during the measurements: {bench.facts['cpu']}")
    bench.explain()
    info = machine()
    verdict_list = verdicts(bench)
    took = time.perf_counter() - started

    print()
    print("\n".join(results_table(bench)))
    print()
    for v in verdict_list:
        print(f"{('PASS' if v.ok else 'FAIL') if v.counted else 'INFO'}  {v.target}: {v.measured}")
    if args.output != "-":
        path = Path(args.output)
        if not path.is_absolute():
            path = Path.cwd() / path
        report = render_report(bench, info, verdict_list, started_at, took, previous_analysis(path)) + kept_sections(
            path
        )
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(report)
        print(f"\nbench: wrote {path}")
    return 0 if all(v.ok for v in verdict_list if v.counted) else 1


if __name__ == "__main__":
    sys.exit(main())

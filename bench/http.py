"""HTTP load benchmark: the comment service as deployed (gunicorn with ``config/gunicorn.py``,
a Celery worker with beat, PostgreSQL, Redis, RabbitMQ), loaded by ``wrk`` over loopback.

    DJANGO_SECRET_KEY=bench DATABASE_URL=postgres://postgres@127.0.0.1:5432/bench \\
    REDIS_URL=redis://127.0.0.1:6379/14 LIKES_REDIS_URL=redis://127.0.0.1:6379/9 \\
    .venv/bin/python -m bench.http

The dataset is ``bench.core``'s (the 100,000-comment subject and the site's background
subjects; seeded by the first run, reused by later ones; ``--reseed`` rebuilds it). The server
runs ``bench.http_settings``: the application's settings plus empty views, the *floors* every
scenario is compared with (a plain Django view, an anonymous DRF view, the authenticated DRF
view of ``bench.likes``), and a middleware that reports each request's SQL statements and
cache hits in response headers, which the wrk script sums. Floors run right before and after
each scenario, so a ratio to the mean of the two survives a machine whose speed drifts.

Read scenarios run twice: *cold* (the cache's Redis database emptied with FLUSHDB and the
server restarted, so process-local caches are empty too; the likes' Redis database is never
flushed: it holds unflushed likes) and *warm* (right after, same server). Like events are
flushed, and posts get moderation's second check, by the Celery worker during the runs; the
benchmark waits for both to catch up before the next measurement. The posts are removed and
the counters restored afterwards, and the likes put back as seeded.

The report goes into ``docs/benchmarks.md`` between ``<!-- http:start -->`` and
``<!-- http:end -->`` (the rest of the file is left as it is); hand-written notes between
``<!-- http-notes:start -->`` and ``<!-- http-notes:end -->`` survive re-runs. The figures are
reported, not asserted: the exit status is 0 whatever the targets say.
"""

from __future__ import annotations

import argparse
import http.client
import json
import os
import random
import shlex
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from pathlib import Path
from string import Template
from urllib.parse import urlencode, urlsplit

from bench import core
from bench.core import BASE_DIR, DEFAULT_OUTPUT, percentile
from bench.likes import EMPTY_PATH as AUTH_EMPTY_PATH
from bench.likes import drain, drop_states, issue_tokens
from bench.serving import LOAD_ENV_TEXT, Server, free_port, run_wrk_script, server_env

START, END = "<!-- http:start -->", "<!-- http:end -->"
NOTES_START, NOTES_END = "<!-- http-notes:start -->", "<!-- http-notes:end -->"

SETTINGS_MODULE = "bench.http_settings"
# bench/http_urls.py (not imported here: it loads the application's URLconf).
DJANGO_EMPTY_PATH = "/bench/empty"
DRF_EMPTY_PATH = "/api/v1/bench/empty-anonymous"
DEFAULT_BROKER = "amqp://guest:guest@127.0.0.1:5672//"

# Targets: the least ratio of a scenario's requests/s to its floor's.
PAGE_RATIO = 0.6
DEEP_RATIO = 0.5
HOT_MIX_RATIO = 0.8
WIDGET_RATIO = 0.3
WRITE_RATIO = 0.5
WALK_SECONDS = 10.0
LIKE_LOADS = ("like_hot", "like_uniform")
WALK_KEYS = ("whole_walk", "reader_walk")  # the walks --only can name
READER_WALK_PAGES = 200
READER_PAUSE = 0.03
RSS_RATIO = 1.5

DEEP_PAGE = 996
FLOOR_LABELS = {"django": "Django", "drf": "DRF", "like": "auth DRF", "post": "auth DRF"}  # the report's floor column
HOT_SHARE = 0.9  # hot-key mix: share of requests on the subject's page 1
OTHER_SUBJECTS = 300  # hot-key mix: background subjects whose first pages take the rest
ZIPF_EXPONENT = 1.0  # likes on hot comments: rank k (by like count) chosen with weight 1/k
POSTERS = 16
LIKERS_PER_RUN = 200
LIKE_RUNS = 4  # hot and uniform, and hot again on each server of the worker-class comparison
USER_PREFIX = "httpb-"

ENV_NAMES = ("DJANGO_SECRET_KEY", "DATABASE_URL", "REDIS_URL", "LIKES_REDIS_URL", "CELERY_BROKER_URL")
# As given on the command line, before this module fills in the broker.
ENV_AT_START = {name: os.environ.get(name) for name in ENV_NAMES}


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        prog="python -m bench.http",
        description="Load the comment service over HTTP with wrk and compare each scenario with empty views.",
    )
    parser.add_argument("--seconds", type=float, help="seconds of each wrk run (8; 2 with --quick)")
    parser.add_argument(
        "--quick",
        action="store_true",
        help="smoke run: 2 s runs, fewer scenarios, no worker-class comparison (the report is written all the same)",
    )
    parser.add_argument("--workers", type=int, default=2, help="gunicorn workers (2)")
    parser.add_argument(
        "--threads", type=int, help="threads per gthread worker (config/gunicorn.py's: 4 unless GUNICORN_THREADS)"
    )
    parser.add_argument("--connections", type=int, default=16, help="wrk connections (16)")
    parser.add_argument("--wrk-threads", type=int, default=2, help="wrk threads (2)")
    parser.add_argument("--no-sync", action="store_true", help="skip the comparison with plain sync workers")
    parser.add_argument(
        "--like-flush",
        choices=("during", "after"),
        default="during",
        help="when the like events reach the database: 'during' the runs, by the Celery worker (as in production; "
        "the default), or 'after' each run, by this process (the worker leaves the likes queue alone): a "
        "diagnostic that shows what the flush costs the like runs on this machine",
    )
    parser.add_argument("--reseed", action="store_true", help="rebuild bench.core's dataset")
    parser.add_argument(
        "--only",
        help="comma-separated scenario keys (e.g. post,like_hot,hot_mix; the walks whole_walk, reader_walk) measured "
        "alone, with their floors; "
        "for working on one scenario: no deep pages, walks or comparison, and no report unless --output is given",
    )
    parser.add_argument(
        "--server-env",
        action="append",
        default=[],
        metavar="NAME=VALUE",
        help="an environment variable of the served gunicorn and its Celery worker only, not of this process "
        "(repeatable): measures a fast path switched off, e.g. COMMENTS_PAGE_CACHE_TTL=0, "
        "COMMENTS_HOT_PAGE_SECONDS=0, COMMENTS_PAGE_PRELOAD=off, or LIKES_REDIS_URL= (empty: likes on the database "
        "road); DJANGO_SETTINGS_MODULE=<module> replaces bench.http_settings (docs/fast-paths.md)",
    )
    parser.add_argument(
        "--output",
        default=str(DEFAULT_OUTPUT),
        help="Markdown report whose http section is written ('-' for none; default docs/benchmarks.md)",
    )
    args = parser.parse_args(argv)
    for pair in args.server_env:
        if "=" not in pair:
            parser.error(f"--server-env {pair!r}: NAME=VALUE expected")
    # Work on one scenario, the diagnostic, and a server with other settings write no report
    # unless asked to.
    asked = "--output" in (argv if argv is not None else sys.argv)
    if (args.only or args.like_flush == "after" or args.server_env) and not asked:
        args.output = "-"
    if args.seconds is None:
        args.seconds = 2.0 if args.quick else 8.0
    if args.threads is None:
        from config import gunicorn

        args.threads = gunicorn.threads
    return args


def log(message: str) -> None:
    print(message, flush=True)


def configure() -> None:
    """bench.core's configuration (PostgreSQL, created and migrated if missing), with the
    broker a real worker listens on; refused without wrk, or when the cache and the likes
    share a Redis database (the cold runs empty the cache's)."""
    os.environ.setdefault("CELERY_BROKER_URL", DEFAULT_BROKER)
    core.configure(argparse.Namespace(allow_sqlite=False))
    from django.conf import settings

    if not shutil.which("wrk"):
        sys.exit("bench.http: wrk is not installed (apt-get install wrk)")
    if not settings.REDIS_URL or not settings.LIKES_REDIS_URL:
        sys.exit("bench.http: set REDIS_URL (the cache) and LIKES_REDIS_URL (the likes), two Redis databases")
    if _redis_database(settings.REDIS_URL) == _redis_database(settings.LIKES_REDIS_URL):
        sys.exit(
            "bench.http: REDIS_URL and LIKES_REDIS_URL name the same Redis database; the cold runs empty the "
            "cache's with FLUSHDB, which would lose unflushed likes. Give the likes their own (e.g. .../9)."
        )


def apply_server_env(pairs: list[str]) -> None:
    """``--server-env``: set in this process's environment once its own settings are loaded, so
    that only the processes it starts (``bench.serving.server_env`` copies the environment) see
    them; ``DJANGO_SETTINGS_MODULE`` names their settings module instead."""
    global SETTINGS_MODULE
    for pair in pairs:
        name, _, value = pair.partition("=")
        if name == "DJANGO_SETTINGS_MODULE":
            SETTINGS_MODULE = value
        else:
            os.environ[name] = value
    if pairs:
        log(f"bench: the server and the worker run with {' '.join(pairs)}")


def _redis_database(url: str) -> tuple:
    parts = urlsplit(url)
    return parts.hostname, parts.port or 6379, (parts.path.strip("/") or "0")


class ScenarioAborted(Exception):
    """A scenario's request did not answer as expected before loading it: it is not run."""


# --- workloads and their results ------------------------------------------------------------------


@dataclass
class Load:
    """One workload for wrk: its requests, what answers them correctly, and its floor."""

    key: str
    title: str
    request: str  # as shown in the report
    method: str  # "GET"; "POST": a comment with a unique body; "LIKE": PUT and DELETE alternating per user and comment
    paths: list[str]
    pick: str = "one"  # "one": paths[0]; "hot": paths[0] HOT_SHARE of the time, else another; "zipf"; "uniform"
    tokens: list[str] = field(default_factory=list)
    expect: int = 200
    floor: str = ""  # key of the floor it is compared with
    target: float | None = None  # least ratio to the floor
    settle: str = ""  # background work to wait for after it: "likes" (the flush), "moderation" (second checks)


@dataclass
class Run:
    """One wrk run: its counts and wrk's latency percentiles (ms)."""

    key: str
    phase: str
    requests: int
    seconds: float
    p50: float
    p99: float
    non2xx: int
    socket_errors: int
    queries: float | None  # SQL statements per request, from the X-Bench-Queries header
    hits: int
    misses: int
    first_bad: str = ""

    @classmethod
    def of(cls, key: str, phase: str, data: dict) -> Run:
        return cls(
            key=key,
            phase=phase,
            requests=data["requests"],
            seconds=data["duration_us"] / 1e6,
            p50=data["p50_us"] / 1000,
            p99=data["p99_us"] / 1000,
            non2xx=data["non2xx"],
            socket_errors=data["connect"] + data["read"] + data["write"] + data["timeout"],
            queries=data["queries"] / data["counted"] if data["counted"] else None,
            hits=data["cache_hits"],
            misses=data["cache_misses"],
            first_bad=data["first_bad"],
        )

    @property
    def rps(self) -> float:
        return self.requests / self.seconds if self.seconds else 0.0

    @property
    def errors(self) -> str:
        return f"{self.non2xx} / {self.socket_errors}"

    @property
    def hit_ratio(self) -> float | None:
        looked_up = self.hits + self.misses
        return self.hits / looked_up if looked_up else None


@dataclass
class Walk:
    """A sequential walk by cursor from one Python client: its pages and what they cost."""

    pages: int
    seconds: float
    latencies: list[float]  # ms
    queries: int
    hits: int
    misses: int
    last_cursor: str | None  # the cursor of the last page fetched (None: page 1)
    next_cursor: str | None  # the cursor after it (None: the list ended)

    @property
    def rps(self) -> float:
        return self.pages / self.seconds if self.seconds else 0.0

    @property
    def p50(self) -> float:
        return percentile(self.latencies, 50)

    @property
    def p99(self) -> float:
        return percentile(self.latencies, 99)

    @property
    def errors(self) -> str:
        return "0 / 0"  # a walk stops at the first answer that is not 200

    @property
    def hit_ratio(self) -> float | None:
        looked_up = self.hits + self.misses
        return self.hits / looked_up if looked_up else None

    @property
    def queries_per_request(self) -> float:
        return self.queries / self.pages if self.pages else 0.0


@dataclass
class Row:
    """One line of the report: a scenario in one phase, against its floor and target."""

    title: str
    request: str
    phase: str  # "cold", "warm", or "" for the writes (measured once, on a warm server)
    result: Run | Walk | None  # None: not run (see note)
    floor: float | None = None  # the floor's req/s: the mean of its runs right before and after
    floor_label: str = ""  # which floor (FLOOR_LABELS)
    target: str = ""
    ok: bool | None = None
    note: str = ""

    @property
    def ratio(self) -> float | None:
        if self.result is None or not self.floor:
            return None
        return self.result.rps / self.floor


# --- the wrk script -------------------------------------------------------------------------------

WRK_SCRIPT = Template("""\
-- Written by bench/http.py for one run: $title
local method = $method
local pick = $pick
local hot_share = $hot_share
local zipf_exponent = $zipf_exponent
local body_prefix = $body_prefix
local wrk_threads = $wrk_threads
local words = {$words}

local function lines(name)
  local out = {}
  for line in io.lines(name) do out[#out + 1] = line end
  return out
end

local paths = lines($paths_file)
local tokens = lines($tokens_file)
local cdf = nil -- zipf: the cumulative probability of paths[1..k]
local threads = {}

function setup(thread)
  table.insert(threads, thread)
  thread:set("thread_no", #threads)
end

function init(args)
  -- Per wrk thread; done() reads them through the thread handles kept by setup().
  responses, non2xx, queries, counted, cache_hits, cache_misses = 0, 0, 0, 0, 0, 0
  first_bad = ""
  sent = 0
  liked = {}
  math.randomseed(7919 * thread_no)
  -- Each thread has its own users, so a (user, comment) pair alternates within one thread.
  own_tokens = {}
  for i = thread_no, #tokens, wrk_threads do own_tokens[#own_tokens + 1] = tokens[i] end
  if #own_tokens == 0 then own_tokens = tokens end
  if pick == "zipf" then
    cdf = {}
    local total = 0
    for k = 1, #paths do
      total = total + 1 / k ^ zipf_exponent
      cdf[k] = total
    end
    for k = 1, #paths do cdf[k] = cdf[k] / total end
  end
  if method == "GET" and pick == "one" and #tokens == 0 then fixed = wrk.format("GET", paths[1], browser_headers()) end
end

-- What every browser sends; the service answers hot pages compressed to those who accept it.
function browser_headers()
  return {["Accept-Encoding"] = "gzip, deflate, br"}
end

local function choose()
  if pick == "hot" then
    if math.random() < hot_share then return 1 end
    return math.random(2, #paths)
  elseif pick == "zipf" then
    local u, lo, hi = math.random(), 1, #paths
    while lo < hi do
      local mid = math.floor((lo + hi) / 2)
      if cdf[mid] < u then lo = mid + 1 else hi = mid end
    end
    return lo
  elseif pick == "uniform" then
    return math.random(#paths)
  end
  return 1
end

function request()
  if fixed then return fixed end
  sent = sent + 1
  local i = choose()
  local headers = browser_headers()
  local user = 0
  if #own_tokens > 0 then
    user = sent % #own_tokens + 1
    headers["Authorization"] = "Bearer " .. own_tokens[user]
  end
  if method == "LIKE" then
    -- The first request of a (user, comment) pair likes, the next one unlikes, and so on.
    local pair = user * 1000000 + i
    local verb = liked[pair] and "DELETE" or "PUT"
    liked[pair] = not liked[pair]
    return wrk.format(verb, paths[i], headers)
  elseif method == "POST" then
    -- A unique body each time: moderation holds a repeated text for review.
    headers["Content-Type"] = "application/json"
    local text = {}
    for w = 1, 8 + sent % 24 do text[w] = words[math.random(#words)] end
    local body = '{"body": "' .. body_prefix .. " " .. thread_no .. "." .. sent .. ": " .. table.concat(text, " ") .. '"}'
    return wrk.format("POST", paths[i], headers, body)
  end
  return wrk.format(method, paths[i], headers)
end

function response(status, headers, body)
  responses = responses + 1
  if status < 200 or status > 299 then
    non2xx = non2xx + 1
    if first_bad == "" then first_bad = status .. " " .. string.sub(body or "", 1, 160) end
  end
  local q = headers["X-Bench-Queries"]
  if q then
    counted = counted + 1
    queries = queries + tonumber(q)
    cache_hits = cache_hits + tonumber(headers["X-Bench-Cache-Hits"] or 0)
    cache_misses = cache_misses + tonumber(headers["X-Bench-Cache-Misses"] or 0)
  end
end

function done(summary, latency, requests)
  local totals = {responses = 0, non2xx = 0, queries = 0, counted = 0, cache_hits = 0, cache_misses = 0}
  local bad = ""
  for _, thread in ipairs(threads) do
    for name, value in pairs(totals) do totals[name] = value + (thread:get(name) or 0) end
    if bad == "" then bad = thread:get("first_bad") or "" end
  end
  bad = (bad:gsub('[^%w %.:/_,=-]', ''))
  local e = summary.errors
  io.write(string.format(
    'WRK {"requests": %d, "duration_us": %d, "connect": %d, "read": %d, "write": %d, "timeout": %d, ' ..
    '"p50_us": %d, "p99_us": %d, "responses": %d, "non2xx": %d, "queries": %d, "counted": %d, ' ..
    '"cache_hits": %d, "cache_misses": %d, "first_bad": "%s"}\\n',
    summary.requests, summary.duration, e.connect, e.read, e.write, e.timeout,
    latency:percentile(50), latency:percentile(99), totals.responses, totals.non2xx, totals.queries,
    totals.counted, totals.cache_hits, totals.cache_misses, bad))
end
""")


def lua_script(load: Load, workdir: Path, *, body_prefix: str, wrk_threads: int) -> str:
    """The wrk script of ``load``; its paths and tokens go in files beside it (tens of
    thousands of paths would overflow a Lua table constructor)."""
    paths_file, tokens_file = workdir / "paths.txt", workdir / "tokens.txt"
    paths_file.write_text("".join(p + "\n" for p in load.paths))
    tokens_file.write_text("".join(t + "\n" for t in load.tokens))
    return WRK_SCRIPT.substitute(
        title=load.title,
        method=json.dumps(load.method),
        pick=json.dumps(load.pick),
        hot_share=repr(HOT_SHARE),
        zipf_exponent=repr(ZIPF_EXPONENT),
        body_prefix=json.dumps(body_prefix),
        wrk_threads=wrk_threads,
        words=", ".join(json.dumps(w) for w in core._POST_WORDS),
        paths_file=json.dumps(str(paths_file)),
        tokens_file=json.dumps(str(tokens_file)),
    )


# --- one Python client: checks and walks ----------------------------------------------------------


def fetch(port: int, method: str, path: str, headers: dict | None = None, body: bytes | None = None, conn=None):
    """One request; ``(status, headers, body)``."""
    own = conn is None
    conn = conn or http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    try:
        conn.request(method, path, body=body, headers=headers or {})
        response = conn.getresponse()
        return response.status, response, response.read()
    finally:
        if own:
            conn.close()


def walk(port: int, path: str, params: dict, pages: int | None = None, pause: float = 0.0) -> Walk:
    """Follow ``next_cursor`` from page 1, one request after the other on one keep-alive
    connection, for ``pages`` pages or to the end of the list, waiting ``pause`` seconds after
    each page (a reader reading it)."""
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    latencies: list[float]
    latencies, queries, hits, misses = [], 0, 0, 0
    cursor = last = None
    started = time.perf_counter()
    try:
        while pages is None or len(latencies) < pages:
            url = f"{path}?{urlencode(dict(params, **({'cursor': cursor} if cursor else {})))}"
            t0 = time.perf_counter()
            status, response, body = fetch(port, "GET", url, conn=conn)
            latencies.append((time.perf_counter() - t0) * 1000)
            if status != 200:
                raise ScenarioAborted(f"GET {url} answered {status} on page {len(latencies)}: {body[:200]!r}")
            queries += int(response.getheader("X-Bench-Queries", 0))
            hits += int(response.getheader("X-Bench-Cache-Hits", 0))
            misses += int(response.getheader("X-Bench-Cache-Misses", 0))
            last, cursor = cursor, json.loads(body)["next_cursor"]
            if cursor is None:
                break
            time.sleep(pause)
    finally:
        conn.close()
    return Walk(len(latencies), time.perf_counter() - started, latencies, queries, hits, misses, last, cursor)


# --- the Celery worker ----------------------------------------------------------------------------


class CeleryWorker:
    """``celery -A config worker -B`` with the server's environment: beat queues the like flush
    every ``LIKES_FLUSH_INTERVAL`` and the worker runs it, and the queued second moderation
    checks of the posts every ``MODERATION_RECHECK_INTERVAL``, as in production. Beat's schedule
    file goes to a temporary directory."""

    def __init__(self, *, queues: list[str] | None = None):
        """``queues``: the broker queues it takes tasks from (every one by default)."""
        self.dir = Path(tempfile.mkdtemp(prefix="bench-http-celery-"))
        self.hostname = f"bench-http@{socket.gethostname()}"
        consume = ["-Q", ",".join(queues)] if queues else []
        self.args = [
            str(Path(sys.executable).parent / "celery"),
            "-A",
            "config",
            "worker",
            "-B",
            "--hostname",
            self.hostname,
            "--schedule",
            str(self.dir / "celerybeat-schedule"),
            "--loglevel",
            "warning",
            *consume,
        ]
        self.command_line = (
            f"DJANGO_SETTINGS_MODULE={SETTINGS_MODULE} {LOAD_ENV_TEXT} .venv/bin/celery -A config worker -B "
            f"--loglevel warning{' ' if consume else ''}{' '.join(consume)}"
        )
        self.proc: subprocess.Popen | None = None

    def start(self) -> None:
        """Start, and wait until the worker answers a ping through the broker."""
        from config.celery import app

        self.log_file = open(self.dir / "worker.log", "w")  # noqa: SIM115 - the child process's output, closed by hand below
        # Its own session, so that a Ctrl-C reaches only this process, which then stops the
        # worker in order (after the server, once the tasks queued by the load are done).
        self.proc = subprocess.Popen(
            self.args,
            env=server_env(SETTINGS_MODULE),
            stdout=self.log_file,
            stderr=subprocess.STDOUT,
            cwd=BASE_DIR,
            start_new_session=True,
        )
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"the Celery worker exited: {self.log_tail()}")
            if app.control.ping(destination=[self.hostname], timeout=1.0):
                return
        raise RuntimeError(f"the Celery worker did not answer within 60 s: {self.log_tail()}")

    def stop(self) -> None:
        """Warm shutdown (running tasks finish), then the whole process group if it hangs."""
        if self.proc is None or self.proc.poll() is not None:
            return
        self.proc.terminate()
        try:
            self.proc.wait(60)
        except subprocess.TimeoutExpired:
            os.killpg(self.proc.pid, signal.SIGKILL)
            self.proc.wait(5)
        self.log_file.close()

    def log_tail(self) -> str:
        try:
            return (self.dir / "worker.log").read_text()[-2000:]
        except OSError:
            return ""


def queued_messages(queue: str) -> int | None:
    """Messages waiting in a broker queue (tasks being run are not counted); None if the
    broker cannot say."""
    from config.celery import app

    try:
        with app.connection_for_read() as conn:
            return conn.default_channel.queue_declare(queue=queue, passive=True).message_count  # type: ignore[attr-defined]  # a py-amqp or Redis channel
    except Exception:  # noqa: BLE001 - any broker failure means "unknown", and the caller waits no longer
        return None


def purge_queue(queue: str) -> None:
    """Drop the messages waiting in a broker queue."""
    from config.celery import app

    with app.connection_for_write() as conn:
        conn.default_channel.queue_purge(queue)  # type: ignore[attr-defined]  # a py-amqp or Redis channel


# --- the benchmark --------------------------------------------------------------------------------


class HttpBench:
    def __init__(self, args: argparse.Namespace):
        self.args = args
        self.workdir = Path(tempfile.mkdtemp(prefix="bench-http-"))
        self.nonce = f"{int(time.time()) % 1_000_000}"  # makes post bodies unique across runs too
        self.runs = 0
        self.rows: list[Row] = []
        self.floor_runs: dict[str, list[Run]] = {}
        self.previous_floor: tuple[str, Run] | None = None  # the last run, if it was a floor's
        self.memory: list[tuple[str, str, dict[int, tuple[int, int]]]] = []  # (server, what it served, workers)
        self.comparison: list[tuple[Load, Run | None, Run | None, str]] = []
        self.facts: dict = {}
        self.server: Server | None = None
        self.served = ""
        self.worker: CeleryWorker | None = None

    # dataset, users, workloads -----------------------------------------------------------------

    def prepare(self) -> None:
        """bench.core's dataset (seeded or reused), this benchmark's users and tokens, leftovers
        of an interrupted run removed, likes put back as seeded, and the counters snapshotted
        for the restore after posting."""
        from django.conf import settings

        from comments.services import subject_reconcile_counters
        from infra.redislink import connect
        from likes import state_sync

        core_args = core.parse_args(["--output", "-"] + (["--reseed"] if self.args.reseed else []))
        self.core = core.Bench(core_args)
        self.core.prepare()
        self.subject = self.core.subject
        self.posters = self._users([f"{USER_PREFIX}poster-{i:02d}" for i in range(POSTERS)])
        self.likers = self._users([f"{USER_PREFIX}liker-{i:04d}" for i in range(LIKERS_PER_RUN * LIKE_RUNS)])
        self.cache = connect(settings.REDIS_URL)
        self.likes_redis = state_sync.client()
        self.likes_admin = connect(settings.LIKES_REDIS_URL, decode_responses=True, socket_timeout=120)
        left = sum(
            self.core.seed.purge_comments("subject_id = %s AND author_id = %s", [self.subject.pk, u.pk])
            for u in self.posters
        )
        if left:
            subject_reconcile_counters(subject_id=self.subject.pk)
            log(f"bench: removed {left} comments left by an interrupted run and reconciled the counters")
        self.reset_likes()
        self.core.snapshot_counters()
        self.post_tokens = issue_tokens([u.pk for u in self.posters])
        self.like_tokens = issue_tokens([u.pk for u in self.likers])
        self._targets()
        self.cleanup_spread_posts()  # left by an interrupted run
        self.snapshot_spread_subjects()

    def _users(self, names: list[str]) -> list:
        """The users named (this benchmark's own: nothing of the seeded data is theirs), created
        with unusable passwords the first time."""
        from django.contrib.auth.hashers import make_password

        from comments.models import User

        existing = set(User.objects.filter(username__in=names).values_list("username", flat=True))
        User.objects.bulk_create(
            [User(username=n, display_name=n, password=make_password(None)) for n in names if n not in existing]
        )
        by_name = {u.username: u for u in User.objects.filter(username__in=names)}
        return [by_name[n] for n in names]

    def _targets(self) -> None:
        from comments.models import Comment, Subject

        sid = self.subject.pk
        likeable = Comment.objects.filter(subject_id=sid, status="published", visibility="public")
        # Most liked first: the ranks of the Zipf choice.
        self.likeable = list(likeable.order_by("-like_count", "pk").values_list("pk", flat=True))
        self.most_liked = Comment.objects.get(pk=self.likeable[0])
        self.biggest_thread = self.core.hot_root
        others = list(
            Subject.objects.filter(site_id=self.subject.site_id, key__startswith=self.core.seed.BACKGROUND_PREFIX)
            .order_by("pk")
            .values_list("pk", flat=True)
        )
        self.other_subjects = sorted(random.Random(3).sample(others, min(OTHER_SUBJECTS, len(others))))
        self.facts.update(
            likeable=len(self.likeable),
            comments=Comment.objects.filter(subject_id=sid).count(),
            top_likes=self.most_liked.like_count,
            background=len(others),
        )

    def reset_likes(self) -> None:
        """The subject's likes as seeded: every queued action flushed, this benchmark's likers'
        rows deleted, like counts recomputed, and the subject's like states dropped from Redis
        (a comment's next like or likers page loads it from its rows), so every run starts
        from the same state."""
        from django.db import connection, transaction

        from likes.services import like_counts_reconcile

        started = time.perf_counter()
        flushed = drain(self.likes_redis)
        with transaction.atomic(), connection.cursor() as cursor:
            cursor.execute(
                "DELETE FROM likes_like WHERE subject_id = %s AND user_id = ANY(%s)",
                [self.subject.pk, [u.pk for u in self.likers]],
            )
            deleted = cursor.rowcount
        fixed = like_counts_reconcile(subject_id=self.subject.pk)
        self.drop_like_states()
        log(
            f"bench: likes reset in {time.perf_counter() - started:.1f} s ({flushed} queued actions flushed, "
            f"{deleted} like rows of the bench likers deleted, {fixed} like counts recomputed)"
        )

    def loads(self, deep: dict[str, tuple[str, int, str]]) -> dict[str, Load]:
        """Every workload, by key; ``deep``: ``{mode: (cursor, page, note)}``."""
        sid = self.subject.pk
        lst = f"/api/v1/subjects/{sid}/comments"
        two_level = {"mode": "two_level", "sort": "hot", "limit": 20, "replies": 3}
        flat = {"mode": "flat", "limit": 20}
        stacked = {"mode": "stacked", "limit": 20}
        out: list[Load] = []
        for key, title, params in (
            ("two_level", "two-level (hot, 3 replies)", two_level),
            ("flat", "flat", flat),
            ("stacked", "stacked", stacked),
        ):
            url = f"{lst}?{urlencode(params)}"
            out.append(
                Load(f"{key}_p1", f"API {title}, page 1", f"GET {url}", "GET", [url], floor="drf", target=PAGE_RATIO)
            )
        for key, title, params in (
            ("two_level", "two-level", two_level),
            ("flat", "flat", flat),
            ("stacked", "stacked", stacked),
        ):
            if key not in deep:
                continue
            cursor, page, _ = deep[key]
            url = f"{lst}?{urlencode(dict(params, cursor=cursor))}"
            out.append(
                Load(
                    f"{key}_deep",
                    f"API {title}, page {page:,} (cursor)",
                    f"GET {lst}?{urlencode(params)}&cursor=<page {page}>",
                    "GET",
                    [url],
                    floor="drf",
                    target=DEEP_RATIO,
                )
            )
        likers = f"/api/v1/comments/{self.most_liked.pk}/likers"
        out.append(Load("likers", "likers of the most-liked comment", f"GET {likers}", "GET", [likers], floor="drf"))
        hot_page = f"{lst}?{urlencode(two_level)}"
        others = [f"/api/v1/subjects/{s}/comments?{urlencode(two_level)}" for s in self.other_subjects]
        out.append(
            Load(
                "hot_mix",
                f"hot-key mix ({HOT_SHARE:.0%} the subject's page 1)",
                f"GET two-level page 1: {HOT_SHARE:.0%} {hot_page}, {1 - HOT_SHARE:.0%} {len(others)} other subjects' of the site",
                "GET",
                [hot_page, *others],
                pick="hot",
                floor="drf",
                target=HOT_MIX_RATIO,
            )
        )
        embed = f"/embed/?{urlencode({'site': self.core.seed.SITE_KEY, 'key': self.subject.key})}"
        out.append(
            Load("widget", "widget page (HTML)", f"GET {embed}", "GET", [embed], floor="django", target=WIDGET_RATIO)
        )
        like_paths = [f"/api/v1/comments/{c}/like" for c in self.likeable]
        out.append(
            Load(
                "like_hot",
                "like/unlike, hot comments (Zipf)",
                f"PUT/DELETE /api/v1/comments/{{id}}/like, {len(like_paths):,} published comments, rank k by likes "
                f"with weight 1/k^{ZIPF_EXPONENT:g}",
                "LIKE",
                like_paths,
                pick="zipf",
                tokens=self.like_tokens[:LIKERS_PER_RUN],
                floor="like",
                target=WRITE_RATIO,
                settle="likes",
            )
        )
        out.append(
            Load(
                "like_uniform",
                "like/unlike, uniform comments",
                f"PUT/DELETE /api/v1/comments/{{id}}/like, uniform over {len(like_paths):,} published comments",
                "LIKE",
                like_paths,
                pick="uniform",
                tokens=self.like_tokens[LIKERS_PER_RUN : 2 * LIKERS_PER_RUN],
                floor="like",
                target=WRITE_RATIO,
                settle="likes",
            )
        )
        out.append(
            Load(
                "post",
                f"post a comment ({POSTERS} users)",
                f'POST {lst} {{"body": <unique>}}',
                "POST",
                [lst],
                tokens=self.post_tokens,
                expect=201,
                floor="post",
                target=WRITE_RATIO,
                settle="moderation",
            )
        )
        # The same posts spread over many subjects: what posting costs when no two writers share
        # a subject's row. Beside "post", it shows whether one hot subject serializes its writers.
        spread = [f"/api/v1/subjects/{s}/comments" for s in self.other_subjects]
        out.append(
            Load(
                "post_spread",
                f"post a comment ({POSTERS} users, {len(spread)} subjects)",
                f'POST /api/v1/subjects/<one of {len(spread)} other subjects of the site>/comments {{"body": <unique>}}',
                "POST",
                spread,
                pick="uniform",
                tokens=self.post_tokens,
                expect=201,
                floor="post",
                settle="moderation",
            )
        )
        return {load.key: load for load in out}

    def floors(self) -> dict[str, Load]:
        """The floors, by key. The write floors send a scenario's very requests (same tokens,
        methods and bodies) to the empty authenticated view."""
        like_tokens = self.like_tokens[:LIKERS_PER_RUN]
        return {
            "django": Load("floor_django", "empty Django view", f"GET {DJANGO_EMPTY_PATH}", "GET", [DJANGO_EMPTY_PATH]),
            "drf": Load("floor_drf", "empty anonymous DRF view", f"GET {DRF_EMPTY_PATH}", "GET", [DRF_EMPTY_PATH]),
            "like": Load(
                "floor_like",
                "empty authenticated DRF view (PUT/DELETE)",
                f"PUT/DELETE {AUTH_EMPTY_PATH}",
                "LIKE",
                [AUTH_EMPTY_PATH],
                tokens=like_tokens,
            ),
            "post": Load(
                "floor_post",
                "empty authenticated DRF view (POST)",
                f'POST {AUTH_EMPTY_PATH} {{"body": ...}}',
                "POST",
                [AUTH_EMPTY_PATH],
                tokens=self.post_tokens,
            ),
        }

    # servers ---------------------------------------------------------------------------------

    def new_server(self, worker_class: str = "gthread") -> Server:
        server = Server(
            free_port(),
            settings_module=SETTINGS_MODULE,
            workers=self.args.workers,
            threads=self.args.threads,
            worker_class=worker_class,
        )
        self.facts.setdefault(f"gunicorn_{worker_class}", server.command_line.replace(f":{server.port}", ":<port>"))
        # The probe is the empty Django view: it warms nothing a scenario measures.
        server.start("GET", DJANGO_EMPTY_PATH)
        return server

    def stop_server(self, server: Server, label: str) -> None:
        """Stop, noting the workers' memory first (what they served: ``self.served``)."""
        self.memory.append((label, self.served, server.worker_memory()))
        server.stop()

    def drop_like_states(self) -> None:
        """The subject's like states dropped from Redis (every queued action flushed first, by
        the caller): a comment's next like or likers page loads its state from the rows."""
        from likes import keys

        drop_states(self.likes_admin, self.subject.pk)
        # And the flush's minute-long memory of the comments it wrote: wrk's seeds are fixed, so
        # a run replays the last one's comments, whose first likes it would otherwise send
        # through the careful load when it starts within that minute.
        self.likes_admin.delete(keys.written(self.subject.pk))

    def restart(self, *, cold: bool, like_states: bool = False) -> None:
        """A new server; ``cold``: the cache's Redis database emptied (FLUSHDB) before it starts,
        and with ``like_states`` the subject's like states dropped too."""
        if self.server is not None:
            self.stop_server(self.server, "gthread")
            self.server = None
        if cold:
            self.cache.flushdb()
            if like_states:
                drain(self.likes_redis)
                self.drop_like_states()
        self.server = self.new_server()
        self.served = ""

    # running ---------------------------------------------------------------------------------

    def run(self, load: Load, phase: str, server: Server | None = None, seconds: float | None = None) -> Run:
        server = server or self.server
        self.runs += 1
        script = lua_script(
            load,
            self.workdir,
            body_prefix=f"Bench HTTP post {self.nonce}.{self.runs}",
            wrk_threads=self.args.wrk_threads,
        )
        data = run_wrk_script(
            script,
            f"http://127.0.0.1:{server.port}",
            seconds=seconds or self.args.seconds,
            connections=self.args.connections,
            threads=self.args.wrk_threads,
            workdir=self.workdir,
        )
        run = Run.of(load.key, phase, data)
        if not load.key.startswith("floor_"):
            self.previous_floor = None
            self.served = load.title
        log(
            f"  {load.title[:52]:<52} {phase or '-':<7} {run.rps:8.0f} req/s  p50 {run.p50:7.2f}  p99 {run.p99:7.2f} ms  "
            f"non-2xx/socket {run.errors}  SQL/req {_fmt(run.queries, '.1f')}  cache {_cache(run)}"
            + (f"  first bad: {run.first_bad[:100]}" if run.first_bad else "")
        )
        return run

    def floor(self, key: str) -> Run:
        run = self.run(self.floor_loads[key], "")
        self.floor_runs.setdefault(key, []).append(run)
        self.previous_floor = (key, run)
        return run

    def floor_before(self, key: str) -> Run:
        """The floor run right before a scenario: the last run if it was this floor's, else a new
        one."""
        if self.previous_floor and self.previous_floor[0] == key:
            return self.previous_floor[1]
        return self.floor(key)

    def check(self, load: Load, server: Server | None = None) -> None:
        """Each distinct request of ``load`` once (a like also undone); ScenarioAborted unless
        every answer is the expected one."""
        port = (server or self.server).port
        auth = {"Authorization": f"Bearer {load.tokens[0]}"} if load.tokens else {}
        calls: list[tuple[str, str, dict[str, str], bytes | None, int]]
        if load.method == "GET":
            calls = [("GET", p, auth, None, load.expect) for p in dict.fromkeys(load.paths)]
        elif load.method == "LIKE":
            calls = [("PUT", load.paths[0], auth, None, 200), ("DELETE", load.paths[0], auth, None, 200)]
        else:
            body = json.dumps({"body": f"Bench HTTP check {self.nonce}.{self.runs}.{time.time_ns()}"}).encode()
            calls = [("POST", load.paths[0], {**auth, "Content-Type": "application/json"}, body, load.expect)]
        for method, path, headers, body, expect in calls:
            status, _, answer = fetch(port, method, path, headers, body)
            if status != expect:
                raise ScenarioAborted(f"{method} {path[:120]} answered {status}, not {expect}: {answer[:300]!r}")

    def settle(self, load: Load) -> str:
        """Wait for the background work a write left, so the next measurement does not share
        the machine with it; what it took, for the report."""
        if load.settle == "likes":
            return self.wait_for_flush()
        if load.settle == "moderation":
            return self.wait_for_moderation()
        return ""

    def wait_for_flush(self, limit: float = 120) -> str:
        from infra import streams
        from likes import keys

        started = time.perf_counter()
        if self.args.like_flush == "after":
            flushed = drain(self.likes_redis)
            purge_queue("likes")  # the flushes beat queued meanwhile: this one did their work
            return f"{flushed:,} like events flushed after the run by the benchmark ({time.perf_counter() - started:.1f} s)"
        stream = keys.events(self.subject.pk)
        while streams.stream_length(self.likes_redis, stream) and time.perf_counter() - started < limit:
            time.sleep(0.1)
        left = streams.stream_length(self.likes_redis, stream)
        took = time.perf_counter() - started
        if left:
            return f"{left:,} like events still queued {took:.0f} s after the run"
        return f"the Celery worker had flushed the like events {took:.1f} s after the run"

    def wait_for_moderation(self, limit: float = 300) -> str:
        """Until the second checks of the posts ran: the Redis queue of checks (read in
        batches by the worker's beat task) and the broker's moderation queue are empty."""
        from infra import redislink, streams
        from moderation.rechecks import RECHECK_STREAM

        def waiting() -> int | None:
            tasks = queued_messages("moderation")
            r = redislink.client()
            return None if tasks is None else tasks + (streams.stream_length(r, RECHECK_STREAM) if r else 0)

        started = time.perf_counter()
        left = waiting()
        while left and time.perf_counter() - started < limit:
            time.sleep(0.5)
            left = waiting()
        took = time.perf_counter() - started
        if left is None:
            return "the moderation queue's length is unknown (the broker did not say)"
        if left:
            return f"{left:,} second moderation checks still queued {took:.0f} s after the run"
        return f"the Celery worker had run every second moderation check of the posts {took:.1f} s after the run"

    def measure(self, load: Load, *, cold: bool) -> None:
        """Check, floor before, [server restarted cold, cold run], warm run, background work
        settled, floor after; one report row per run."""
        phases = ["cold", "warm"] if cold else [""]
        try:
            self.check(load)
        except (ScenarioAborted, OSError) as exc:
            log(f"  {load.title}: NOT RUN: {exc}")
            self.rows += [Row(load.title, load.request, p, None, note=f"not run: {exc}") for p in phases]
            return
        before = self.floor_before(load.floor)
        runs = []
        try:
            if cold:
                self.restart(cold=True, like_states=load.key in LIKE_LOADS)
            for phase in phases:
                runs.append(self.run(load, phase))
        except RuntimeError as exc:
            log(f"  {load.title}: FAILED: {exc}")
            self.rows += [Row(load.title, load.request, p, None, note=f"failed: {exc}") for p in phases[len(runs) :]]
            self.restart(cold=False)
        note = self.settle(load)
        if note:
            log(f"  ({note})")
        after = self.floor(load.floor)
        floor_rps = (before.rps + after.rps) / 2
        for phase, run in zip(phases, runs, strict=False):
            bad = f"first non-2xx answer: {run.first_bad}" if run.first_bad else ""
            row = Row(
                load.title,
                load.request,
                phase,
                run,
                floor=floor_rps,
                floor_label=FLOOR_LABELS[load.floor],
                note="; ".join(n for n in (note, bad) if n),
            )
            if load.target is not None:
                row.target = f">= {load.target:g} x floor"
                row.ok = row.ratio >= load.target
            self.rows.append(row)

    def measure_walk(
        self,
        title: str,
        path: str,
        params: dict,
        target_seconds: float | None,
        *,
        pages: int | None = None,
        pause: float = 0.0,
        phases: tuple[str, ...] = ("cold", "warm"),
    ) -> None:
        """A list walked by cursor (``pages`` pages, or the whole list), cold (server restarted,
        cache emptied) then warm; ``pause``: seconds the client waits after each page."""
        request = f"GET {path}?{urlencode(params)} by cursor, sequentially, one client"
        if pause:
            request += f", {pause * 1000:g} ms after each page"
        self.restart(cold=True)
        for phase in phases:
            try:
                result = walk(self.server.port, path, params, pages=pages, pause=pause)
            except (ScenarioAborted, OSError) as exc:
                log(f"  {title}: NOT RUN: {exc}")
                self.rows.append(Row(title, request, phase, None, note=f"not run: {exc}"))
                continue
            self.served = title
            row = Row(title, request, phase, result, note=f"{result.pages:,} requests in {result.seconds:.2f} s")
            if target_seconds is not None:
                row.target = f"whole walk < {target_seconds:g} s"
                row.ok = result.seconds < target_seconds
            self.rows.append(row)
            log(
                f"  {title[:52]:<52} {phase:<7} {result.pages:,} requests in {result.seconds:.2f} s  p50 {result.p50:.2f}  "
                f"p99 {result.p99:.2f} ms  SQL/req {result.queries_per_request:.1f}  cache {_cache(result)}"
            )
        self.previous_floor = None

    # the phases --------------------------------------------------------------------------------

    def run_floors_only(self) -> None:
        """A server that serves nothing but the floors (a short warm-up each, then a timed run):
        the workers' memory the scenarios' servers are compared with."""
        log("bench: floors, on a server that serves only them")
        self.floor_loads = self.floors()
        self.server = self.new_server()
        for key, load in self.floor_loads.items():
            self.check(load)
            self.run(load, "warm-up", seconds=min(2.0, self.args.seconds))
            self.floor(key)
        self.served = "floors only"
        self.stop_server(self.server, "floors only")
        self.server = None

    def run_reads(self, quick: bool) -> dict[str, Load]:
        log("bench: deep-page cursors (walked with a Python client)")
        self.restart(cold=False)
        sid = self.subject.pk
        lst = f"/api/v1/subjects/{sid}/comments"
        deep = {}
        wanted = [("flat", {"mode": "flat", "limit": 20}, DEEP_PAGE)]
        if not quick:
            wanted += [
                ("stacked", {"mode": "stacked", "limit": 20}, DEEP_PAGE),
                ("two_level", {"mode": "two_level", "sort": "hot", "limit": 20, "replies": 3}, None),
            ]
        for mode, params, page in wanted:
            try:
                result = walk(self.server.port, lst, params, pages=None if page is None else page - 1)
            except (ScenarioAborted, OSError) as exc:
                log(f"  {mode}: the walk to the deep page failed, its scenarios are not run: {exc}")
                continue
            if page is not None and result.next_cursor:
                deep[mode] = (result.next_cursor, page, "")
            else:
                note = (
                    f"the last page of list 1, which ends there: the subject has {self.core.facts['roots']:,} top-level "
                    f"comments, so page {DEEP_PAGE} does not exist"
                    if page is None
                    else f"the list ends at page {result.pages:,}"
                )
                deep[mode] = (result.last_cursor, result.pages, note)
            log(f"  {mode}: page {deep[mode][1]:,} reached in {result.seconds:.1f} s ({result.pages:,} requests)")
        self.served = "the deep-page walks"
        self.facts["deep"] = {mode: (page, note) for mode, (_, page, note) in deep.items()}
        loads = self.loads(deep)
        reads = [
            "two_level_p1",
            "flat_p1",
            "stacked_p1",
            "two_level_deep",
            "flat_deep",
            "stacked_deep",
            "likers",
            "hot_mix",
        ]
        if quick:
            reads = ["two_level_p1", "flat_deep", "hot_mix"]
        log("bench: API reads, each cold (cache emptied, server restarted) then warm; floor before and after")
        for key in reads:
            if key in loads:
                self.measure(loads[key], cold=True)
            else:
                self.rows.append(Row(key, "", "", None, note="not run: the walk to its deep page failed"))
        log("bench: whole walks by cursor")
        for walk_key in WALK_KEYS:
            self.measure_walk(**self.walks()[walk_key])
        if not quick:
            replies = f"/api/v1/comments/{self.biggest_thread.pk}/replies"
            self.measure_walk(
                f"whole walk: list 2 of the biggest thread ({self.biggest_thread.reply_count:,} replies), limit 100",
                replies,
                {"limit": 100},
                None,
            )
        log("bench: the widget page")
        self.measure(loads["widget"], cold=True)
        return loads

    def walks(self) -> dict[str, dict]:
        """The walks of the subject by cursor that ``--only`` can name too, by key: the
        arguments of ``measure_walk``."""
        lst = f"/api/v1/subjects/{self.subject.pk}/comments"
        return {
            "whole_walk": {
                "title": "whole walk: the subject, flat, limit 100",
                "path": lst,
                "params": {"mode": "flat", "limit": 100},
                "target_seconds": WALK_SECONDS,
            },
            # A reader who reads each page before asking for the next: what building ahead is for.
            "reader_walk": {
                "title": f"reader's walk: the subject's first {READER_WALK_PAGES} pages, flat, limit 100, "
                f"{READER_PAUSE * 1000:g} ms reading each",
                "path": lst,
                "params": {"mode": "flat", "limit": 100},
                "target_seconds": None,
                "pages": READER_WALK_PAGES,
                "pause": READER_PAUSE,
                "phases": ("cold",),
            },
        }

    def run_writes(self, loads: dict[str, Load], quick: bool) -> None:
        log("bench: writes (the Celery worker flushing likes and checking posts meanwhile)")
        for key in ["like_hot", "post"] if quick else ["like_hot", "like_uniform", "post", "post_spread"]:
            self.measure(loads[key], cold=key in LIKE_LOADS)
        self.stop_server(self.server, "gthread")
        self.server = None

    def run_only(self, keys: list[str]) -> None:
        """The scenarios named, each measured as the full run measures it (reads and likes cold
        then warm, posts once), with their floors before and after."""
        self.floor_loads = self.floors()
        self.restart(cold=False)
        loads = self.loads({})
        unknown = [key for key in keys if key not in loads and key not in WALK_KEYS]
        if unknown:
            known = ", ".join([*loads, *WALK_KEYS])
            raise SystemExit(f"unknown scenario(s) {', '.join(unknown)}; known: {known}")
        for key in keys:
            if key in WALK_KEYS:
                self.measure_walk(**self.walks()[key])
            else:
                self.measure(loads[key], cold=loads[key].method == "GET" or key in LIKE_LOADS)

    def run_sync_comparison(self, loads: dict[str, Load]) -> None:
        """The main scenarios on two servers side by side, the config's gthread workers and plain
        sync workers (same worker count, one thread each), warm, alternating which goes first."""
        log("bench: gthread against sync workers")
        servers = {"gthread": self.new_server("gthread"), "sync": self.new_server("sync")}
        like_tokens = {
            "gthread": self.like_tokens[2 * LIKERS_PER_RUN : 3 * LIKERS_PER_RUN],
            "sync": self.like_tokens[3 * LIKERS_PER_RUN : 4 * LIKERS_PER_RUN],
        }
        chosen = [self.floor_loads["drf"], self.floor_loads["like"]] + [
            loads[key] for key in ("two_level_p1", "flat_deep", "widget", "like_hot", "post") if key in loads
        ]
        try:
            for n, load in enumerate(chosen):
                order = ("gthread", "sync") if n % 2 == 0 else ("sync", "gthread")
                got: dict[str, Run | None] = {}
                note = ""
                for kind in order:
                    variant = replace(load, tokens=like_tokens[kind]) if load.key == "like_hot" else load
                    try:
                        self.check(variant, servers[kind])
                        if variant.method == "GET":
                            self.run(variant, "warm-up", servers[kind], seconds=min(2.0, self.args.seconds))
                        got[kind] = self.run(variant, kind, servers[kind])
                    except (ScenarioAborted, RuntimeError, OSError) as exc:
                        log(f"  {load.title} on {kind}: NOT RUN: {exc}")
                        got[kind], note = None, f"{kind}: not run: {exc}"
                    settled = self.settle(variant)
                    if settled:
                        log(f"  ({settled})")
                self.comparison.append((load, got.get("gthread"), got.get("sync"), note))
        finally:
            for kind, server in servers.items():
                self.stop_server(server, f"comparison {kind}")

    def teardown(self) -> None:
        """Servers stopped; the moderation checks queued by the posts run; the worker stopped;
        then the likes put back as seeded and the posts removed (counters restored)."""
        if self.server is not None:
            self.stop_server(self.server, "gthread")
            self.server = None
        if self.worker is not None:
            try:
                self.wait_for_moderation()
            finally:  # a worker left running would drain the next run's streams
                self.worker.stop()
        self.reset_likes()
        self.core.cleanup_posts(authors=self.posters)
        self.cleanup_spread_posts()
        shutil.rmtree(self.workdir, ignore_errors=True)

    def snapshot_spread_subjects(self) -> None:
        """The counters of the subjects ``post_spread`` posts on, to put back afterwards."""
        from comments.models import Subject

        self.spread_counters = list(
            Subject.objects.filter(pk__in=self.other_subjects).values_list(
                "pk", "comment_count", "root_count", "floor_seq"
            )
        )

    def cleanup_spread_posts(self) -> None:
        """``post_spread``'s comments removed and its subjects' counters put back (the posts
        went through the service; deleting rows underneath it does not keep counters)."""
        from django.db import transaction

        from comments.models import Subject
        from comments.services import subject_reconcile_counters

        removed = sum(
            self.core.seed.purge_comments("subject_id = ANY(%s) AND author_id = %s", [self.other_subjects, u.pk])
            for u in self.posters
        )
        snapshot = getattr(self, "spread_counters", None)
        if snapshot is None and removed:  # an interrupted run's: counted again from the rows
            for pk in self.other_subjects:
                subject_reconcile_counters(subject_id=pk)
        with transaction.atomic():
            for pk, comments, roots, floor in snapshot or []:
                Subject.objects.filter(pk=pk).update(comment_count=comments, root_count=roots, floor_seq=floor)
        if removed:
            log(f"bench: removed {removed} comments posted on the other subjects and restored their counters")


# --- the report -----------------------------------------------------------------------------------


def _fmt(value: float | None, spec: str) -> str:
    return "–" if value is None else format(value, spec)


def _cache(result: Run | Walk) -> str:
    """The hit ratio, with the misses behind it when there were any (a cold run's few)."""
    if result.hit_ratio is None:
        return "–"
    misses = f"{result.misses:,} miss" + ("es" if result.misses > 1 else "")
    return f"{result.hit_ratio:.1%}" + (f" ({misses})" if result.misses else "")


def _cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def results_table(rows: list[Row]) -> list[str]:
    out = [
        "| scenario | run | req/s | p50 ms | p99 ms | non-2xx / socket errors | SQL/request | cache hit ratio "
        "| floor req/s | ratio to floor | target | result |",
        "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---|---|",
    ]
    for row in rows:
        r = row.result
        if r is None:
            out.append(
                f"| {row.title} | {row.phase or '–'} | {_cell(row.note)} | | | | | | | | {row.target or '–'} | – |"
            )
            continue
        queries = r.queries_per_request if isinstance(r, Walk) else r.queries
        result = "–" if row.ok is None else ("PASS" if row.ok else "**FAIL**")
        target = row.target or "–"
        if isinstance(r, Walk) and row.target:
            target += f" ({r.seconds:.2f} s)"
        out.append(
            f"| {row.title} | {row.phase or '–'} | {r.rps:,.0f} | {r.p50:.2f} | {r.p99:.2f} | {r.errors} | "
            f"{_fmt(queries, '.1f')} | {_cache(r)} | {_fmt(row.floor, ',.0f')}{f' ({row.floor_label})' if row.floor else ''} "
            f"| {_fmt(row.ratio, '.2f')} | {target} | {result} |"
        )
    return out


def scenario_notes(rows: list[Row]) -> list[str]:
    """One line per scenario: its exact request, and what its runs noted."""
    out = []
    for title in dict.fromkeys(row.title for row in rows):
        mine = [row for row in rows if row.title == title]
        request = next((row.request for row in mine if row.request), "")
        notes = [f"{row.phase + ': ' if row.phase and len(mine) > 1 else ''}{row.note}" for row in mine if row.note]
        out.append(f"- **{title}**: " + "; ".join(([f"`{request}`"] if request else []) + [_cell(n) for n in notes]))
    return out


def memory_summary(bench: HttpBench) -> dict | None:
    """Peak resident size (VmHWM) of a worker of the floors-only server, and of any worker of
    the servers that ran the scenarios (gthread), with the scenario it served last."""
    floors = [m for label, _, m in bench.memory if label == "floors only" and m]
    loaded = [(served, m) for label, served, m in bench.memory if label == "gthread" and m and served]
    if not floors or not loaded:
        return None
    floor_hwm = max(h for h, _ in floors[0].values())
    floor_rss = max(r for _, r in floors[0].values())
    served, workers = max(loaded, key=lambda sm: max(h for h, _ in sm[1].values()))
    peak = max(h for h, _ in workers.values())
    rss = max(r for _, r in workers.values())
    return {
        "floor_hwm": floor_hwm,
        "floor_rss": floor_rss,
        "peak": peak,
        "rss": rss,
        "served": served,
        "ratio": peak / floor_hwm,
        "servers": len(loaded),
    }


def comparison_table(bench: HttpBench) -> list[str]:
    out = [
        "| workload | gthread req/s | p50 ms | p99 ms | non-2xx / socket | sync req/s | p50 ms | p99 ms | non-2xx / socket "
        "| sync / gthread |",
        "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for load, g, s, note in bench.comparison:
        cells = []
        for r in (g, s):
            cells += ["–"] * 4 if r is None else [f"{r.rps:,.0f}", f"{r.p50:.2f}", f"{r.p99:.2f}", r.errors]
        ratio = f"{s.rps / g.rps:.2f}" if g and s and g.rps else "–"
        out.append(f"| {load.title}{f' ({note})' if note else ''} | " + " | ".join(cells) + f" | {ratio} |")
    return out


def comparison_verdict(bench: HttpBench) -> str:
    ratios = [s.rps / g.rps for _, g, s, _ in bench.comparison if g and s and g.rps and s.rps]
    if not ratios:
        return ""
    mean = statistics.geometric_mean(ratios)
    p99 = [(s.p99, g.p99) for _, g, s, _ in bench.comparison if g and s]
    worse_tail = sum(1 for sp, gp in p99 if sp > gp)
    winner = "sync" if mean > 1.05 else "gthread" if mean < 0.95 else "neither (within 5%)"
    return (
        f"Sync against gthread, geometric mean of the req/s ratios over {len(ratios)} workloads: **{mean:.2f}**; "
        f"sync's p99 is higher in {worse_tail} of {len(p99)}. On this machine by throughput: **{winner}**."
    )


def git_version() -> str:
    def git(*cmd):
        return subprocess.run(["git", "-C", str(BASE_DIR), *cmd], capture_output=True, text=True).stdout.strip()

    head = git("rev-parse", "--short", "HEAD") or "unknown"
    return head + (" + uncommitted changes" if git("status", "--porcelain") else "")


def machine_facts(bench: HttpBench) -> dict:
    info = core.machine()
    info["redis"] = bench.cache.info("server").get("redis_version", "?")
    info["git"] = git_version()
    return info


def command_line() -> str:
    env = [f"{name}={ENV_AT_START[name]}" for name in ENV_NAMES if ENV_AT_START.get(name)]
    args = shlex.join(sys.argv[1:])
    return " ".join(env + [".venv/bin/python -m bench.http"] + ([args] if args else []))


def render(bench: HttpBench, info: dict, started: datetime, took: float, notes: str) -> str:
    a, f = bench.args, bench.facts
    mem = memory_summary(bench)
    out = [
        START,
        "## HTTP load",
        "",
        f"Generated by `bench/http.py` on {started.strftime('%Y-%m-%d %H:%M UTC')} (run time {took / 60:.1f} min); "
        "re-run the command to refresh this section. Only the *Notes* at the end are hand-written (the script keeps "
        "them).",
        "",
        "```sh",
        command_line(),
        "```",
        "",
        f"Options: `--seconds` ({a.seconds:g}), `--quick`{' (this run)' if a.quick else ''}, `--workers` ({a.workers}), "
        f"`--threads` ({a.threads}), `--connections` ({a.connections}), `--wrk-threads` ({a.wrk_threads}), `--no-sync`, "
        "`--reseed`, `--output`, `--only` (named scenarios alone, e.g. `--only post,hot_mix`: for working on one; "
        "writes no report unless `--output` is given), `--like-flush after` (the like events flushed after each run "
        "by the benchmark, not during it by the worker: a diagnostic; no report unless `--output` is given), "
        "`--server-env NAME=VALUE` (the served processes' environment only: a fast path switched off, "
        "[fast-paths.md](fast-paths.md); no report unless `--output` is given).",
        "",
        "### Machine and setup",
        "",
        f"- code: `{info['git']}`",
        f"- {info.get('nproc')} CPUs ({info.get('cpu', 'unknown CPU')}), {info.get('memory', '?')} memory; load average "
        f"at the start {f.get('load_start')}, at the end {info.get('load')}; Python {info.get('python')}, Django "
        f"{info.get('django')}, {info.get('database')}, Redis {info.get('redis')}, wrk {f.get('wrk', '?')}; all on "
        "this machine over loopback",
        f"- server: `{f.get('gunicorn_gthread')}`; each start picks a free port",
        f"- worker: `{bench.worker.command_line if bench.worker else '(not started)'}`, broker `{f.get('broker')}`",
        f"- load: `wrk -t{a.wrk_threads} -c{a.connections} -d{max(1, round(a.seconds))}s` with a Lua script (keep-alive "
        "connections; every request says `Accept-Encoding: gzip, deflate, br`, as browsers do); its `response()` "
        "sums the middleware's headers per wrk thread. Latencies are wrk's, client "
        "side over loopback; wrk shares the 2 CPUs with the server, PostgreSQL, Redis and the Celery worker.",
        f"- data: `bench.core`'s subject `{bench.subject.key}` (id {bench.subject.pk}): {f['comments']:,} comments, "
        f"{f['likeable']:,} of them published and public; {f['background']:,} background subjects of the same site "
        f"(the hot-key mix uses {len(bench.other_subjects)}); most-liked comment {bench.most_liked.pk} "
        f"({f['top_likes']:,} likes)",
        "",
        "### How it is measured",
        "",
        "- **Floors** (`bench/http_urls.py`): an empty Django view (`GET /bench/empty`: the widget page's floor), an "
        "empty anonymous DRF view (`GET /api/v1/bench/empty-anonymous`, a `comments.api.views.ApiView` returning `{}`: "
        "the API reads' floor), and `bench.likes`'s empty authenticated DRF view (`/api/v1/bench/empty`, the writes' "
        "floor) sent the write scenario's very requests (same tokens; PUT/DELETE alternating, or POST with a body). "
        "Each scenario's *floor req/s* is the mean of its floor's runs right before and right after it.",
        "- **Counts** (`bench/http_middleware.py`, first in `MIDDLEWARE`): SQL statements per request "
        "(`connection.execute_wrapper`) and the read caches' hits and misses (`infra.cachestats`, read before and "
        "after each request), in response headers; the floors pay for the same middleware. *cache hit ratio* is "
        "hits / (hits + misses); – when the caches were not consulted.",
        "- **cold**: the cache's Redis database (`REDIS_URL`) emptied with FLUSHDB and the server restarted, so its "
        "process-local caches are empty; **warm**: the next run, same server. The likes' Redis database is never "
        "flushed; the subject's like states are dropped at the start (likes put back as seeded) and before each "
        "like scenario's cold run, so the first likers page and the first like of each comment load its state from "
        "PostgreSQL. A like scenario's warm run replays the cold run's comments (wrk's seed is fixed), whose states "
        "the cold run loaded.",
        "- **deep pages**: cursors found by walking `next_cursor` from page 1 with a Python client; "
        + "; ".join(
            f"{mode.replace('_', '-')}: page {page:,}" + (f" ({note})" if note else "")
            for mode, (page, note) in f.get("deep", {}).items()
        )
        + ".",
        "- **walks**: one Python client follows `next_cursor` on one keep-alive connection. The whole walk asks for "
        "each page the moment it has the one before; the reader's walk waits "
        f"{READER_PAUSE * 1000:g} ms after each page, as a reader reading it, which leaves the server time to build "
        "the next page ahead (`COMMENTS_PAGE_PRELOAD`).",
        f"- **likes**: {LIKERS_PER_RUN} bench users per run (users who like nothing of the subject), each wrk thread "
        "with its own half; each (user, comment) pair is liked, then unliked on its next turn. Hot: comment of rank k "
        f"by like count chosen with weight 1/k^{ZIPF_EXPONENT:g}; uniform: any published public comment. The like "
        "events are flushed by the Celery worker (beat, every second) during the run; the benchmark waits for the "
        "stream to empty before the floor after it.",
        f"- **posts**: top-level comments with unique bodies by {POSTERS} users; `{LOAD_ENV_TEXT}` in the server's "
        "and the worker's environment (the users stand in for many people: each posts about as fast as a wrk "
        "connection can). The second moderation checks of the posts are queued in Redis and run in batches by the "
        "Celery worker (beat, every second); the benchmark waits for the queue to empty before the floor after it. The posts are removed and the counters restored at the "
        "end (as `bench.core` does).",
        "",
        "### Results",
        "",
    ]
    out += results_table(bench.rows)
    out += ["", "Requests and notes:", ""] + scenario_notes(bench.rows)
    out += [
        "",
        "Floors, every timed run (req/s):",
        "",
        "| floor | runs | req/s, each run | p50 ms (median) | p99 ms (median) | SQL/request |",
        "|---|---:|---|---:|---:|---:|",
    ]
    for key, runs in bench.floor_runs.items():
        out.append(
            f"| {bench.floor_loads[key].title} | {len(runs)} | {', '.join(f'{r.rps:,.0f}' for r in runs)} | "
            f"{statistics.median(r.p50 for r in runs):.2f} | {statistics.median(r.p99 for r in runs):.2f} | "
            f"{_fmt(runs[-1].queries, '.1f')} |"
        )
    out += ["", "### Memory", ""]
    if mem:
        ok = mem["ratio"] <= RSS_RATIO
        out += [
            "Per gunicorn worker, from `/proc/<pid>/status` when each server stopped (KiB):",
            "",
            "| server | peak VmHWM | VmRSS at the end |",
            "|---|---:|---:|",
            f"| served only the floors | {mem['floor_hwm']:,} | {mem['floor_rss']:,} |",
            f"| ran the scenarios (highest of {mem['servers']} servers; it served last: {mem['served']}) | "
            f"{mem['peak']:,} | {mem['rss']:,} |",
            "",
            f"Peak worker RSS {mem['ratio']:.2f} x the floors-only server's (target <= {RSS_RATIO:g} x): "
            f"**{'PASS' if ok else 'FAIL'}**.",
        ]
    else:
        out.append("Not measured (a server was missing).")
    if bench.comparison:
        out += [
            "",
            "### gthread or sync workers",
            "",
            f"Two servers side by side: `{f.get('gunicorn_gthread')}` and `{f.get('gunicorn_sync')}` (the production "
            "config with `-k sync --threads 1`: one request at a time per worker, no keep-alive). Warm (a short "
            "untimed run of each read first), the same load for each, which server goes first alternating. Their like "
            "runs find the like states that the runs above loaded (so fewer SQL statements per like than there: "
            "steady state rather than first touches).",
            "",
        ]
        out += comparison_table(bench)
        out += ["", comparison_verdict(bench)]
    out += ["", "### Notes", "", notes or f"{NOTES_START}\n_No notes written yet._\n{NOTES_END}", END]
    return "\n".join(out)


def write_block(path: Path, render_block) -> None:
    """Replace the http block of ``path`` (or append it), keeping its notes; the rest of the
    file stays byte for byte."""
    text = path.read_text() if path.exists() else ""
    start = text.find(START)
    end = text.find(END, start) if start >= 0 else -1
    if start >= 0 and end >= 0:
        old = text[start:end]
        n0, n1 = old.find(NOTES_START), old.find(NOTES_END)
        notes = old[n0 : n1 + len(NOTES_END)] if 0 <= n0 < n1 else ""
        text = text[:start] + render_block(notes) + text[end + len(END) :]
    else:
        text = text + ("" if not text else "\n" if text.endswith("\n") else "\n\n") + render_block("") + "\n"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    configure()
    apply_server_env(args.server_env)
    from django.conf import settings

    started_at = datetime.now(UTC)
    started = time.perf_counter()
    bench = HttpBench(args)
    bench.facts["load_start"] = " ".join(f"{x:.2f}" for x in os.getloadavg())
    bench.facts["broker"] = settings.CELERY_BROKER_URL.replace("guest:guest@", "guest:***@")
    version = subprocess.run(["wrk", "-v"], capture_output=True, text=True)
    bench.facts["wrk"] = (version.stdout + version.stderr).split(" [")[0].replace("wrk ", "").strip()
    bench.prepare()
    info = machine_facts(bench)  # the code as it was when the measurements started
    completed = False
    try:
        # With --like-flush after, the worker takes every queue but the likes one (the flush).
        bench.worker = CeleryWorker(
            queues=[q.name for q in settings.CELERY_TASK_QUEUES if q.name != "likes"]
            if args.like_flush == "after"
            else None
        )
        bench.worker.start()
        if args.only:
            bench.run_only([key.strip() for key in args.only.split(",") if key.strip()])
        else:
            bench.run_floors_only()
            loads = bench.run_reads(args.quick)
            bench.run_writes(loads, args.quick)
        if not (args.quick or args.no_sync or args.only):
            bench.run_sync_comparison(loads)  # type: ignore[possibly-undefined]  # read above unless --only
        completed = True
    except KeyboardInterrupt:
        log("bench: interrupted; stopping the server and the worker, putting the data back")
    finally:
        bench.teardown()
    info["load"] = " ".join(f"{x:.2f}" for x in os.getloadavg())
    took = time.perf_counter() - started
    print()
    print("\n".join(results_table(bench.rows)))
    mem = memory_summary(bench)
    if mem:
        print(
            f"\nworker peak RSS {mem['peak']:,} KiB vs floors-only {mem['floor_hwm']:,} KiB: x{mem['ratio']:.2f} "
            f"(target <= {RSS_RATIO:g})"
        )
    if bench.comparison:
        print()
        print("\n".join(comparison_table(bench)))
        print(comparison_verdict(bench))
    print(f"\nbench: run time {took / 60:.1f} min")
    if completed and args.output != "-":
        path = Path(args.output)
        if not path.is_absolute():
            path = Path.cwd() / path
        write_block(path, lambda notes: render(bench, info, started_at, took, notes))
        print(f"bench: wrote the http section of {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""What readers and writers get while a backing service is down, against real servers that the
tests stop and start themselves (never a mock):

- PostgreSQL down: the cached pages of a subject are still served (a page the database could
  not rebuild is its previous version, marked ``X-Comments-Stale: 1``), writes answer ``503``
  in the contract's error shape, and all is as before once the database is back. The test runs
  a PostgreSQL cluster of its own (``initdb`` in a temporary folder) and the service under
  gunicorn, since stopping the suite's own database would stop the suite.
- Redis down: reads and writes go to the database and nothing fails; once Redis is back the
  page cache is used again. The test runs a Redis server of its own.
"""

from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import tempfile
from pathlib import Path

import pytest
import redis
import redis.connection
from django.core.cache import caches

from comments.models import Comment
from infra import cachestats, pagecache, sharedcache

from ..api.conftest import API
from ..clocks import shifted_clock
from ..factories import CommentFactory, UserFactory
from ..servers import Service, free_port, wait_until

PG_BIN = Path("/usr/lib/postgresql") / (
    sorted(os.listdir("/usr/lib/postgresql"))[-1] if os.path.isdir("/usr/lib/postgresql") else ""
)
# COMMENTS_CACHE_RETRY while the test's own Redis is used: longer than any test takes, since the
# test that waits it out moves the clock instead (tests/clocks.py).
RETRY_SECONDS = 60.0


# --- a Redis server of the test's own ------------------------------------------------------


class RedisServer:
    def __init__(self):
        self.port = free_port()
        self.process = None

    def start(self) -> None:
        self.process = subprocess.Popen(
            ["redis-server", "--port", str(self.port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no"],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        wait_until(self.answers, "the test's Redis did not answer")

    def answers(self) -> bool:
        try:
            with socket.create_connection(("127.0.0.1", self.port), timeout=0.5) as s:
                s.sendall(b"PING\r\n")
                return s.recv(16).startswith(b"+PONG")
        except OSError:
            return False

    def keys(self) -> int:
        return redis.Redis(port=self.port).dbsize()

    def count_connection_attempts(self, monkeypatch) -> list[int]:
        """A list that gains an item each time a client of the service tries to connect to
        this server (the suite's own Redis, which the like state uses, is another port)."""
        attempts: list[int] = []
        connect = redis.connection.Connection._connect

        def counted(connection):
            if connection.port == self.port:
                attempts.append(self.port)
            return connect(connection)

        monkeypatch.setattr(redis.connection.Connection, "_connect", counted)
        return attempts

    def stop(self) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.terminate()
            self.process.wait(10)


@pytest.fixture
def own_redis_cache(settings):
    """The page cache in a Redis server that the test may stop and start."""
    server = RedisServer()
    server.start()
    settings.CACHES = {
        "default": {
            "BACKEND": "django_redis.cache.RedisCache",
            "LOCATION": f"redis://127.0.0.1:{server.port}/0",
            "OPTIONS": {"SOCKET_CONNECT_TIMEOUT": 0.5, "SOCKET_TIMEOUT": 0.5},
        }
    }
    settings.COMMENTS_CACHE_RETRY = RETRY_SECONDS
    # Every read goes to the shared cache (or, while it is away, the database), none to this
    # process's hot copies, which live a second whether the cache is there or not.
    settings.COMMENTS_HOT_PAGE_SECONDS = 0
    pagecache.reset()
    yield server
    server.stop()
    caches["default"].close()
    pagecache.reset()


def page(client, subject):
    response = client.get(f"{API}/subjects/{subject.pk}/comments", {"mode": "flat"})
    assert response.status_code == 200, response.content[:300]
    return [item["id"] for item in response.json()["items"]]


def test_with_redis_stopped_reads_and_writes_go_to_the_database_and_the_cache_returns_with_redis(
    own_redis_cache, api, client_for, subject, monkeypatch
):
    first = CommentFactory(subject=subject)
    assert page(api, subject) == [first.pk]
    hits = cachestats.counts.hits
    assert page(api, subject) == [first.pk]
    assert cachestats.counts.hits == hits + 1

    own_redis_cache.stop()
    author = client_for(UserFactory())
    posted = author.post(f"{API}/subjects/{subject.pk}/comments", {"body": "while Redis is down"}, format="json")
    assert posted.status_code == 201, posted.content
    # One connection attempt at most (the post's, or the first read's) before the process stops
    # asking the cache for a while.
    attempts = own_redis_cache.count_connection_attempts(monkeypatch)
    for _ in range(5):
        assert page(api, subject) == [first.pk, posted.json()["id"]]
    assert len(attempts) <= 1
    attempts.clear()
    assert client_for(UserFactory()).put(f"{API}/comments/{first.pk}/like").status_code == 200

    own_redis_cache.start()
    # Redis is back, but the process leaves the cache alone until COMMENTS_CACHE_RETRY seconds
    # after the failure: every read a miss, none stored. Its clock (infra.sharedcache's) is moved
    # past that, not waited for.
    clock = shifted_clock(monkeypatch, sharedcache)
    for _ in range(2):
        assert page(api, subject) == [first.pk, posted.json()["id"]]
    assert attempts == [] and own_redis_cache.keys() == 0
    clock.advance(RETRY_SECONDS + 1)  # the process tries the cache again
    misses = cachestats.counts.misses
    assert page(api, subject) == [first.pk, posted.json()["id"]]
    assert cachestats.counts.misses == misses + 1
    hits = cachestats.counts.hits
    page(api, subject)
    assert cachestats.counts.hits == hits + 1


# --- a PostgreSQL cluster of the test's own, and the service under gunicorn ------------------


class PostgresCluster:
    """A throwaway cluster in a temporary folder, run as the ``postgres`` user (PostgreSQL
    refuses to run as root)."""

    def __init__(self, folder: Path):
        self.folder = folder
        self.data = folder / "data"
        self.port = free_port()

    def _as_postgres(self, *args: str) -> None:
        command = [str(PG_BIN / "bin" / args[0]), *args[1:]]
        if os.geteuid() == 0:
            command = ["runuser", "-u", "postgres", "--", *command]
        done = subprocess.run(command, capture_output=True, text=True, timeout=120)
        assert done.returncode == 0, f"{args[0]} failed: {done.stdout[-1000:]} {done.stderr[-1000:]}"

    def create(self) -> None:
        self.folder.mkdir(parents=True, exist_ok=True)
        if os.geteuid() == 0:
            shutil.chown(self.folder, "postgres", "postgres")
        self._as_postgres("initdb", "-D", str(self.data), "-U", "postgres", "--auth=trust", "-E", "UTF8")
        self.start()

    def start(self) -> None:
        options = f"-p {self.port} -k {self.folder} -c listen_addresses=127.0.0.1 -c fsync=off"
        self._as_postgres("pg_ctl", "-D", str(self.data), "-o", options, "-w", "-l", str(self.folder / "log"), "start")

    def stop(self) -> None:
        self._as_postgres("pg_ctl", "-D", str(self.data), "-m", "fast", "-w", "stop")

    @property
    def url(self) -> str:
        return f"postgres://postgres@127.0.0.1:{self.port}/postgres"


@pytest.mark.skipif(not (PG_BIN / "bin" / "initdb").exists(), reason="PostgreSQL's server binaries are not installed")
def test_with_postgresql_stopped_cached_pages_are_served_and_writes_answer_503():
    folder = Path(tempfile.mkdtemp(prefix="availability-"))
    folder.chmod(0o755)  # the postgres user reaches its cluster's folder through it
    cluster = PostgresCluster(folder / "pg")
    redis_server = RedisServer()
    service = None
    try:
        cluster.create()
        redis_server.start()
        env = {
            key: value
            for key, value in os.environ.items()
            if key not in {"DATABASE_URL", "REDIS_URL", "LIKES_REDIS_URL", "CELERY_BROKER_URL", "COMMENTS_VAR_DIR"}
        }
        env.update(
            DJANGO_SETTINGS_MODULE="config.settings",
            DJANGO_SECRET_KEY="availability",
            DATABASE_URL=cluster.url,
            REDIS_URL=f"redis://127.0.0.1:{redis_server.port}/0",
            CELERY_BROKER_URL="memory://",
            COMMENTS_VAR_DIR=str(folder / "var"),
            RATE_LIMITS="off",
            COMMENTS_HOT_PAGE_SECONDS="0",
        )
        service = Service(env)
        service.manage("migrate", "--noinput")
        service.manage(
            "create_site",
            "avail",
            "--name",
            "Availability",
            "--origin",
            "https://host.example",
            "--sso-secret",
            "s3cret",
        )
        service.manage("create_user", "writer", "--password", "a-long-password")
        service.start()
        status, _, body = service.request(
            "POST", f"{API}/auth/token", {"username": "writer", "password": "a-long-password"}
        )
        assert status == 200, body
        token = json.loads(body)["token"]
        status, _, body = service.request("POST", f"{API}/subjects", {"site": "avail", "key": "post-1"}, token)
        assert status == 201, body
        subject_id = json.loads(body)["id"]
        comments_path = f"{API}/subjects/{subject_id}/comments?mode=flat"

        status, _, body = service.request("POST", comments_path, {"body": "the first"}, token)
        assert status == 201, body
        first = json.loads(body)["id"]
        assert service.request("GET", comments_path)[0] == 200  # cached now
        status, _, body = service.request("POST", comments_path, {"body": "the second"}, token)
        second = json.loads(body)["id"]
        status, headers, body = service.request("GET", comments_path)
        assert [item["id"] for item in json.loads(body)["items"]] == [first, second]
        assert "X-Comments-Stale" not in headers
        embed_path = "/embed/?site=avail&key=post-1"
        status, _, body = service.request("GET", embed_path)
        assert status == 200 and b"the second" in body

        # A third comment makes the cached pages out of date just before the database goes.
        status, _, body = service.request("POST", comments_path, {"body": "the third"}, token)
        assert status == 201, body
        cluster.stop()

        status, headers, body = service.request("GET", comments_path)
        assert status == 200, body
        assert headers.get("X-Comments-Stale") == "1"
        assert [item["id"] for item in json.loads(body)["items"]] == [first, second]
        status, headers, body = service.request("GET", embed_path)
        assert status == 200 and b"the second" in body and b"the third" not in body
        assert headers.get("X-Comments-Stale") == "1"

        status, headers, body = service.request("POST", comments_path, {"body": "refused"}, token)
        assert status == 503, body
        assert json.loads(body) == {
            "error": {"code": "unavailable", "message": "The service is unavailable for a moment; please try again."}
        }
        assert headers.get("Retry-After") == "5"
        status, _, body = service.request("GET", f"{API}/subjects/{subject_id}")
        assert status == 503 and json.loads(body)["error"]["code"] == "unavailable"

        cluster.start()
        wait_until(lambda: service.request("GET", "/healthz")[0] == 200, "the service did not see the database back")
        status, _, body = service.request("POST", comments_path, {"body": "the fourth"}, token)
        assert status == 201, body
        status, headers, body = service.request("GET", comments_path)
        assert "X-Comments-Stale" not in headers
        assert len(json.loads(body)["items"]) == 4
    finally:
        if service is not None:
            service.stop()
        redis_server.stop()
        try:
            cluster.stop()
        except AssertionError:
            pass  # already stopped, or never started
        shutil.rmtree(folder, ignore_errors=True)


def test_with_redis_stopped_rate_limits_still_hold_in_each_process(own_redis_cache, settings, client_for, subject):
    """Issue 33, F12: limits counted in the shared cache used to switch off while it was down.
    Each process now counts on its own until it is back."""
    settings.RATE_LIMITS = {"post": (3, 60)}
    author = client_for(UserFactory())

    def post(n: int):
        return author.post(f"{API}/subjects/{subject.pk}/comments", {"body": f"post {n}"}, format="json")

    own_redis_cache.stop()
    assert [post(n).status_code for n in range(3)] == [201, 201, 201]
    refused = post(3)
    assert refused.status_code == 429 and refused.json()["error"]["code"] == "rate_limited"
    assert int(refused["Retry-After"]) > 0
    assert Comment.objects.filter(subject=subject).count() == 3

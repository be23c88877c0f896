"""Real Celery workers for the tests that need one (with beat, killed at the worst moments).

Each worker is a subprocess in a session of its own (``celery -A config worker -B --pool solo
-Q <queue>``) on the test database, the suite's Redis for live state and a Redis database of its
own as broker (``TEST_CELERY_BROKER_URL``, else db 13 of the suite's Redis), emptied before and
after each test. A worker may run through a program of the test's (``program``) that stops it at a
chosen point (``pause``) until the test has SIGKILLed its whole process group.

Test modules use the fixtures by importing them: ``from ..workers import broker_url``."""

from __future__ import annotations

import os
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

REPO = Path(__file__).resolve().parents[1]
WAIT_SECONDS = 60.0  # every wait on a worker is bounded by this
LOG_TAIL_LINES = 150


# --- where the workers connect ---------------------------------------------------------------


def test_database_url() -> str:
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
            for k, v in (db.get("OPTIONS") or {}).items()
            if isinstance(v, (str, int))
        }
        query = f"?{urlencode(options)}" if options else ""
        return f"postgres://{auth}@{host}{port}/{quote(db['NAME'], safe='')}{query}"
    if connection.vendor == "sqlite":
        name = str(db["NAME"])
        if not name or name == ":memory:" or name.startswith("file:"):
            pytest.skip("an in-memory SQLite test database cannot be shared with a worker process")
        return "sqlite:///" + os.path.abspath(name)  # sqlite:////abs/path
    pytest.skip(f"no worker DATABASE_URL for the {connection.vendor} backend")


test_database_url.__test__ = False  # type: ignore[attr-defined]  # a helper, not a test


def _broker_url_for(redis_url: str) -> str:
    explicit = os.environ.get("TEST_CELERY_BROKER_URL")
    if explicit:
        return explicit
    parts = urlsplit(redis_url)
    return urlunsplit((parts.scheme, parts.netloc, "/13", "", ""))


def _same_redis_database(a: str, b: str) -> bool:
    pa, pb = urlsplit(a), urlsplit(b)
    return (pa.hostname, pa.port or 6379, pa.path.strip("/") or "0") == (
        pb.hostname,
        pb.port or 6379,
        pb.path.strip("/") or "0",
    )


@pytest.fixture
def broker_url(redis_url):
    """A Redis database of the workers' own as broker, empty before and after the test, so
    that tasks queued by one test's beat never reach the next test's worker."""
    url = _broker_url_for(redis_url)
    assert not _same_redis_database(url, redis_url), "the broker must not share the live state's Redis database"
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


class Workers:
    """Starts workers with beat on one queue, or on every queue for ``queue`` None (``env``:
    variables every one of them gets); ``close`` kills every worker started (before the database
    and Redis are emptied) and prints its log."""

    def __init__(self, tmp_path: Path, redis_url: str, broker_url: str, *, queue: str | None, env: dict[str, str]):
        self.tmp_path, self.queue = tmp_path, queue
        self.environment = dict(os.environ)
        self.environment.update(
            DJANGO_SETTINGS_MODULE="config.settings",
            DATABASE_URL=test_database_url(),
            REDIS_URL=redis_url,
            LIKES_REDIS_URL=redis_url,
            CELERY_BROKER_URL=broker_url,
            DJANGO_SECRET_KEY=os.environ.get("DJANGO_SECRET_KEY") or "worker-fault-tests",
            PYTHONUNBUFFERED="1",
            **env,
        )
        self.started: list[Worker] = []

    def start(self, *, program: list[str] | None = None, env: dict | None = None) -> Worker:
        """A worker run by ``python -m celery``, or by ``python -m <program...>`` (which ends by
        running Celery with the arguments that follow it)."""
        name = f"{self.queue or 'all'}-faults-{uuid.uuid4().hex[:10]}"
        log_path = self.tmp_path / f"{name}.log"
        log_file = open(log_path, "wb")  # noqa: SIM115 - the child process's output, closed by hand below
        command = [
            sys.executable,
            "-m",
            *(program or ["celery"]),
            "-A",
            "config",
            "worker",
            "-B",
            "--pool",
            "solo",
            *(["-Q", self.queue] if self.queue else []),
            "--without-mingle",
            "--without-gossip",
            "--loglevel",
            "info",
            "-s",
            str(self.tmp_path / f"{name}-beat-schedule"),
            "-n",
            f"{name}@%h",
        ]
        try:
            process = subprocess.Popen(
                command,
                cwd=REPO,
                env={**self.environment, **(env or {})},
                stdin=subprocess.DEVNULL,
                stdout=log_file,
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )
        except BaseException:
            log_file.close()
            raise
        self.started.append(Worker(name, process, log_path, log_file))
        return self.started[-1]

    def close(self) -> None:
        failures = []
        for w in self.started:
            try:
                w.kill()
            except Exception as exc:  # noqa: BLE001 - go on killing the others
                failures.append(f"{w.name}: {exc!r}")
        for w in self.started:
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


# --- pausing a worker where a test wants to kill it --------------------------------------------


def pause(pause_file: str) -> None:
    """Called by a paused worker's program at its pause point: writes ``PAUSE_FILE.reached``
    (with its pid) and waits while ``PAUSE_FILE`` exists, so the test can SIGKILL it there. A
    test run that never comes (killed before its cleanup) leaves it waiting ``5 * WAIT_SECONDS``
    at most, not for ever: then the worker dies on the spot, as if killed, never going on past."""
    with open(f"{pause_file}.reached.tmp", "w") as marker:
        marker.write(str(os.getpid()))
    os.replace(f"{pause_file}.reached.tmp", f"{pause_file}.reached")  # appears whole, pid included
    deadline = time.monotonic() + 5 * WAIT_SECONDS
    while os.path.exists(pause_file):
        if time.monotonic() > deadline:
            os._exit(70)
        time.sleep(0.05)


def paused_pid(pause_file: Path) -> int | None:
    """The pid a paused worker wrote on reaching its pause point, once written."""
    try:
        text = Path(f"{pause_file}.reached").read_text().strip()
    except FileNotFoundError:
        return None
    return int(text) if text else None


def run_celery(celery_arguments: list[str]) -> None:
    """The end of a paused worker's program: Celery's own command line, in this process."""
    from celery.bin.celery import main as celery_main

    sys.argv = ["celery", *celery_arguments]
    celery_main()

"""The suite's Citus cluster (``scripts/citus-cluster``, docs/citus.md) for the tests that change
it: stop a worker, add one and move shards onto it. They run only when the test database is that
script's coordinator (on ``CITUS_PORT``, its workers on the next ports), since they start and
stop its nodes; on plain PostgreSQL, SQLite or another Citus they skip.

The script runs with the test process's environment (``CITUS_DIR``, ``CITUS_PORT``), so it acts
on the cluster the test database lives on."""

from __future__ import annotations

import json
import os
import subprocess
from dataclasses import dataclass
from pathlib import Path

import psycopg
import pytest
from django.db import connection

from infra import citus

from .servers import REPO, wait_until
from .workers import test_database_url

SCRIPT = REPO / "scripts" / "citus-cluster"
DEFAULT_PORT = 5440  # the script's own default for CITUS_PORT
SCRIPT_SECONDS = 180
REBALANCE_SECONDS = 300.0  # a rebalance, a drain or a cancellation of the suite's small shards
JOB_ENDED = {"finished", "failed", "cancelled"}  # a Citus background job's final states


@dataclass(frozen=True)
class Cluster:
    """The coordinator (``port``) and the test database's name, as the script knows them."""

    port: int
    database: str

    def worker_port(self, n: int) -> int:
        return self.port + n

    def script(self, *args: str) -> str:
        """Run ``scripts/citus-cluster args...``; its output, or the test fails with its error."""
        done = subprocess.run(
            [str(SCRIPT), *args],
            cwd=REPO,
            env=dict(os.environ),
            capture_output=True,
            text=True,
            timeout=SCRIPT_SECONDS,
        )
        assert done.returncode == 0, f"citus-cluster {' '.join(args)}: {done.stdout[-1000:]} {done.stderr[-2000:]}"
        return done.stdout

    def node(self, port: int, database: str | None = None) -> psycopg.Connection:
        """An autocommit connection to one node (the coordinator's port, or a worker's)."""
        return psycopg.connect(
            host="127.0.0.1",
            port=port,
            user="postgres",
            dbname=database or self.database,
            autocommit=True,
            connect_timeout=10,
        )

    def coordinator(self) -> psycopg.Connection:
        return self.node(self.port)

    def third_worker_added(self) -> int:
        """Start the third worker (``add-worker``: the test database with the extension) and
        register it; Citus copies its metadata there, over what an earlier run left. Its port."""
        port = self.worker_port(3)
        self.script("add-worker", self.database)
        with self.coordinator() as db:
            db.execute("SELECT citus_add_node('127.0.0.1', %s)", [port])
        return port

    def third_worker_removed(self) -> None:
        """The cluster as ``start`` made it: no rebalance under way (cancelled), the third
        worker's shards moved back (``citus_drain_node``), the worker removed and stopped. Does
        nothing that is done already."""
        port = self.worker_port(3)
        with self.coordinator() as db:
            running = [
                job_id
                for (job_id,) in db.execute(
                    "SELECT job_id FROM pg_dist_background_job WHERE state::text <> ALL(%s)", [sorted(JOB_ENDED)]
                ).fetchall()
            ]
            for job_id in running:
                db.execute("SELECT citus_job_cancel(%s)", [job_id])

            def settled() -> bool:
                states = db.execute(
                    "SELECT state::text FROM pg_dist_background_job WHERE job_id = ANY(%s)", [running]
                ).fetchall()
                return all(state in JOB_ENDED for (state,) in states)

            if running:
                wait_until(settled, "the rebalance cancelled", seconds=REBALANCE_SECONDS)
            if db.execute("SELECT 1 FROM pg_dist_node WHERE nodeport = %s", [port]).fetchone():
                db.execute("SELECT citus_drain_node('127.0.0.1', %s)", [port])
                db.execute("CALL citus_cleanup_orphaned_resources()")
                db.execute("SELECT citus_remove_node('127.0.0.1', %s)", [port])
        self.script("stop-worker", "3")


def on_citus() -> bool:
    """Whether the test database is a Citus coordinator with workers (scripts/test-citus)."""
    if connection.vendor != "postgresql":
        return False
    with connection.cursor() as cursor:
        return citus.workers(cursor) > 0


def skip_on_citus(reason: str) -> None:
    """Skips a test of one server's internals (its plans, its WAL) when the test database is a
    Citus coordinator, where they are the workers'."""
    if on_citus():
        pytest.skip(f"on Citus {reason}")


def cluster_or_skip() -> Cluster:
    """The cluster under the test database; skips the test when that database is not
    ``scripts/citus-cluster``'s coordinator with its two workers."""
    if connection.vendor != "postgresql":
        pytest.skip(f"needs a Citus coordinator with workers, not {connection.vendor}")
    with connection.cursor() as cursor:
        if not citus.workers(cursor):
            pytest.skip("the test database is not a Citus coordinator with workers")
        cursor.execute(
            "SELECT nodeport FROM pg_dist_node WHERE groupid <> 0 AND noderole = 'primary' AND isactive ORDER BY 1"
        )
        ports = [port for (port,) in cursor.fetchall()]
    db = connection.settings_dict
    port = int(db.get("PORT") or 5432)
    script_port = int(os.environ.get("CITUS_PORT") or DEFAULT_PORT)
    # A third worker (port + 3) is one a rebalancing test added and has not removed yet.
    if (
        db.get("HOST") not in {"127.0.0.1", "localhost"}
        or port != script_port
        or ports[:2] != [port + 1, port + 2]
        or not set(ports) <= {port + 1, port + 2, port + 3}
    ):
        pytest.skip(
            f"the test database (port {port}, workers {ports}) is not scripts/citus-cluster's coordinator "
            f"on CITUS_PORT {script_port} with its workers: this test stops and adds its nodes"
        )
    if os.geteuid() != 0:
        pytest.skip("scripts/citus-cluster runs the nodes as the postgres user (runuser): needs root")
    return Cluster(port=port, database=str(db["NAME"]))


def shard_port(cursor, table: str, value: int) -> int:
    """The port of the node holding the shard of distributed ``table`` where its distribution
    column is ``value``."""
    cursor.execute(
        "SELECT nodeport FROM citus_shards WHERE table_name = %s::regclass "
        "AND shardid = get_shard_id_for_distribution_column(%s, %s)",
        [table, table, value],
    )
    rows = cursor.fetchall()
    assert len(rows) == 1, f"{table} {value}: placements {rows}"
    return rows[0][0]


def service_env(redis_url: str, broker_url: str, log: Path, **extra: str) -> dict[str, str]:
    """The environment of the service under gunicorn: the test database, the suite's Redis, the
    test's broker, no rate limits; its output (Django's log: tracebacks) goes to ``log``
    (``log_tail`` shows it when the test fails)."""
    return {
        **os.environ,
        "DJANGO_SETTINGS_MODULE": "config.settings",
        "DATABASE_URL": test_database_url(),
        "REDIS_URL": redis_url,
        "LIKES_REDIS_URL": redis_url,
        "CELERY_BROKER_URL": broker_url,
        "DJANGO_SECRET_KEY": os.environ.get("DJANGO_SECRET_KEY") or "citus-cluster",
        "RATE_LIMITS": "off",
        "MODERATION_BURST_LIMIT": "1000000",
        "GUNICORN_CMD_ARGS": f"--capture-output --error-logfile {log}",
        **extra,
    }


def log_tail(log: Path, lines: int = 200) -> str:
    try:
        text = log.read_text(errors="replace").splitlines()
    except FileNotFoundError:
        return f"(no log at {log})"
    return "\n".join(text[-lines:])


def body_of(answer) -> dict:
    """The JSON body of a ``Service.request`` answer (empty for none)."""
    _, _, body = answer
    return json.loads(body) if body else {}

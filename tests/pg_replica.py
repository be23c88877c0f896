"""The tests' hold on the read replica ``replica1``: waiting until it has replayed what the
primary wrote, pausing and resuming its replay, stopping and starting it (scripts/pg-replica).
In the suite's own runs ``replica1`` is a mirror of the test database (the primary itself), which
holds every write at once."""

from __future__ import annotations

import subprocess
import time
from pathlib import Path

import psycopg
from django.db import connections

from infra import replicas

SCRIPT = Path(__file__).resolve().parent.parent / "scripts" / "pg-replica"
WAIT_SECONDS = 30.0


def is_streaming_replica(alias: str = "replica1") -> bool:
    conn = connections[alias]
    if conn.vendor != "postgresql":
        return False
    with conn.cursor() as cursor:
        cursor.execute("SELECT pg_is_in_recovery()")
        return cursor.fetchone()[0]


def _position(alias: str, sql: str) -> int:
    with connections[alias].cursor() as cursor:
        cursor.execute(sql)
        return replicas.lsn_value(cursor.fetchone()[0]) or 0


def until_replayed(alias: str = "replica1") -> None:
    """Until ``alias`` has replayed everything the primary has written so far."""
    if not is_streaming_replica(alias):
        return
    target = replicas._primary_position() or 0  # posts commit asynchronously: where they end
    deadline = time.monotonic() + WAIT_SECONDS
    while _position(alias, "SELECT pg_last_wal_replay_lsn()::text") < target:
        if time.monotonic() > deadline:
            raise AssertionError(f"{alias} did not replay the primary's writes within {WAIT_SECONDS} s")
        time.sleep(0.02)


def _admin(alias: str = "replica1") -> psycopg.Connection:
    """A connection of its own to the replica server (not the test's), as the superuser."""
    s = connections[alias].settings_dict
    return psycopg.connect(host=s["HOST"], port=s["PORT"] or 5432, user=s["USER"], dbname="postgres", autocommit=True)


def pause(alias: str = "replica1") -> None:
    with _admin(alias) as conn:
        conn.execute("SELECT pg_wal_replay_pause()")
        # Pausing is a request; wait until replay has actually stopped.
        deadline = time.monotonic() + WAIT_SECONDS
        while conn.execute("SELECT pg_get_wal_replay_pause_state()").fetchone()[0] != "paused":
            if time.monotonic() > deadline:
                raise AssertionError("the replica did not pause")
            time.sleep(0.02)


def resume(alias: str = "replica1") -> None:
    with _admin(alias) as conn:
        conn.execute("SELECT pg_wal_replay_resume()")


def backend_pid(alias: str = "replica1") -> int:
    return connections[alias].connection.info.backend_pid


def terminate(pid: int, alias: str = "replica1") -> None:
    with _admin(alias) as conn:
        conn.execute("SELECT pg_terminate_backend(%s)", [pid])


def stop(alias: str = "replica1") -> None:
    subprocess.run([str(SCRIPT), "stop"], check=True, timeout=WAIT_SECONDS * 2)
    connections[alias].close()  # this thread's connection died with the server


def start(alias: str = "replica1") -> None:
    subprocess.run([str(SCRIPT), "start"], check=True, timeout=WAIT_SECONDS * 4, stdout=subprocess.DEVNULL)
    connections[alias].close()

import os
import subprocess
import sys
import textwrap
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from django.db import connection

from comments import ids

ROOT = Path(__file__).resolve().parents[2]


def test_ids_are_increasing_and_fit_in_53_bits():
    gen = ids.IdGenerator(worker=7)
    made = [gen.next_id() for _ in range(5000)]
    assert made == sorted(made)
    assert len(set(made)) == len(made)
    assert all(0 < i <= ids.MAX_ID for i in made)
    assert all((i >> ids.WORKER_SHIFT) & ids.MAX_WORKER == 7 for i in made)


def test_ids_never_repeat_when_the_clock_steps_back():
    now = [1_800_000_000.0]
    gen = ids.IdGenerator(worker=1, clock=lambda: now[0])
    first = [gen.next_id() for _ in range(10)]
    now[0] -= 5  # NTP step backwards
    later = [gen.next_id() for _ in range(3)]
    assert len(set(first + later)) == 13
    assert min(later) > max(first)


def test_the_time_of_an_id_and_the_id_floor_of_a_time_agree():
    moment = datetime(2026, 5, 1, 12, 0, tzinfo=UTC)
    floor = ids.id_floor_at(moment)
    assert ids.id_time(floor) == moment
    assert ids.id_floor_at(moment + timedelta(milliseconds=1)) > floor


def _database_url() -> str:
    settings = connection.settings_dict
    if connection.vendor == "sqlite":
        return "sqlite:///" + os.path.abspath(settings["NAME"])
    return f"postgres://{settings['USER']}@{settings['HOST']}:{settings['PORT'] or 5432}/{settings['NAME']}"


CHILD = textwrap.dedent(
    """
    import django, os, sys
    django.setup()
    from comments.ids import new_id
    print("\\n".join(str(new_id()) for _ in range(int(sys.argv[1]))))
    """
)


@pytest.mark.django_db(transaction=True)
def test_ids_are_unique_across_processes_made_at_the_same_time():
    env = {
        **os.environ,
        "DJANGO_SETTINGS_MODULE": "config.settings",
        "DATABASE_URL": _database_url(),
        "DJANGO_SECRET_KEY": "test",
        "PYTHONPATH": str(ROOT),
    }
    env.pop("REDIS_URL", None)
    procs = [
        subprocess.Popen(
            [sys.executable, "-c", CHILD, "3000"],
            env=env,
            cwd=ROOT,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for _ in range(4)
    ]
    outputs = [p.communicate(timeout=120) for p in procs]
    assert all(p.returncode == 0 for p in procs), [err for _, err in outputs]
    made = [int(line) for out, _ in outputs for line in out.split()]
    assert len(made) == 12000
    assert len(set(made)) == len(made)
    workers = {(i >> ids.WORKER_SHIFT) & ids.MAX_WORKER for i in made}
    assert len(workers) == 4  # each process leased its own worker number

"""``/readyz`` (comments/health.py): a process answers 503 until it has warmed up and its database
and Redis have answered, 200 from then on; a load balancer sends it no traffic before. Against
real servers: a Redis server that is not there yet, then started."""

from __future__ import annotations

import json
import os
import subprocess
from collections.abc import Iterator

import pytest
import redis

from comments import health
from config.warmup import warm_up
from infra import redislink

from ..servers import Service, free_port, wait_until


@pytest.fixture
def fresh_process() -> Iterator[None]:
    """This process as if it had just started: not warmed up, never ready."""
    health.reset_readiness()
    yield
    health.reset_readiness()


class LateRedis:
    """A Redis server on a port that nobody listens on until ``start``."""

    def __init__(self, folder) -> None:
        self.port = free_port()
        self.folder = folder
        self.process: subprocess.Popen | None = None

    @property
    def url(self) -> str:
        return f"redis://127.0.0.1:{self.port}/0"

    def start(self) -> None:
        self.process = subprocess.Popen(
            ["redis-server", "--port", str(self.port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no"],
            cwd=self.folder,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        wait_until(self.answers, "the test's Redis server did not answer")

    def answers(self) -> bool:
        try:
            return bool(redis.Redis(port=self.port, socket_timeout=1).ping())
        except redis.exceptions.ConnectionError:
            return False

    def stop(self) -> None:
        if self.process is not None:
            self.process.kill()
            self.process.wait(10)


@pytest.fixture
def late_redis(tmp_path) -> Iterator[LateRedis]:
    server = LateRedis(tmp_path)
    yield server
    server.stop()


@pytest.fixture
def like_state_on_late_redis(settings, late_redis) -> Iterator[LateRedis]:
    settings.LIKES_REDIS_URL = late_redis.url
    redislink.reset()
    yield late_redis
    redislink.reset()


def test_a_process_is_not_ready_until_it_has_warmed_up_then_is(api, db, fresh_process):
    before = api.get("/readyz")
    assert before.status_code == 503
    assert before.json()["ready"] is False
    assert before.json()["warm"] == "warming"
    assert before.json()["database"] == "ok"

    warm_up()

    after = api.get("/readyz")
    assert (after.status_code, after.json()["ready"]) == (200, True)
    assert api.get("/readyz").json() == {"ready": True}  # from now on without asking anything


def test_a_warmed_process_is_not_ready_until_its_redis_answers(api, db, fresh_process, like_state_on_late_redis):
    health.process_warmed()
    before = api.get("/readyz")
    assert before.status_code == 503
    assert (before.json()["warm"], before.json()["like_state"]) == ("ok", "down")

    like_state_on_late_redis.start()

    assert api.get("/readyz").status_code == 200


def test_an_outsider_learns_no_address_or_error_from_the_readiness_probe(
    api, db, fresh_process, like_state_on_late_redis
):
    """Unauthenticated, and asked with a query an outsider might try: fixed words only, never
    the address of the Redis that is down nor its error."""
    health.process_warmed()
    answer = api.get("/readyz?verbose=1&debug=true")
    assert answer.status_code == 503
    assert set(answer.json().values()) <= {False, "ok", "warming", "down", "absent"}
    port = like_state_on_late_redis.url.rsplit(":", 1)[-1].split("/")[0]
    assert port not in answer.content.decode()


def test_a_ready_process_stays_ready_when_its_redis_goes_away(api, db, fresh_process, like_state_on_late_redis):
    """An outage after the start is every host's: the service answers through it, and the load
    balancer must not take every host out (/healthz reports it)."""
    like_state_on_late_redis.start()
    health.process_warmed()
    assert api.get("/readyz").status_code == 200

    like_state_on_late_redis.stop()

    assert like_state_on_late_redis.answers() is False
    assert api.get("/readyz").status_code == 200


def test_a_gunicorn_worker_is_ready_once_warmed_up_and_its_redis_answers(tmp_path, late_redis):
    """The service under gunicorn with config/gunicorn.py, on an embedded default of its own and
    a like-state Redis that is not there when it starts."""
    env = {
        key: value
        for key, value in os.environ.items()
        if key not in ("DATABASE_URL", "DATABASE_REPLICA_URLS", "REDIS_URL", "CELERY_BROKER_URL")
    }
    env.update(
        DJANGO_SETTINGS_MODULE="config.settings",
        COMMENTS_VAR_DIR=str(tmp_path / "var"),
        DJANGO_SECRET_KEY=os.environ.get("DJANGO_SECRET_KEY") or "readiness",
        LIKES_REDIS_URL=late_redis.url,
    )
    service = Service(env)
    try:
        service.start()  # once /healthz answers: the database does
        status, _, body = service.request("GET", "/readyz")
        assert status == 503, body[:300]
        assert json.loads(body) == {
            "ready": False,
            "warm": "ok",
            "database": "ok",
            "cache": "absent",
            "like_state": "down",
        }

        late_redis.start()

        wait_until(lambda: service.request("GET", "/readyz")[0] == 200, "the worker did not become ready")
        assert json.loads(service.request("GET", "/readyz")[2]) == {"ready": True}
    finally:
        service.stop()

"""The read-replica router's rules (infra/replicas.py), read through ``replica1``: a second
connection to the test database (a mirror, tests/settings.py) in the suite's runs, a real
streaming replica under scripts/test-replica (which also runs tests/replica/, where the replica
lags, pauses and stops)."""

from __future__ import annotations

import socket
import threading
from contextlib import ExitStack, contextmanager

import pytest
from django.core.cache import cache
from django.core.exceptions import ImproperlyConfigured
from django.db import connections, router, transaction
from django.http import HttpResponse
from django.test.utils import CaptureQueriesContext
from rest_framework.test import APIClient

from comments import services
from comments.models import Comment
from config.env import database_from_url, replica_databases
from infra import replicas
from tests.citus_cluster import skip_on_citus
from tests.factories import CommentFactory, SubjectFactory, UserFactory
from tests.pg_replica import until_replayed

pytestmark = pytest.mark.django_db(transaction=True, databases=["default", "replica1"])


@pytest.fixture(autouse=True)
def _not_on_citus():
    skip_on_citus("reads stay on the coordinator whatever replicas are named (tests/citus/test_read_replicas.py)")


def vendor() -> str:
    return connections["default"].vendor


@contextmanager
def reads():
    """The statements each database ran inside: ``(primary, replica)``."""
    with ExitStack() as stack:
        primary = stack.enter_context(CaptureQueriesContext(connections["default"]))
        replica = stack.enter_context(CaptureQueriesContext(connections["replica1"]))
        yield primary, replica


def touching(captured, table: str) -> list[str]:
    return [q["sql"] for q in captured.captured_queries if f'"{table}"' in q["sql"] or f" {table} " in q["sql"]]


def signed_in(user) -> tuple[APIClient, str]:
    raw, _ = services.token_issue(user=user)
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Bearer {raw}")
    return client, raw


def test_an_anonymous_reader_reads_the_comments_from_the_replica(routed):
    subject = SubjectFactory()
    CommentFactory(subject=subject, body="read me from the replica")
    until_replayed()
    with reads() as (primary, replica):
        response = APIClient().get(f"/api/v1/subjects/{subject.pk}/comments")
    assert response.status_code == 200
    assert "read me from the replica" in response.content.decode()
    assert touching(replica, "comment_index")
    assert not touching(primary, "comment_index")


def test_a_request_that_writes_uses_the_primary_alone_and_pins_its_client_to_its_write(routed):
    subject = SubjectFactory()
    client, raw = signed_in(UserFactory())
    with reads() as (primary, replica):
        response = client.post(f"/api/v1/subjects/{subject.pk}/comments", {"body": "a write"}, format="json")
    assert response.status_code == 201
    assert touching(primary, "comment_index")
    assert replica.captured_queries == []
    pinned = cache.get(replicas._pin_key("t:" + raw))
    if vendor() == "postgresql":
        with connections["default"].cursor() as cursor:
            cursor.execute("SELECT pg_current_wal_insert_lsn()::text")
            now = replicas.lsn_value(cursor.fetchone()[0])
        assert 0 < replicas.lsn_value(pinned) <= now
    else:
        assert pinned == ""  # SQLite has no WAL position: the client reads the primary until the entry expires


def test_a_client_whose_write_no_replica_has_replayed_reads_the_primary(routed):
    subject = SubjectFactory()
    CommentFactory(subject=subject)
    client, raw = signed_in(UserFactory())
    cache.set(replicas._pin_key("t:" + raw), "FFFFFFFF/FFFFFFFF", 60)
    until_replayed()
    with reads() as (primary, replica):
        assert client.get(f"/api/v1/subjects/{subject.pk}/comments").status_code == 200
    assert touching(primary, "comment_index")
    assert not touching(replica, "comment_index")
    # Someone else, who wrote nothing, reads the replica meanwhile.
    other, _ = signed_in(UserFactory())
    with reads() as (primary, replica):
        assert other.get(f"/api/v1/subjects/{subject.pk}/comments").status_code == 200
    assert touching(replica, "comment_index")
    assert not touching(primary, "comment_index")


def test_a_client_reads_the_replica_again_once_it_has_replayed_the_write(routed):
    subject = SubjectFactory()
    client, _ = signed_in(UserFactory())
    assert client.post(f"/api/v1/subjects/{subject.pk}/comments", {"body": "mine"}, format="json").status_code == 201
    until_replayed()
    with reads() as (primary, replica):
        response = client.get(f"/api/v1/subjects/{subject.pk}/comments")
    assert "mine" in response.content.decode()
    if vendor() == "postgresql":
        # replica1 has replayed the write (a mirror is the primary itself; a real replica was
        # waited for above), and its probe says so.
        assert touching(replica, "comment_index") and not touching(primary, "comment_index")
    else:
        assert touching(primary, "comment_index") and not touching(replica, "comment_index")


def test_credentials_are_read_on_the_primary(routed):
    subject = SubjectFactory()
    client, _ = signed_in(UserFactory())
    until_replayed()
    with reads() as (primary, replica):
        assert client.get(f"/api/v1/subjects/{subject.pk}/comments").status_code == 200
    assert touching(replica, "comment_index")
    assert touching(primary, "comments_apitoken")
    assert not touching(replica, "comments_apitoken")


def test_transactions_locks_writes_and_work_outside_requests_read_the_primary(routed, rf):
    seen = {}

    def view(request):
        seen["read"] = router.db_for_read(Comment)
        with transaction.atomic():
            seen["read in a transaction"] = router.db_for_read(Comment)
        seen["select_for_update"] = Comment.objects.select_for_update().db
        seen["get_or_create"] = router.db_for_write(Comment)
        with replicas.primary_reads():
            seen["primary_reads"] = router.db_for_read(Comment)
        return HttpResponse()

    replicas.ReplicaMiddleware(view)(rf.get("/"))
    assert seen == {
        "read": "replica1",
        "read in a transaction": "default",
        "select_for_update": "default",
        "get_or_create": "default",
        "primary_reads": "default",
    }
    replicas.ReplicaMiddleware(view)(rf.post("/"))
    assert set(seen.values()) == {"default"}
    # A Celery task, a management command, the shell: no request, the primary.
    assert router.db_for_read(Comment) == "default"


def test_healthz_reports_each_replica(routed):
    response = APIClient().get("/healthz")
    assert response.status_code == 200
    assert response.json()["replicas"] == {"replica1": "ok"}


def test_migrations_run_on_the_primary_only(routed):
    assert router.allow_migrate("default", "comments")
    assert not router.allow_migrate("replica1", "comments")


class _RefusingServer:
    """A TCP port that accepts connections and closes them at once, counting them: a database
    server that is down, seen from a client."""

    def __init__(self):
        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(16)
        self.port = self.sock.getsockname()[1]
        self.accepted = 0
        threading.Thread(target=self._serve, daemon=True).start()

    def _serve(self):
        while True:
            try:
                conn, _ = self.sock.accept()
            except OSError:
                return
            self.accepted += 1
            conn.close()

    def close(self):
        self.sock.close()


def test_a_replica_that_is_down_is_left_alone_and_the_primary_answers(routed, caplog):
    subject = SubjectFactory()
    CommentFactory(subject=subject, body="still here")
    replica = connections["replica1"]
    saved = dict(replica.settings_dict)
    replica.close()
    server = _RefusingServer()
    if vendor() == "postgresql":
        replica.settings_dict.update(HOST="127.0.0.1", PORT=str(server.port))
    else:
        replica.settings_dict["NAME"] = "/nonexistent-folder/replica.sqlite3"
    try:
        health = APIClient().get("/healthz")
        assert health.status_code == 200 and health.json()["replicas"] == {"replica1": "down"}
        first = APIClient().get(f"/api/v1/subjects/{subject.pk}/comments")
        second = APIClient().get(f"/api/v1/subjects/{subject.pk}/comments")
        assert first.status_code == second.status_code == 200
        assert "still here" in first.content.decode() and "still here" in second.content.decode()
        assert [r.message for r in caplog.records if "replica replica1 unavailable" in r.message][:1]
        if vendor() == "postgresql":
            assert server.accepted == 2  # /healthz measured it; the second reader did not try it again
            replicas.reset()  # the breaker's period is over
            assert APIClient().get(f"/api/v1/subjects/{subject.pk}/comments").status_code == 200
            assert server.accepted == 3
    finally:
        replica.close()
        replica.settings_dict.clear()
        replica.settings_dict.update(saved)
        server.close()


def test_a_page_the_cache_shares_is_built_from_a_source_holding_every_earlier_write(routed, settings):
    settings.COMMENTS_PAGE_CACHE_TTL = 300
    # A real replica of this shared server trails other databases' writes: time to catch up.
    settings.DATABASE_REPLICA_CATCH_UP = 10.0
    subject = SubjectFactory()
    CommentFactory(subject=subject, body="cached for everyone")
    until_replayed()
    with reads() as (primary, replica):
        response = APIClient().get(f"/api/v1/subjects/{subject.pk}/comments")
    assert "cached for everyone" in response.content.decode()
    assert [q for q in primary.captured_queries if "pg_current_wal_insert_lsn" in q["sql"]] or vendor() != "postgresql"
    if vendor() == "postgresql":
        # The replica had replayed up to the primary's position when the build began.
        assert touching(replica, "comment_index") and not touching(primary, "comment_index")
    else:
        # No position to compare on SQLite: the primary builds it.
        assert touching(primary, "comment_index") and not touching(replica, "comment_index")


def test_replica_urls_become_mirrored_postgresql_aliases_with_a_short_connect_timeout():
    primary = database_from_url("postgres://u@primary/comments")
    found = replica_databases(["postgres://u@r1/comments", "postgres://u@r2:6432/comments?connect_timeout=9"], primary)
    assert list(found) == ["replica1", "replica2"]
    assert found["replica1"]["HOST"] == "r1" and found["replica1"]["OPTIONS"]["connect_timeout"] == 2
    assert found["replica2"]["PORT"] == "6432" and found["replica2"]["OPTIONS"]["connect_timeout"] == "9"
    assert found["replica1"]["TEST"] == {"MIRROR": "default"}
    assert replica_databases([], primary) == {}
    with pytest.raises(ImproperlyConfigured):
        replica_databases(["postgres://u@r1/comments"], database_from_url("sqlite:///x.db"))
    with pytest.raises(ImproperlyConfigured):
        replica_databases(["mysql://u@r1/comments"], primary)


def test_a_task_reads_the_primary_even_run_eagerly_inside_a_request_that_reads_a_replica(routed, rf):
    from config.celery import app

    @app.task(name="tests.where_reads_go")
    def where_reads_go():
        return router.db_for_read(Comment)

    seen: dict[str, object] = {}

    def view(request):
        seen["request"] = router.db_for_read(Comment)
        seen["task"] = where_reads_go.apply().result
        return HttpResponse()

    replicas.ReplicaMiddleware(view)(rf.get("/"))
    assert seen == {"request": "replica1", "task": "default"}


def test_a_function_decorated_to_read_the_primary_keeps_each_call_apart(routed, rf):
    """One decorator instance serves every call: nested and concurrent calls must each restore
    what they found."""
    seen = []

    @replicas.primary_reads()
    def exact(depth):
        seen.append(router.db_for_read(Comment))
        if depth:
            exact(depth - 1)
        seen.append(router.db_for_read(Comment))

    def view(request):
        exact(2)
        seen.append(router.db_for_read(Comment))
        return HttpResponse()

    replicas.ReplicaMiddleware(view)(rf.get("/"))
    assert seen == ["default"] * 6 + ["replica1"]


def test_a_users_write_on_one_device_keeps_their_other_devices_on_the_primary(routed):
    subject = SubjectFactory()
    user = UserFactory()
    phone, _ = signed_in(user)
    laptop, _ = signed_in(user)
    stranger, _ = signed_in(UserFactory())
    assert (
        phone.post(f"/api/v1/subjects/{subject.pk}/comments", {"body": "from the phone"}, format="json").status_code
        == 201
    )
    assert cache.get(replicas._pin_key(f"u:{user.pk}")) is not None  # the write was kept under the user
    # As if no replica had replayed it yet.
    cache.set(replicas._pin_key(f"u:{user.pk}"), "FFFFFFFF/FFFFFFFF", 60)
    until_replayed()
    with reads() as (primary, replica):
        assert "from the phone" in laptop.get(f"/api/v1/subjects/{subject.pk}/comments").content.decode()
    assert touching(primary, "comment_index") and not touching(replica, "comment_index")
    with reads() as (primary, replica):
        assert "from the phone" in stranger.get(f"/api/v1/subjects/{subject.pk}/comments").content.decode()
    assert touching(replica, "comment_index") and not touching(primary, "comment_index")


def test_only_a_request_that_wrote_to_the_primary_pins_its_client(routed, rf):
    user = UserFactory()
    _, raw = signed_in(user)

    def reads_only(request):
        Comment.objects.count()
        return HttpResponse()

    def writes(request):
        Comment.objects.filter(pk=-1).update(like_count=0)  # an UPDATE, even of no row
        return HttpResponse()

    replicas.ReplicaMiddleware(reads_only)(rf.post("/", HTTP_AUTHORIZATION=f"Bearer {raw}"))
    assert cache.get(replicas._pin_key("t:" + raw)) is None
    replicas.ReplicaMiddleware(writes)(rf.post("/", HTTP_AUTHORIZATION=f"Bearer {raw}"))
    assert cache.get(replicas._pin_key("t:" + raw)) is not None


def test_the_end_of_the_last_record_is_the_page_boundary_when_the_insert_position_is_past_a_header():
    """``pg_current_wal_insert_lsn()`` points past the next page's header when the last record
    ended a page, where a replica that replayed it all reports the page's end."""
    page = replicas.WAL_PAGE
    assert replicas._record_end(5 * page + 24) == 5 * page  # a page's short header
    assert replicas._record_end(2048 * page + 40) == 2048 * page  # a segment's first page, long header
    assert replicas._record_end(5 * page + 64) == 5 * page + 64  # inside a page: the record's end
    assert replicas._record_end(5 * page) == 5 * page

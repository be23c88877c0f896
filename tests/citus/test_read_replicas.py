"""Read replicas are plain PostgreSQL's (infra/replicas.py): a writer is kept on the primary
until a replica has replayed the primary's WAL past its write. A Citus coordinator's WAL does
not hold the rows its workers write, so no position of it could say a replica holds a write.
On a coordinator the replicas named are ignored and every read stays there (docs/citus.md)."""

from __future__ import annotations

import pytest
from django.db import connections
from django.test.utils import CaptureQueriesContext
from rest_framework.test import APIClient

from comments import services
from infra import replicas

from ..citus_cluster import on_citus
from ..factories import CommentFactory, SubjectFactory, UserFactory

pytestmark = pytest.mark.django_db(transaction=True, databases=["default", "replica1"])


def test_on_a_coordinator_every_read_stays_there_whatever_replicas_are_named(routed, caplog):
    if not on_citus():
        pytest.skip("the database is not a Citus coordinator with workers (scripts/test-citus runs this)")
    subject = SubjectFactory()
    CommentFactory(subject=subject, body="read from the coordinator")
    raw, _ = services.token_issue(user=UserFactory())
    writer = APIClient()
    writer.credentials(HTTP_AUTHORIZATION=f"Bearer {raw}")
    with (
        CaptureQueriesContext(connections["default"]) as coordinator,
        CaptureQueriesContext(connections["replica1"]) as replica,
    ):
        anonymous = APIClient().get(f"/api/v1/subjects/{subject.pk}/comments")
        posted = writer.post(f"/api/v1/subjects/{subject.pk}/comments", {"body": "a write"}, format="json")
        read_back = writer.get(f"/api/v1/subjects/{subject.pk}/comments")
    assert anonymous.status_code == 200 and "read from the coordinator" in anonymous.content.decode()
    assert posted.status_code == 201
    assert "a write" in read_back.content.decode()
    assert replica.captured_queries == []
    assert any("comment_index" in query["sql"] for query in coordinator.captured_queries)
    assert replicas.replica_aliases() == []
    assert replicas.replica_states() == {}

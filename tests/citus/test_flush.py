"""The suite's flush on a Citus coordinator (tests/citus_flush.py) empties the database as
Django's ``TRUNCATE`` does, by deleting the rows there are, each table before those it points at."""

from __future__ import annotations

import pytest
from django.core.management import call_command
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from comments import services
from likes.models import Like
from moderation.models import Report
from notifications.models import Subscription

from ..citus_cluster import on_citus
from ..factories import CommentFactory, SiteFactory, SubjectFactory, UserFactory

pytestmark = pytest.mark.django_db(transaction=True)


def _tables_holding_rows() -> list[str]:
    tables = sorted(connection.introspection.django_table_names(only_existing=True, include_views=False))
    with connection.cursor() as cursor:
        return [
            table
            for table in tables
            if cursor.execute(f"SELECT EXISTS (SELECT 1 FROM {connection.ops.quote_name(table)})").fetchone()[0]
        ]


def test_the_flush_deletes_every_row_written_child_tables_first():
    if not on_citus():
        pytest.skip("the database is not a Citus coordinator with workers (scripts/test-citus runs this)")
    site = SiteFactory()
    subject = SubjectFactory(site=site)
    author, reader = UserFactory(), UserFactory()
    parent = CommentFactory(subject=subject, author=author)
    reply = CommentFactory(subject=subject, author=reader, reply_to=parent)
    Like.objects.create(comment_id=reply.id, subject_id=subject.id, user=author, created_at=timezone.now())
    Report.objects.create(comment_id=reply.id, subject_id=subject.id, user=author, reason="spam")
    Subscription.objects.create(user=reader, subject=subject, state="subscribed")
    services.token_issue(user=reader)
    written = _tables_holding_rows()
    # Reference tables (users, sites), distributed ones (comments, likes, reports) and the
    # coordinator's own (tokens), with foreign keys between them.
    assert {"comments_user", "comments_site", "comment_index", "likes_like", "moderation_report"} <= set(written)

    with CaptureQueriesContext(connection) as flushed:
        # As Django's TransactionTestCase flushes after a test.
        call_command("flush", verbosity=0, interactive=False, reset_sequences=False, inhibit_post_migrate=True)

    assert _tables_holding_rows() == []
    statements = [query["sql"] for query in flushed.captured_queries]
    assert not [sql for sql in statements if "TRUNCATE" in sql]
    deleted = [sql.split('"')[1] for sql in statements if sql.startswith("DELETE FROM")]
    assert sorted(deleted) == written
    # Every table's rows went before the rows they point at.
    assert deleted.index("likes_like") < deleted.index("comment_index") < deleted.index("comment_subject")
    assert deleted.index("comment_index") < deleted.index("comments_user")

"""The migrations to the Citus keys, run on a database that holds rows of every comment table:
the rows stay, review tasks get their comment's subject, and (on PostgreSQL) the keys and
foreign keys are composite and enforced; and back."""

from __future__ import annotations

import pytest
from django.db import IntegrityError, connection, transaction
from django.db.migrations.executor import MigrationExecutor
from django.utils import timezone

from ..factories import CommentFactory, SubjectFactory, UserFactory

BEFORE = [
    ("comments", "0004_site_signin_methods"),
    ("likes", "0003_drop_liked_by_user_index"),
    ("moderation", "0003_audit_decisions_by_comment"),
    ("notifications", "0002_references_unchecked"),
]
TABLES = [
    "comment_index",
    "comment_content",
    "likes_like",
    "likes_stalelikestate",
    "moderation_report",
    "moderation_task",
    "notifications_subscription",
]


def _migrate(targets):
    executor = MigrationExecutor(connection)
    executor.loader.build_graph()
    executor.migrate(targets)


def _latest():
    executor = MigrationExecutor(connection)
    return executor.loader.graph.leaf_nodes()


def _count(table):
    with connection.cursor() as cursor:
        cursor.execute(f"SELECT count(*) FROM {connection.ops.quote_name(table)}")
        return cursor.fetchone()[0]


def _primary_key(table):
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT array(SELECT a.attname FROM unnest(i.indkey) AS k(n) "
            "JOIN pg_attribute a ON a.attrelid = i.indrelid AND a.attnum = k.n) "
            "FROM pg_index i WHERE i.indrelid = %s::regclass AND i.indisprimary",
            [table],
        )
        return cursor.fetchone()[0]


@pytest.fixture
def old_schema_with_rows(transactional_db):
    """Every comment table of the schema before the Citus keys, holding rows; the latest schema
    again afterwards, whatever happened."""
    site_user = UserFactory()
    subject = SubjectFactory()
    root = CommentFactory(subject=subject, author=site_user)
    reply = CommentFactory(subject=subject, reply_to=root)
    _migrate(BEFORE)
    try:
        now = connection.ops.adapt_datetimefield_value(timezone.now())
        with connection.cursor() as cursor:
            cursor.execute(
                "INSERT INTO likes_like (comment_id, user_id, subject_id, created_at, active, version) VALUES (%s, %s, %s, %s, %s, 1)",
                [root.pk, site_user.pk, subject.pk, now, True],
            )
            cursor.execute(
                "INSERT INTO likes_stalelikestate (comment_id, subject_id, created_at) VALUES (%s, %s, %s)",
                [root.pk, subject.pk, now],
            )
            cursor.execute(
                "INSERT INTO moderation_report (comment_id, user_id, subject_id, reason, detail, created_at) VALUES (%s, %s, %s, 'spam', '', %s)",
                [reply.pk, site_user.pk, subject.pk, now],
            )
            cursor.execute(
                "INSERT INTO moderation_task (comment_id, site_id, reasons, priority, state, decision, created_at) "
                "VALUES (%s, %s, '[]', 20, 'open', '', %s)",
                [reply.pk, subject.site_id, now],
            )
            cursor.execute(
                "INSERT INTO notifications_subscription (user_id, subject_id, state, created_at) VALUES (%s, %s, 'subscribed', %s)",
                [site_user.pk, subject.pk, now],
            )
        yield subject, root, reply, site_user
    finally:
        _migrate(_latest())


def test_the_keys_take_the_subject_on_a_populated_database(old_schema_with_rows):
    subject, root, reply, site_user = old_schema_with_rows
    counts = {table: _count(table) for table in TABLES}
    _migrate(_latest())
    assert {table: _count(table) for table in TABLES} == counts
    with connection.cursor() as cursor:
        cursor.execute("SELECT comment_id, subject_id FROM moderation_task")
        assert cursor.fetchall() == [(reply.pk, subject.pk)]
    if connection.vendor != "postgresql":
        return  # SQLite keeps its single-column keys
    assert _primary_key("comment_index") == ["id", "subject_id"]
    assert _primary_key("comment_content") == ["comment_id", "subject_id"]
    assert _primary_key("likes_like") == ["id", "subject_id"]
    assert _primary_key("moderation_task") == ["id", "subject_id"]
    other = SubjectFactory(site=subject.site)

    def like_naming_another_subject():
        with transaction.atomic(), connection.cursor() as cursor:
            cursor.execute(
                "INSERT INTO likes_like (comment_id, user_id, subject_id, created_at, active, version) "
                "VALUES (%s, %s, %s, now(), true, 1)",
                [reply.pk, site_user.pk, other.pk],
            )
            cursor.execute("SET CONSTRAINTS ALL IMMEDIATE")  # the key is checked now, not at the commit

    with pytest.raises(IntegrityError, match="likes_like_comment_id"):
        like_naming_another_subject()


def test_the_keys_go_back_to_single_columns(old_schema_with_rows):
    _migrate(_latest())
    _migrate(BEFORE)
    if connection.vendor == "postgresql":
        assert _primary_key("comment_index") == ["id"]
        assert _primary_key("likes_like") == ["id"]
        with connection.cursor() as cursor:
            cursor.execute(
                "SELECT count(*) FROM pg_constraint WHERE contype = 'f' AND confrelid = 'comment_index'::regclass "
                "AND array_length(conkey, 1) = 1"
            )
            assert cursor.fetchone()[0] == 6  # reply_to, root, content, like, report, task
    assert _count("moderation_report") == 1

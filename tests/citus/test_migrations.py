"""The migrations to the Citus keys, run on a database that holds rows of every comment table:
the rows stay, review tasks get their comment's subject, and (on PostgreSQL) the keys and
foreign keys are composite and enforced; and back. Then the subjects' keys' table (comments
0008): every subject gets its row, and back."""

from __future__ import annotations

import pytest
from django.db import IntegrityError, connection, transaction
from django.db.migrations.executor import MigrationExecutor
from django.utils import timezone

from ..citus_cluster import on_citus
from ..factories import CommentFactory, SiteFactory, SubjectFactory, UserFactory

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


@pytest.fixture(autouse=True)
def not_distributed(django_db_setup, django_db_blocker):
    with django_db_blocker.unblock():
        distributed = on_citus()
    if distributed:
        pytest.skip(
            "back past the composite keys is not a way Citus can go: it keeps no key without the "
            "distribution column (a Citus deployment goes back by its backups, docs/citus.md)"
        )


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


def _rows(sql):
    with connection.cursor() as cursor:
        cursor.execute(sql)
        return set(cursor.fetchall())


def _insert_subject(site_id, key):
    now = connection.ops.adapt_datetimefield_value(timezone.now())
    with connection.cursor() as cursor:
        cursor.execute(
            "INSERT INTO comment_subject (site_id, key, title, url, mode, state, comment_count, root_count, "
            "floor_seq, created_at) VALUES (%s, %s, '', '', 'flat', 'open', 0, 0, 0, %s)",
            [site_id, key, now],
        )


def _unique_site_key():
    with connection.cursor() as cursor:
        constraints = connection.introspection.get_constraints(cursor, "comment_subject")
    return [name for name, c in constraints.items() if c["unique"] and sorted(c["columns"]) == ["key", "site_id"]]


def test_every_subject_gets_its_key_row_on_a_populated_database_and_back(transactional_db):
    one, other = SiteFactory(), SiteFactory()
    first = SubjectFactory(site=one)
    SubjectFactory(site=one)
    SubjectFactory(site=other, key=first.key)
    CommentFactory(subject=first)
    _migrate([("comments", "0007_guests")])
    try:
        assert "comment_subject_key" not in connection.introspection.table_names()
        assert _unique_site_key() == ["subject_lookup_by_site_key"]
        with pytest.raises(IntegrityError), transaction.atomic():
            _insert_subject(one.pk, first.key)
        _insert_subject(other.pk, "made-before-the-keys")
        subjects = _rows("SELECT site_id, key, id FROM comment_subject")
        assert len(subjects) == 4

        _migrate([("comments", "0008_subject_keys")])
        assert _rows("SELECT site_id, key, subject_id FROM comment_subject_key") == subjects
        assert _unique_site_key() == []
        if connection.vendor == "postgresql":
            assert _primary_key("comment_subject_key") == ["site_id", "key"]
    finally:
        _migrate(_latest())

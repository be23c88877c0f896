"""The Citus check fails on what Citus would refuse or could not route, and passes today's
schema (scripts/check-citus-schema runs it on the hot queries' captured SQL)."""

from __future__ import annotations

import json

import pytest
from django.core.management import CommandError, call_command
from django.db import connection

from comments import citus

ROUTED = [
    'SELECT "comment_index"."id" FROM "comment_index" WHERE ("comment_index"."subject_id" = %s AND "comment_index"."id" = %s)',
    "SELECT c.id FROM (SELECT * FROM comment_index c WHERE c.subject_id = %s LIMIT 3) c "
    "LEFT JOIN comment_index t ON t.id = c.reply_to_id AND t.subject_id = c.subject_id "
    "LEFT JOIN comments_user a ON a.id = c.author_id",
    "INSERT INTO likes_like (comment_id, user_id, subject_id) SELECT x.c, x.u, x.s FROM "
    "unnest(%s::bigint[], %s::bigint[], %s::bigint[]) AS x(c, u, s) ON CONFLICT (comment_id, user_id, subject_id) DO NOTHING",
    "UPDATE likes_like SET active = x.a FROM unnest(%s::bigint[], %s::boolean[]) AS x(id, a) "
    "WHERE likes_like.id = x.id AND likes_like.subject_id = %s",
    "SELECT c.id FROM comment_index c WHERE c.subject_id IN (%s, %s) AND c.id = ANY(%s::bigint[])",
    "SELECT id FROM comment_subject WHERE id = %s",
    "SELECT id FROM comments_user WHERE username = %s",
]

NOT_ROUTED = [
    (
        'SELECT "comment_index"."id" FROM "comment_index" WHERE "comment_index"."id" = %s',
        "comment_index (as comment_index) is not filtered by subject_id",
    ),
    (
        "SELECT c.id FROM comment_index c LEFT JOIN comment_index t ON t.id = c.reply_to_id WHERE c.subject_id = %s",
        "comment_index (as t) is not filtered by subject_id",
    ),
    (
        "INSERT INTO comment_content (comment_id, body) VALUES (%s, %s)",
        "INSERT INTO comment_content does not give subject_id",
    ),
    (
        "UPDATE likes_like SET active = false WHERE comment_id = %s",
        "likes_like (as likes_like) is not filtered by subject_id",
    ),
    (
        "UPDATE likes_like SET active = x.a FROM unnest(%s::bigint[], %s::boolean[], %s::bigint[]) AS x(id, a, s) "
        "WHERE likes_like.id = x.id AND likes_like.subject_id = x.s",
        "likes_like (as likes_like) is not filtered by subject_id",
    ),
    (
        "SELECT id FROM comment_index WHERE subject_id IN (SELECT id FROM comment_subject WHERE site_id = %s)",
        "comment_index (as comment_index) is not filtered by subject_id",
    ),
    (
        "SELECT c.id FROM comment_index c JOIN comment_content cc ON cc.comment_id = c.id AND cc.subject_id = c.subject_id",
        "its distributed tables are joined on their distribution columns, but none is filtered by a value",
    ),
    (
        "SELECT id FROM comment_subject WHERE site_id = %s AND key = %s",
        "comment_subject (as comment_subject) is not filtered by id",
    ),
]


@pytest.mark.parametrize("sql", ROUTED)
def test_a_statement_naming_its_subject_passes(sql):
    assert citus.query_violations(sql) == []


@pytest.mark.parametrize("sql, problem", NOT_ROUTED)
def test_a_statement_that_does_not_name_its_subject_is_reported(sql, problem):
    assert problem in citus.query_violations(sql)


@pytest.fixture
def postgresql(db):
    if connection.vendor != "postgresql":
        pytest.skip("the Citus plan is PostgreSQL's")


def _schema_violations():
    with connection.cursor() as cursor:
        return citus.schema_violations(cursor)


def test_todays_schema_keeps_the_plan_but_for_its_known_gaps(postgresql):
    violations, gaps = _schema_violations()
    assert violations == []
    assert [g.split(":")[0] for g in gaps] == ["comment_subject"]


@pytest.mark.parametrize(
    "ddl, violation",
    [
        (
            "ALTER TABLE likes_like ADD CONSTRAINT like_without_subject UNIQUE (comment_id, user_id)",
            "likes_like: unique key like_without_subject (comment_id, user_id) lacks the distribution column subject_id",
        ),
        (
            "ALTER TABLE comment_content DROP CONSTRAINT comment_content_pkey, ADD CONSTRAINT comment_content_pkey PRIMARY KEY (comment_id)",
            "comment_content: primary key comment_content_pkey (comment_id) lacks the distribution column subject_id",
        ),
        (
            "ALTER TABLE moderation_report ADD CONSTRAINT report_to_any_comment FOREIGN KEY (comment_id, user_id) "
            "REFERENCES comment_index (id, subject_id)",
            "moderation_report: foreign key report_to_any_comment (comment_id, user_id) -> comment_index (id, subject_id) "
            "does not pair moderation_report.subject_id with comment_index.subject_id",
        ),
        (
            "ALTER TABLE comments_follow ADD COLUMN about_id bigint REFERENCES comment_subject (id)",
            "comments_follow (reference): foreign key comments_follow_about_id_fkey -> comment_subject (distributed) is not allowed by Citus",
        ),
        (
            "ALTER TABLE comments_site ADD COLUMN run_id bigint REFERENCES portability_run (id)",
            "comments_site (reference): foreign key comments_site_run_id_fkey -> portability_run (local) is not allowed by Citus",
        ),
        (
            "CREATE TABLE comment_stray (id bigint PRIMARY KEY)",
            "comment_stray: not in the Citus plan (comments/citus.py): distributed, reference or local?",
        ),
    ],
)
def test_a_schema_against_the_plan_is_reported(postgresql, ddl, violation):
    with connection.cursor() as cursor:
        cursor.execute(ddl)  # undone with the test's transaction
    violations, _ = _schema_violations()
    assert violations == [violation]


def test_the_command_fails_on_a_captured_query_that_is_not_routed(postgresql, tmp_path):
    log = tmp_path / "queries.jsonl"
    log.write_text(json.dumps({"query": "a comment by id", "sql": NOT_ROUTED[0][0]}) + "\n")
    with pytest.raises(CommandError) as failed:
        call_command("check_citus_schema", queries=str(log))
    assert 'hot query "a comment by id": comment_index (as comment_index) is not filtered by subject_id' in str(
        failed.value
    )
    log.write_text(json.dumps({"query": "a comment in its subject", "sql": ROUTED[0]}) + "\n")
    call_command("check_citus_schema", queries=str(log))

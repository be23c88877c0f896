"""The Citus check fails on what Citus would refuse or could not route, and passes today's
schema (scripts/check-citus-schema runs it on the hot queries' captured SQL)."""

from __future__ import annotations

import io
import json
import re

import pytest
from django.core.management import CommandError, call_command
from django.db import NotSupportedError, connection, transaction

from infra import citus

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
    'SELECT "comment_subject_key"."key", "comment_subject_key"."subject_id" FROM "comment_subject_key" '
    'WHERE ("comment_subject_key"."site_id" = %s AND "comment_subject_key"."key" IN (%s))',
    "INSERT INTO comment_subject_key (site_id, key, subject_id) VALUES (%s, %s, %s) ON CONFLICT DO NOTHING",
    'INSERT INTO "comment_subject" ("site_id", "key") VALUES (%s, %s) RETURNING "comment_subject"."id"',
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
    (
        "SELECT k.subject_id FROM comment_subject_key k JOIN comments_site t ON t.id = k.site_id "
        "WHERE t.key = %s AND k.key = %s",
        "comment_subject_key (as k) is not filtered by site_id",
    ),
    (
        "SELECT s.id FROM comment_subject s JOIN comment_subject_key k ON k.subject_id = s.id "
        "WHERE k.site_id = %s AND k.key = %s AND s.id = %s",
        "it names tables of co-location groups that Citus cannot join in one query: comment_subject, comment_subject_key",
    ),
    (
        "INSERT INTO comment_subject_key (key, subject_id) VALUES (%s, %s)",
        "INSERT INTO comment_subject_key does not give site_id",
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


def test_todays_schema_keeps_the_plan_with_no_known_gap(postgresql):
    assert _schema_violations() == ([], [])


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
            "ALTER TABLE comment_subject ADD CONSTRAINT subject_by_site_key UNIQUE (site_id, key)",
            "comment_subject: unique key subject_by_site_key (site_id, key) lacks the distribution column id",
        ),
        (
            "ALTER TABLE comment_subject_key ADD CONSTRAINT one_key_a_subject UNIQUE (subject_id)",
            "comment_subject_key: unique key one_key_a_subject (subject_id) lacks the distribution column site_id",
        ),
        (
            "ALTER TABLE comment_subject_key ADD CONSTRAINT key_of_a_subject FOREIGN KEY (subject_id) "
            "REFERENCES comment_subject (id)",
            "comment_subject_key: foreign key key_of_a_subject -> comment_subject joins tables that are not "
            "co-located (comment_subject_key's group and comment_subject's)",
        ),
        (
            "ALTER TABLE comment_subject ALTER COLUMN id DROP IDENTITY",
            "comment_subject: id is not a bigint identity, which Citus would draw",
        ),
        (
            "CREATE TABLE comment_stray (id bigint PRIMARY KEY)",
            "comment_stray: not in the Citus plan (an app's citus_tables): distributed, reference or local?",
        ),
    ],
)
def test_a_schema_against_the_plan_is_reported(postgresql, ddl, violation):
    with connection.cursor() as cursor:
        citus_coordinator = citus.workers(cursor) > 0
        try:
            with transaction.atomic():
                cursor.execute(ddl)  # undone with the test's transaction
        except NotSupportedError:
            # On a Citus coordinator (scripts/test-citus) Citus itself refuses most of these
            # breaks; what it lets through, the check must report.
            assert citus_coordinator, "only Citus refuses this schema change"
            return
    violations, _ = _schema_violations()
    if citus_coordinator:
        # Citus names a foreign key it propagates its own way (comments_site__fkey).
        violations, violation = [_unnamed(v) for v in violations], _unnamed(violation)
    assert violations == [violation]


def _unnamed(violation: str) -> str:
    return re.sub(r"foreign key \S+ ->", "foreign key ->", violation)


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


def test_a_runs_statements_are_counted_routed_or_across_shards(postgresql, tmp_path):
    """``--run``: a whole run's statements on the cluster (tests/citus_statements.py), each
    held to the plan; those across shards are counted and listed with their test."""
    log = tmp_path / "run.jsonl"
    log.write_text(
        json.dumps({"sql": ROUTED[0], "test": "tests/a.py::routed"})
        + "\n"
        + json.dumps({"sql": NOT_ROUTED[0][0], "test": "tests/a.py::by_id"})
        + "\n"
    )
    out = io.StringIO()
    call_command("check_citus_schema", run=str(log), verbosity=2, stdout=out)
    said = out.getvalue()
    assert "the run on Citus: 2 distinct statement(s), 1 to one shard group or the coordinator, 1 across shards" in said
    assert "- tests/a.py::by_id: comment_index (as comment_index) is not filtered by subject_id" in said
    assert "known gap: 1 statement(s) of the run on the cluster cross shards" in said
    # A run that wrote nothing is no evidence.
    log.write_text("")
    with pytest.raises(CommandError, match="no statement"):
        call_command("check_citus_schema", run=str(log))

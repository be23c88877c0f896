"""List statements are prepared after a few runs on a connection (config/env.py), and PostgreSQL
then plans them once for any parameters: a generic plan, which cannot know that the subject
being read (``subject_id = $1``) is far bigger than the average one, and joined and sorted every
root of a big subject before limiting. The page's rows must be limited before they are joined.
(On a table this small a scan of it all is cheap and fine; it is the order of limit and joins
that stays true at any size.)"""

from __future__ import annotations

import json
import re

import psycopg
import pytest
from django.db import connection

from ..citus_cluster import skip_on_citus
from ..factories import CommentFactory, SubjectFactory, UserFactory

pytestmark = pytest.mark.django_db


@pytest.fixture(autouse=True)
def _one_servers_plans(db):
    skip_on_citus("the plans are the workers': the coordinator's EXPLAIN shows the routing (tests/citus/)")


BIG_SUBJECT_ROOTS = 200
LIMIT = 100


def _statements_of(call) -> list[tuple[str, list]]:
    seen = []

    def record(execute, sql, params, many, context):
        seen.append((sql, list(params or [])))
        return execute(sql, params, many, context)

    with connection.execute_wrapper(record):
        call()
    return seen


def _relations(plan: dict) -> set[str]:
    own = {plan["Relation Name"]} if "Relation Name" in plan else set()
    return own.union(*(_relations(child) for child in plan.get("Plans", [])))


def _limit_below_the_joins(plan: dict) -> bool:
    """Whether some Limit of the plan reads comments without their authors: the page is cut
    to size before it is joined."""
    if plan["Node Type"] == "Limit":
        relations = _relations(plan)
        if "comment_index" in relations and "comments_user" not in relations:
            return True
    return any(_limit_below_the_joins(child) for child in plan.get("Plans", []))


def _generic_plan(sql: str, params: list) -> dict:
    numbered = iter(range(1, len(params) + 1))
    prepared = re.sub(r"%s", lambda _: f"${next(numbered)}", sql)
    with connection.cursor() as cursor:
        cursor.execute("SET plan_cache_mode = force_generic_plan")
        try:
            cursor.execute(f"PREPARE page_under_test AS {prepared}")
            arguments = ", ".join(["%s"] * len(params))
            # EXPLAIN takes no bound parameters: these are inlined by the client.
            explained = (
                psycopg.ClientCursor(connection.connection)
                .execute(f"EXPLAIN (ANALYZE, FORMAT JSON) EXECUTE page_under_test({arguments})", params)
                .fetchone()[0]
            )
        finally:
            cursor.execute("DEALLOCATE ALL")
            cursor.execute("RESET plan_cache_mode")
    document = explained if isinstance(explained, list) else json.loads(explained)
    return document[0]["Plan"]


def _sqlite_plans_the_page_apart(sql: str, params: list) -> bool:
    """SQLite has no generic plans; its plan must still read the page in a subquery of its own
    (a co-routine or a materialized subquery) before the joins."""
    with connection.cursor() as cursor:
        cursor.execute(f"EXPLAIN QUERY PLAN {sql}", params)
        return any(str(row[-1]).startswith(("CO-ROUTINE", "MATERIALIZE")) for row in cursor.fetchall())


def test_a_page_is_cut_to_size_before_it_is_joined_under_a_generic_plan(api):
    site_subjects = [SubjectFactory() for _ in range(40)]
    for small in site_subjects:
        for _ in range(2):
            CommentFactory(subject=small)
    big = SubjectFactory(site=site_subjects[0].site)
    authors = [UserFactory() for _ in range(20)]
    for i in range(BIG_SUBJECT_ROOTS):
        CommentFactory(subject=big, author=authors[i % len(authors)])
    with connection.cursor() as cursor:
        cursor.execute("ANALYZE comment_index")
        cursor.execute("ANALYZE comments_user")
    reader = UserFactory()
    api.force_authenticate(reader)

    url = f"/api/v1/subjects/{big.pk}/comments"
    statements = _statements_of(lambda: api.get(url, {"mode": "two_level", "sort": "new", "limit": LIMIT}))
    page_statements = [(sql, params) for sql, params in statements if "comment_index" in sql and " LIMIT " in sql]
    assert page_statements, statements

    for sql, params in page_statements:
        if connection.vendor == "postgresql":
            assert _limit_below_the_joins(_generic_plan(sql, params)), sql
        else:
            assert _sqlite_plans_the_page_apart(sql, params), sql


def _scans_of(plan: dict, relation: str) -> set[str]:
    own = {plan["Node Type"]} if plan.get("Relation Name") == relation else set()
    return own.union(*(_scans_of(child, relation) for child in plan.get("Plans", [])))


@pytest.mark.skipif(connection.vendor != "postgresql", reason="PostgreSQL's plans: SQLite plans its own joins")
def test_the_faces_of_a_big_page_are_looked_up_by_key_not_hashed_whole(api):
    # Joined as a set, the users of a small site were hashed whole for a page of 100 rows: the
    # scan cost a third of the statement in the benchmark (1,800 users).
    subject = SubjectFactory()
    authors = [UserFactory() for _ in range(300)]
    previous = None
    for i in range(LIMIT + 20):
        previous = CommentFactory(
            subject=subject, author=authors[i % len(authors)], reply_to=previous if i % 2 else None
        )
    with connection.cursor() as cursor:
        cursor.execute("ANALYZE comment_index")
        cursor.execute("ANALYZE comments_user")

    url = f"/api/v1/subjects/{subject.pk}/comments"
    statements = _statements_of(lambda: api.get(url, {"mode": "flat", "limit": LIMIT}))
    [(sql, params)] = [(sql, params) for sql, params in statements if "comment_index" in sql and " LIMIT " in sql]

    scans = _scans_of(_generic_plan(sql, params), "comments_user")
    assert scans and "Seq Scan" not in scans  # before: {"Seq Scan"}; by key: an index or bitmap scan

"""A thread's queries name its subject beside its root, for Citus; PostgreSQL must still walk
the thread's own index under a generic plan, not join the whole subject's index to it (which
it did, taking a root and a subject as independent, until the migration gave it statistics of
the dependency)."""

from __future__ import annotations

import pytest
from django.db import connection

from ..api.conftest import API
from ..citus_cluster import skip_on_citus
from ..comments.test_generic_plans import _generic_plan, _statements_of
from ..factories import SubjectFactory

ROOTS, REPLIES, OTHER_SUBJECTS = 30, 200, 40


def _scans(plan: dict):
    yield plan
    for child in plan.get("Plans", []):
        yield from _scans(child)


@pytest.fixture
def big_threads(db):
    if connection.vendor != "postgresql":
        pytest.skip("generic plans are PostgreSQL's")
    skip_on_citus("the plans are the workers': the coordinator's EXPLAIN shows the routing")
    subject = SubjectFactory()
    others = [SubjectFactory(site=subject.site).pk for _ in range(OTHER_SUBJECTS)]
    with connection.cursor() as cursor:
        columns = (
            "id, subject_id, root_id, reply_to_id, path, depth, floor, status, visibility, pinned, featured, "
            "like_count, reply_count, descendant_count, reply_floor_seq, created_at"
        )
        cursor.execute(
            f"INSERT INTO comment_index ({columns}) SELECT r * 1000, %s, NULL, NULL, lpad(r::text, 11, '0'), 0, r, "
            "'published', 'public', false, false, 0, %s, %s, %s, now() FROM generate_series(1, %s) r",
            [subject.pk, REPLIES, REPLIES, REPLIES, ROOTS],
        )
        cursor.execute(
            f"INSERT INTO comment_index ({columns}) SELECT r * 1000 + k, %s, r * 1000, r * 1000, "
            "lpad(r::text, 11, '0') || lpad(k::text, 11, '0'), 1, k, 'published', 'public', false, false, k %% 17, "
            "0, 0, 0, now() FROM generate_series(1, %s) r, generate_series(1, %s) k",
            [subject.pk, ROOTS, REPLIES],
        )
        # Many subjects with threads of their own, more threads than subjects: a generic plan
        # takes the parameters for any subject and any thread.
        cursor.execute(
            f"INSERT INTO comment_index ({columns}) SELECT 10000000 + s * 1000 + r * 100, s, NULL, NULL, "
            "lpad(r::text, 11, '0'), 0, r, 'published', 'public', false, false, 0, 0, 0, 0, now() "
            "FROM unnest(%s::bigint[]) s, generate_series(1, 3) r",
            [others],
        )
        cursor.execute(
            f"INSERT INTO comment_index ({columns}) SELECT 10000000 + s * 1000 + r * 100 + k, s, "
            "10000000 + s * 1000 + r * 100, 10000000 + s * 1000 + r * 100, "
            "lpad(r::text, 11, '0') || lpad(k::text, 11, '0'), 1, k, 'published', 'public', false, false, 0, 0, 0, 0, now() "
            "FROM unnest(%s::bigint[]) s, generate_series(1, 3) r, generate_series(1, 10) k",
            [others],
        )
        cursor.execute(
            "INSERT INTO comment_content (comment_id, subject_id, body, html, mentions, user_agent) "
            "SELECT id, subject_id, 'words', '<p>words</p>', '[]', '' FROM comment_index WHERE subject_id = %s",
            [subject.pk],
        )
        cursor.execute("ANALYZE comment_index")
    return subject


@pytest.mark.parametrize("page", ["replies sort=old", "replies sort=hot", "reply previews"])
def test_a_threads_queries_walk_its_index(api, big_threads, page):
    subject = big_threads
    if page == "reply previews":
        url, query = f"{API}/subjects/{subject.pk}/comments", {"mode": "two_level", "sort": "new"}
    else:
        url, query = f"{API}/comments/{5 * 1000}/replies", {"sort": page.split("=")[1]}
    statements = _statements_of(lambda: api.get(url, query))
    threads = [(sql, params) for sql, params in statements if "root_id = " in sql and "subject_id = " in sql]
    assert threads, statements
    for sql, params in threads:
        plan = _generic_plan(sql, params)
        scans = [(node["Node Type"], node.get("Index Name")) for node in _scans(plan)]
        assert ("BitmapAnd", None) not in scans, (sql, scans)
        assert {"comment_thread_by_time", "comment_thread_by_likes"} & {name for _, name in scans}, (sql, scans)

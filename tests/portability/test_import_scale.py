"""What an import's cost grows with: its statements come per batch of comments, as many per
batch however much is already imported, and the lookups each batch makes by source id (comments
imported before, authors met before) go through the indexes on every column they name, not a
scan of all that the site has imported so far (the benchmark's 1,000,000-comment import is in
docs/benchmarks.md, "Import")."""

from __future__ import annotations

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from bench.disqus_export import write_disqus_export
from portability.services import staging

from ..citus_cluster import on_citus, skip_on_citus
from ..factories import SiteFactory
from .conftest import assert_consistent, run_import

BATCH = 25


@pytest.fixture
def small_batches(monkeypatch):
    monkeypatch.setattr(staging, "COMMENT_BATCH", BATCH)


def _import_counted(tmp_path, comments: int):
    """(the site, the statements of importing a generated Disqus export of ``comments``)."""
    path = tmp_path / f"disqus-{comments}.xml"
    write_disqus_export(str(path), comments=comments)
    site = SiteFactory(key=f"scale-{comments}")
    with CaptureQueriesContext(connection) as captured:
        summary = run_import(site, "disqus", str(path))
    assert summary.imported == comments and not summary.skipped
    return site, [q["sql"] for q in captured.captured_queries]


@pytest.mark.django_db
def test_statements_per_batch_do_not_grow_with_the_import(tmp_path, small_batches):
    """Four times the comments (and threads and authors, as exports grow): at most four times
    the statements, and the same handful per batch (no statement per comment, per thread or per
    author)."""
    small_site, small = _import_counted(tmp_path, 200)
    big_site, big = _import_counted(tmp_path, 800)
    batches = (800 - 200) / BATCH
    if on_citus():
        # A coordinator locks a batch's rows shard by shard (comments.services.storage
        # ._lock_in_order): one statement to group the subjects, then one a shard at most.
        shards = _shard_count()
        small_locks, big_locks = _shard_locks(small), _shard_locks(big)
        assert (len(big_locks) - len(small_locks)) / batches <= 1 + shards, (len(small_locks), len(big_locks))
        small = [sql for sql in small if sql not in small_locks]
        big = [sql for sql in big if sql not in big_locks]
        allowed = 16 - 2  # PostgreSQL's two lock statements a batch are among the locks above
    else:
        allowed = 16
    assert len(big) <= 4 * len(small), (len(small), len(big))
    per_batch = (len(big) - len(small)) / batches
    assert per_batch <= allowed, per_batch
    assert_consistent(big_site)


def _shard_locks(statements: list[str]) -> list[str]:
    return [sql for sql in statements if "FOR UPDATE" in sql or "get_shard_id_for_distribution_column" in sql]


def _shard_count() -> int:
    with connection.cursor() as cursor:
        cursor.execute("SELECT count(*) FROM pg_dist_shard WHERE logicalrelid = 'comment_subject'::regclass")
        return cursor.fetchone()[0]


def _plan(sql: str) -> str:
    with connection.cursor() as cursor:
        if connection.vendor == "postgresql":
            # Tables of a test are a few pages, which a scan reads as fast as an index: the
            # question is which index conditions the planner can use when it uses the index.
            cursor.execute("SET LOCAL enable_seqscan = off")
            cursor.execute("EXPLAIN " + sql)
        else:
            cursor.execute("EXPLAIN QUERY PLAN " + sql)
        return "\n".join(str(row[-1]) for row in cursor.fetchall())


@pytest.mark.django_db
def test_lookups_by_source_id_use_every_column_of_their_index(tmp_path, small_batches):
    """The batch's lookups of replies' parents imported in earlier batches and of authors by
    their external id, planned as the import leaves the tables: an index condition on the site,
    the format, the kind and the source id (external id) together. Without fresh statistics
    PostgreSQL takes the filled tables for empty and matches the ids in a filter over every
    item of the site."""
    skip_on_citus("the plans are the workers': the coordinator's EXPLAIN shows the routing (tests/citus/)")
    _, statements = _import_counted(tmp_path, 400)
    parents = [s for s in statements if "portability_item" in s and "JOIN" in s and "root_id" in s]
    authors = [s for s in statements if "comments_externalidentity" in s and s.lstrip().upper().startswith("SELECT")]
    assert parents and authors
    parent_plan, author_plan = _plan(parents[-1]), _plan(authors[-1])
    if connection.vendor == "postgresql":
        assert "imported_item_by_source_id" in parent_plan
        index_conditions = [line for line in parent_plan.splitlines() if "Index Cond" in line and "kind" in line]
        assert index_conditions and all("source_id" in line for line in index_conditions), parent_plan
        author_conditions = [line for line in author_plan.splitlines() if "Index Cond" in line]
        assert any("external_id" in line for line in author_conditions), author_plan
    else:
        # SQLite names the unique constraints' indexes itself (sqlite_autoindex_...).
        assert "USING INDEX" in parent_plan and "(site_id=? AND source=? AND kind=? AND source_id=?)" in parent_plan, (
            parent_plan
        )
        assert "USING INDEX" in author_plan and "(site_id=? AND external_id=?)" in author_plan, author_plan

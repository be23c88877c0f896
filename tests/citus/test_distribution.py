"""migrate distributes the schema itself on a Citus coordinator with workers (docs/citus.md,
``infra.citus.distribute_after_migrate``), and does nothing elsewhere: on plain PostgreSQL and
SQLite the same migrations leave ordinary tables."""

from __future__ import annotations

import pytest
from django.core.management import call_command
from django.db import connection

from infra import citus

from ..citus_cluster import on_citus

pytestmark = pytest.mark.django_db


def test_on_a_coordinator_every_table_is_placed_as_the_plan_says():
    if not on_citus():
        pytest.skip("the database is not a Citus coordinator with workers (scripts/test-citus runs this)")
    the = citus.plan()
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT table_name::text, citus_table_type, distribution_column, colocation_id FROM citus_tables"
        )
        placed = {name: (kind, column, group) for name, kind, column, group in cursor.fetchall()}
    for table, column in the.distributed.items():
        assert placed[table][:2] == ("distributed", column), table
    for table in the.reference:
        assert placed[table][0] == "reference", table
    # One co-location group per group of the plan, and no two groups sharing one.
    groups = {
        group: {placed[t][2] for t, g in the.colocation.items() if g == group} for group in the.colocation.values()
    }
    assert all(len(ids) == 1 for ids in groups.values()), groups
    assert len({next(iter(ids)) for ids in groups.values()}) == len(groups)
    # Nothing of the plan's local tables went to the workers.
    assert not [t for t in the.local if placed.get(t, ("local",))[0] != "local"]


def test_a_second_migrate_has_nothing_left_to_distribute():
    call_command("migrate", verbosity=0)
    with connection.cursor() as cursor:
        assert citus.distribution_steps(cursor) == []


def test_the_foreign_keys_survive_the_distribution():
    """The keys taken off while the tables changed are all back: the catalogue holds the
    composite keys into comment_index (docs/citus.md), distributed or not."""
    if connection.vendor != "postgresql":
        pytest.skip("SQLite keeps single-column keys")
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT conrelid::regclass::text, pg_get_constraintdef(oid) FROM pg_constraint "
            "WHERE contype = 'f' AND confrelid = 'comment_index'::regclass ORDER BY 1, 2"
        )
        keys = cursor.fetchall()
    assert ("likes_like", "FOREIGN KEY (comment_id, subject_id) REFERENCES comment_index(id, subject_id)") in [
        (table, definition.split(" ON ")[0].split(" DEFERRABLE")[0]) for table, definition in keys
    ]
    assert {table for table, _ in keys} >= {"comment_content", "likes_like", "moderation_report", "moderation_task"}


def test_tables_come_after_the_tables_they_point_at():
    order = citus._referenced_first({"a", "b", "c"}, [("a", "b"), ("b", "c"), ("a", "x"), ("c", "c")])
    assert order == ["c", "b", "a"]
    with pytest.raises(ValueError, match="ring"):
        citus._referenced_first({"a", "b"}, [("a", "b"), ("b", "a")])

"""Emptying the database after a transactional test on a Citus coordinator, by deleting the rows
that are there instead of truncating every table.

Django empties the database after each transactional test with one ``TRUNCATE`` of every table
(``manage.py flush``). On a coordinator that statement truncates each shard of each distributed
table and each copy of each reference table, in a two-phase commit with every worker: 0.9 s
on ``scripts/citus-cluster``'s nodes (1.5 s a teardown), nearly all of it for tables the test
never wrote. A test writes a few tables; a ``DELETE`` of a table that holds a few rows costs a few
milliseconds. So on a coordinator the flush asks which tables hold rows (one statement) and
deletes those, each table before the tables it references. The database ends as empty as the
``TRUNCATE`` left it; Django's ``post_migrate`` then refills what it refills after a flush
(content types, permissions). Should the tables holding rows reference each other in a cycle, no
order of deletes is safe, and the flush truncates as Django does. With no rows anywhere it still
names a table, as Django's flush runs ``post_migrate`` only after a statement.

On plain PostgreSQL and SQLite nothing changes: there a ``TRUNCATE`` is the cheaper way.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from graphlib import CycleError, TopologicalSorter

from django.contrib.contenttypes.models import ContentType
from django.core.management.color import Style
from django.db.backends.base.operations import BaseDatabaseOperations
from django.db.backends.postgresql.operations import DatabaseOperations

from infra import citus

_truncate = DatabaseOperations.sql_flush


def _holding_rows(cursor, tables: list[str], quote) -> list[str]:
    """Those of ``tables`` that hold a row, in one statement."""
    probes = ", ".join(f"EXISTS (SELECT 1 FROM {quote(table)})" for table in tables)
    cursor.execute(f"SELECT ARRAY[{probes}]")
    (held,) = cursor.fetchone()
    return [table for table, has_rows in zip(tables, held, strict=True) if has_rows]


def _references(cursor) -> list[tuple[str, str]]:
    """(referencing table, referenced table) for each foreign key between two tables."""
    cursor.execute(
        "SELECT referencing.relname, referenced.relname FROM pg_constraint"
        " JOIN pg_class referencing ON referencing.oid = conrelid"
        " JOIN pg_class referenced ON referenced.oid = confrelid"
        " WHERE contype = 'f' AND conrelid <> confrelid"
    )
    return cursor.fetchall()


def deleting_flush(
    self: BaseDatabaseOperations,
    style: Style,
    tables: Sequence[str],
    *,
    reset_sequences: bool = False,
    allow_cascade: bool = False,
) -> list[str]:
    """``DatabaseOperations.sql_flush`` that, on a Citus coordinator, deletes the rows there are;
    elsewhere (or with sequences to reset) Django's own."""
    if reset_sequences or not tables:
        return _truncate(self, style, tables, reset_sequences=reset_sequences, allow_cascade=allow_cascade)
    with self.connection.cursor() as cursor:
        if not citus.workers(cursor):
            return _truncate(self, style, tables, reset_sequences=False, allow_cascade=allow_cascade)
        holding = _holding_rows(cursor, sorted(tables), self.quote_name)
        references = _references(cursor)
    # A table comes after every table that references it: the referencing rows go first.
    order: TopologicalSorter[str] = TopologicalSorter(dict.fromkeys(holding, ()))
    for referencing, referenced in references:
        if referencing in holding and referenced in holding:
            order.add(referenced, referencing)
    try:
        ordered = list(order.static_order())
    except CycleError:
        return _truncate(self, style, tables, reset_sequences=False, allow_cascade=allow_cascade)
    if not ordered:
        # Django's flush runs post_migrate only after some statement (its TRUNCATE always is
        # one): an empty database (its content types gone too) is refilled the same way.
        ordered = [ContentType._meta.db_table]
    return [f"{style.SQL_KEYWORD('DELETE FROM')} {style.SQL_FIELD(self.quote_name(table))};" for table in ordered]


@contextmanager
def flush_by_delete_on_citus() -> Iterator[None]:
    """Within the block, Django's flush deletes rows on a Citus coordinator (above)."""
    DatabaseOperations.sql_flush = deleting_flush  # type: ignore[method-assign]
    try:
        yield
    finally:
        DatabaseOperations.sql_flush = _truncate  # type: ignore[method-assign]

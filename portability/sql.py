"""Set-based SQL helpers of the import and the exports, for PostgreSQL and SQLite alike."""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from datetime import datetime

from django.db import connection

from comments.rowsql import aware


def table(model) -> str:
    return connection.ops.quote_name(model._meta.db_table)


def param_time(moment: datetime | None):
    """A time as a parameter of a hand-written statement (SQLite compares its stored text)."""
    if moment is None or connection.vendor == "postgresql":
        return moment
    return connection.ops.adapt_datetimefield_value(moment)


def row_time(value) -> datetime | None:
    """A time as a hand-written statement returns it: aware, UTC."""
    return aware(value) if value is not None else None


def insert_rows(model, columns: Sequence[str], rows: Iterable[Sequence]) -> int:
    """Insert ``rows`` (values in ``columns`` order) into ``model``'s table: PostgreSQL's COPY,
    which takes a batch of thousands of rows in one round trip with no statement to parse,
    or one prepared INSERT run per row on SQLite. Lists and dicts are stored as JSON."""
    rows = [[json.dumps(v) if isinstance(v, (list, dict)) else v for v in row] for row in rows]
    if not rows:
        return 0
    names = ", ".join(connection.ops.quote_name(c) for c in columns)
    with connection.cursor() as cursor:
        if connection.vendor == "postgresql":
            with cursor.cursor.copy(f"COPY {table(model)} ({names}) FROM STDIN") as copy:
                for row in rows:
                    copy.write_row(row)
        else:
            rows = [[param_time(v) if isinstance(v, datetime) else v for v in row] for row in rows]
            marks = ", ".join(["%s"] * len(columns))
            cursor.executemany(f"INSERT INTO {table(model)} ({names}) VALUES ({marks})", rows)
    return len(rows)


def execute(sql: str, params: Sequence = ()) -> int:
    """Run one statement; how many rows it changed."""
    with connection.cursor() as cursor:
        cursor.execute(sql, list(params))
        return cursor.rowcount


def fetch(sql: str, params: Sequence = ()) -> list[tuple]:
    with connection.cursor() as cursor:
        cursor.execute(sql, list(params))
        return cursor.fetchall()

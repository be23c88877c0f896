"""Set-based SQL helpers of the import and the exports, for PostgreSQL and SQLite alike."""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator, Sequence
from datetime import datetime

from django.db import connection

from comments.rowsql import aware
from infra import citus


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


# Parameters of one SQLite statement: far below its limit (32,766 since 3.32), as Django keeps it.
_SQLITE_CHUNK = 900


def among(column: str, values: Sequence) -> Iterator[tuple[str, list]]:
    """``(condition, params)``: ``column`` is one of ``values``. On PostgreSQL one condition
    with the values as one array parameter (``= ANY``: nothing for the client to split, nothing
    for the server to parse per value, however many there are); on SQLite ``IN`` lists of a
    few hundred. None for no values."""
    if not values:
        return
    if connection.vendor == "postgresql":
        yield f"{column} = ANY(%s)", [list(values)]
        return
    for start in range(0, len(values), _SQLITE_CHUNK):
        chunk = list(values[start : start + _SQLITE_CHUNK])
        yield f"{column} IN ({', '.join(['%s'] * len(chunk))})", chunk


def execute(sql: str, params: Sequence = ()) -> int:
    """Run one statement; how many rows it changed."""
    with connection.cursor() as cursor:
        cursor.execute(sql, list(params))
        return cursor.rowcount


def analyze(model) -> None:
    """Fresh planner statistics of ``model``'s table (PostgreSQL; nothing on SQLite). Not on a
    Citus coordinator inside a transaction: there ANALYZE runs over connections of its own,
    which Citus refuses once the transaction has read or written a placement locally (as an
    import's COPY into its staged rows does); the statistics are then autovacuum's."""
    if connection.vendor != "postgresql" or (connection.in_atomic_block and citus.is_coordinator(connection)):
        return
    execute(f"ANALYZE {table(model)}")


def fetch(sql: str, params: Sequence = ()) -> list[tuple]:
    with connection.cursor() as cursor:
        cursor.execute(sql, list(params))
        return cursor.fetchall()

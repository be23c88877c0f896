"""Many rows as one SQL source, for the set-based writes of the flush.

PostgreSQL: ``unnest`` of one array per column, so a statement over 5,000 rows has a handful of
parameters; with one placeholder per value, psycopg spent more time splitting and binding the
statement than PostgreSQL spent running it. Each array travels as one text literal
(``{1,2,3}``), which Python joins in C: psycopg dumps a list element by element in Python, and
that took longer than the statement itself. SQLite: a ``VALUES`` list, in chunks that stay
under its parameter limit.

Column kinds are PostgreSQL types (of integers or booleans), and ``ms``: a time given as
integer milliseconds since the epoch, stored as ``timestamptz``.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from datetime import timedelta

from django.db import connection

from comments.rowsql import UNIX_EPOCH

# (name, kind) of each column of a row set.
Columns = Sequence[tuple[str, str]]

_SQLITE_MAX_PARAMS = 30_000


def _array_literal(kind: str, column: Sequence) -> str:
    if kind == "boolean":
        return "{" + ",".join(["t" if v else "f" for v in column]) + "}"
    return "{" + ",".join(map(str, column)) + "}"


def sources(columns: Columns, rows: Sequence[tuple]) -> Iterator[tuple[str, list]]:
    """``(sql, params)`` of a derived table aliased ``x`` with the given columns, covering
    ``rows``: one on PostgreSQL, as many chunks as SQLite needs."""
    if not rows:
        return
    if connection.vendor == "postgresql":
        arrays, names, selected, values = [], [], [], []
        for (name, kind), column in zip(columns, zip(*rows, strict=True), strict=True):
            if kind == "ms":
                arrays.append("%s::bigint[]")
                # to_timestamp is immutable (timestamptz + interval is only stable), so Citus
                # takes it inside an UPDATE's CASE; the double carries ms exactly to the µs.
                selected.append(f"to_timestamp(x0.{name}::float8 / 1000) AS {name}")
            else:
                arrays.append(f"%s::{kind}[]")
                selected.append(f"x0.{name}")
            values.append(_array_literal(kind, column))
            names.append(name)
        yield (
            f"(SELECT {', '.join(selected)} FROM unnest({', '.join(arrays)}) AS x0({', '.join(names)})) AS x",
            values,
        )
        return
    times = [i for i, (_, kind) in enumerate(columns) if kind == "ms"]
    if times:
        rows = [tuple(_moment(v) if i in times else v for i, v in enumerate(row)) for row in rows]
    per_chunk = max(1, _SQLITE_MAX_PARAMS // len(columns))
    select = ", ".join(f"column{i + 1} AS {name}" for i, (name, _) in enumerate(columns))
    row_marks = "(" + ", ".join(["%s"] * len(columns)) + ")"
    for start in range(0, len(rows), per_chunk):
        chunk = rows[start : start + per_chunk]
        params = [v for row in chunk for v in row]
        yield f"(SELECT {select} FROM (VALUES {', '.join([row_marks] * len(chunk))})) AS x", params


def _moment(ms: int) -> str:
    return connection.ops.adapt_datetimefield_value(UNIX_EPOCH + timedelta(milliseconds=ms))  # type: ignore[return-value]  # None for None only

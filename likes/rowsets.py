"""Many rows as one SQL source, for the set-based writes of the flush.

PostgreSQL: ``unnest`` of one array per column, so a statement over 5,000 rows has a handful of
parameters; with one placeholder per value, psycopg spent more time splitting and binding the
statement than PostgreSQL spent running it. SQLite: a ``VALUES`` list, in chunks that stay
under its parameter limit.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from datetime import datetime, timedelta, timezone

from django.db import connection

# (name, PostgreSQL type) of each column of a row set.
Columns = Sequence[tuple[str, str]]

_SQLITE_MAX_PARAMS = 30_000
_EPOCH = datetime(1970, 1, 1, tzinfo=timezone.utc)
_MICROSECOND = timedelta(microseconds=1)


def _adapt(value):
    if hasattr(value, "tzinfo"):
        return connection.ops.adapt_datetimefield_value(value)
    return value


def sources(columns: Columns, rows: Sequence[tuple]) -> Iterator[tuple[str, list]]:
    """``(sql, params)`` of a derived table aliased ``x`` with the given columns, covering
    ``rows``: one on PostgreSQL, as many chunks as SQLite needs."""
    if not rows:
        return
    if connection.vendor == "postgresql":
        # Times travel as integer microseconds: psycopg dumps a list of datetimes an order of
        # magnitude slower than a list of integers.
        arrays, names, selected, values = [], [], [], []
        for (name, kind), column in zip(columns, zip(*rows)):
            if kind == "timestamptz":
                arrays.append("%b::bigint[]")
                selected.append(f"timestamptz 'epoch' + x0.{name} * interval '1 microsecond' AS {name}")
                values.append([(v - _EPOCH) // _MICROSECOND for v in column])
            else:
                arrays.append(f"%b::{kind}[]")
                selected.append(f"x0.{name}")
                values.append(list(column))
            names.append(name)
        yield (
            f"(SELECT {', '.join(selected)} FROM unnest({', '.join(arrays)}) AS x0({', '.join(names)})) AS x",
            values,
        )
        return
    per_chunk = max(1, _SQLITE_MAX_PARAMS // len(columns))
    select = ", ".join(f"column{i + 1} AS {name}" for i, (name, _) in enumerate(columns))
    row_marks = "(" + ", ".join(["%s"] * len(columns)) + ")"
    for start in range(0, len(rows), per_chunk):
        chunk = rows[start : start + per_chunk]
        params = [_adapt(v) for row in chunk for v in row]
        yield f"(SELECT {select} FROM (VALUES {', '.join([row_marks] * len(chunk))})) AS x", params

"""Ids of imported comments, made from their original dates.

Comment ids are time-ordered (``comments.ids``: milliseconds since 2025-01-01 in the high bits),
and every list, cursor and path sorts by them, so an imported comment needs an id that sorts
where its date does: before the comments written here since, and among its own history in time
order. History mostly predates the ids' epoch, which the layout cannot express; but no id of
this service can name a moment before the service first ran (``HISTORY_END``). So:

- a comment dated from ``HISTORY_END`` on takes the id of its own millisecond, as a comment
  posted then would have;
- a comment dated before is placed, in time order, in the ids of the epoch's first
  ``HISTORY_END`` - epoch milliseconds, which nothing else uses: the whole span from 1970 to
  ``HISTORY_END`` is scaled down into it (about 31 ms of history per millisecond of id, each
  with 4,096 ids).

The low 12 bits (worker and sequence in a live id) number the comments of one millisecond.
The importer takes the first free id at or after a comment's own, and never one below the last
it gave, so ids follow the order comments are inserted in (time order, parents first) and never
collide with an existing one (it probes the table for each batch).

``created_at`` always keeps the true date; ``comments.ids.id_time`` of an id made here for a
pre-``HISTORY_END`` date is not that date.
"""

from __future__ import annotations

from datetime import UTC, datetime

from comments.ids import EPOCH_MS, MAX_ID, TIME_SHIFT

# Before this service's first run (its first commit is dated 2026-11-22): no id made by the
# service can fall before it.
HISTORY_END = datetime(2026, 11, 1, tzinfo=UTC)
_END_MS = int(HISTORY_END.timestamp() * 1000)
_SCALED_SPAN = _END_MS - EPOCH_MS  # id milliseconds that hold the history before HISTORY_END


def history_id(moment: datetime) -> int:
    """The smallest id a comment dated ``moment`` may take."""
    ms = int(moment.timestamp() * 1000)
    if ms >= _END_MS:
        id_ms = ms - EPOCH_MS
    else:
        id_ms = max(ms, 0) * _SCALED_SPAN // _END_MS
    value = id_ms << TIME_SHIFT
    if value > MAX_ID:
        raise OverflowError("date beyond the id space")
    return value

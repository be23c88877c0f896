"""The comment rows of every list, read with one hand-written statement shape.

Lists are the hot path: a page of two-level comments is read several times per second per
busy subject. Built through the ORM, each page spent most of its time in Python (cloning
querysets, compiling the per-viewer visibility filter with its subqueries, instantiating
models with deferred fields), three to five times what PostgreSQL spent answering. Here the
statement is assembled from fixed pieces of SQL text, rows arrive as tuples and become
``CommentRow`` objects with slots, and the statement text depends only on the list's shape and
the viewer's kind, never on values (those are parameters).

The SQL is portable between PostgreSQL and SQLite except where a function says otherwise.
``visible_sql`` must stay the exact twin of ``queries.can_see`` (tests/comments/test_visibility_twins.py
compares them on every status, visibility and kind of viewer).
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta, timezone

from django.db import connection

from . import paths, replicas
from .models import GONE_STATUSES, Comment, Follow, Status, User, Visibility


def _table(model) -> str:
    return connection.ops.quote_name(model._meta.db_table)


def _quoted(*values: str) -> str:
    """Code constants (status and visibility names) as SQL literals; never user input."""
    for value in values:
        assert value.isidentifier(), value
    return ", ".join(f"'{v}'" for v in values)


def marks(values) -> str:
    """``%s, %s, ...`` for an ``IN (...)`` list of ``values`` (non-empty)."""
    return ", ".join(["%s"] * len(values))


def any_of(column: str, ids) -> tuple[str, list]:
    """``column`` is one of ``ids``: on PostgreSQL ``= ANY`` of one array parameter, so the
    statement's text does not depend on how many there are (one prepared statement for every
    page size and every viewer's number of friends, and psycopg's cache of converted queries,
    which skips statements of more than 50 parameters, keeps it); ``IN (...)`` on SQLite."""
    ids = list(ids)
    if connection.vendor == "postgresql":
        return f"{column} = ANY(%s::bigint[])", [ids]
    return (f"{column} IN ({marks(ids)})" if ids else "0 = 1"), ids


@dataclass(slots=True)
class UserFace:
    """What public output shows of a user, without loading the user row."""

    pk: int
    username: str
    display_name: str
    avatar_url: str

    @property
    def public_name(self) -> str:
        return self.display_name or self.username


@dataclass(slots=True)
class ReplyTarget:
    """The fields of a replied-to comment that ``can_see`` and ``present_user`` read."""

    pk: int
    status: str
    visibility: str
    descendant_count: int
    author_id: int | None
    author: UserFace | None


@dataclass(slots=True)
class CommentRow:
    """A comment index row as lists read it: the fields ``present_comments`` and ``can_see``
    use, its author's public face and what it replies to."""

    pk: int
    subject_id: int
    reply_to_id: int | None
    root_id: int | None
    path: str
    depth: int
    floor: int
    author_id: int | None
    status: str
    visibility: str
    pinned: bool
    featured: bool
    like_count: int
    reply_count: int
    descendant_count: int
    created_at: datetime
    edited_at: datetime | None
    author: UserFace | None
    reply_target: ReplyTarget | None

    @property
    def id(self) -> int:
        return self.pk

    def ancestor_ids(self) -> list[int]:
        return paths.split_path(self.path)[:-1]


_COMMENT = _table(Comment)
_USER = _table(User)
_FOLLOW = _table(Follow)

def _moment_sql(column: str) -> str:
    """A timestamp column as the list reads it. PostgreSQL: microseconds since the epoch, an
    integer psycopg loads in C; its timestamptz values go through Django's Python loader, which
    cost more than a millisecond for the sixty rows of a two-level page."""
    if connection.vendor == "postgresql":
        return f"(EXTRACT(EPOCH FROM {column}) * 1000000)::bigint"
    return column


# Times travel as integers since this moment (microseconds in the statements here; the like
# flush uses milliseconds).
UNIX_EPOCH = datetime(1970, 1, 1, tzinfo=timezone.utc)


def _moment(value):
    if isinstance(value, int):
        return UNIX_EPOCH + timedelta(microseconds=value)
    return aware(value)


def _select(rows: str) -> str:
    """The list row of each comment of ``rows`` (a table or subquery aliased ``c``), with its
    author and the comment it replies to."""
    return (
        "SELECT c.id, c.subject_id, c.reply_to_id, c.root_id, c.path, c.depth, c.floor, c.author_id,"
        " c.status, c.visibility, c.pinned, c.featured, c.like_count, c.reply_count,"
        f" c.descendant_count, {_moment_sql('c.created_at')}, {_moment_sql('c.edited_at')},"
        " a.username, a.display_name, a.avatar_url,"
        " t.status, t.visibility, t.descendant_count, t.author_id,"
        " ta.username, ta.display_name, ta.avatar_url"
        f" FROM {rows}"
        f" LEFT JOIN {_USER} a ON a.id = c.author_id"
        f" LEFT JOIN {_COMMENT} t ON t.id = c.reply_to_id"
        f" LEFT JOIN {_USER} ta ON ta.id = t.author_id"
    )


def user_faces(ids) -> dict[int, UserFace]:
    """The public faces of users by id, in one statement of fixed text."""
    ids = list(ids)
    if not ids:
        return {}
    among, params = any_of("u.id", ids)
    with replicas.read_connection().cursor() as cursor:
        cursor.execute(f"SELECT u.id, u.username, u.display_name, u.avatar_url FROM {_USER} u WHERE {among}", params)
        return {row[0]: UserFace(*row) for row in cursor.fetchall()}


def aware(value):
    """Datetimes as the ORM returns them: aware, UTC (SQLite hands back naive UTC values)."""
    if value is not None and value.tzinfo is None:
        return value.replace(tzinfo=timezone.utc)
    return value


def _row(r: tuple) -> CommentRow:
    author = UserFace(r[7], r[17], r[18], r[19]) if r[7] is not None else None
    target = None
    if r[2] is not None:
        target_author = UserFace(r[23], r[24], r[25], r[26]) if r[23] is not None else None
        target = ReplyTarget(r[2], r[20], r[21], r[22], r[23], target_author)
    return CommentRow(
        r[0], r[1], r[2], r[3], r[4], r[5], r[6], r[7], r[8], r[9], bool(r[10]), bool(r[11]),
        r[12], r[13], r[14], _moment(r[15]), _moment(r[16]), author, target,
    )


def fetch(where: str, params: list, *, order: str = "", limit: int | None = None) -> list[CommentRow]:
    """Rows of ``comment_index c`` matching ``where`` (SQL over ``c``), in ``order``.

    With a ``limit``, the rows are chosen in a subquery and joined to their authors after it:
    a prepared statement's generic plan cannot tell a subject of 100 roots from one of 10,000
    (``subject_id = $1``), and, taking the one being read for small, joined and sorted every
    root of the big one before limiting (``docs/benchmarks.md``, core). A subquery with a LIMIT is
    planned apart, so the page is an ordered index scan that stops at ``limit`` whatever the
    estimate."""
    if limit is None:
        sql = f"{_select(f'{_COMMENT} c')} WHERE {where}" + (f" ORDER BY {order}" if order else "")
    else:
        page = f"SELECT * FROM {_COMMENT} c WHERE {where}" + (f" ORDER BY {order}" if order else "")
        sql = f"{_select(f'({page} LIMIT {int(limit)}) c')}" + (f" ORDER BY {order}" if order else "")
    with replicas.read_connection().cursor() as cursor:
        cursor.execute(sql, params)
        return [_row(r) for r in cursor.fetchall()]


def fetch_ids(ids, extra_where: str = "1 = 1", params: list | None = None) -> list[CommentRow]:
    """Rows by id (any order), optionally filtered further."""
    ids = list(ids)
    if not ids:
        return []
    among, among_params = any_of("c.id", ids)
    return fetch(f"{among} AND {extra_where}", [*among_params, *(params or [])])


# --- whole model rows ------------------------------------------------------------------------
#
# Single rows read on every request (the subject being listed, the bearer token's user) are
# loaded by a statement of fixed text too: compiling a select_related queryset with the
# viewer's annotations cost more than a millisecond of CPU, and its text is never prepared.


def fetch_one(sql: str, params: list) -> tuple | None:
    """One row, from the database reads of the moment go to (``replicas.read_alias``)."""
    with replicas.read_connection().cursor() as cursor:
        cursor.execute(sql, params)
        return cursor.fetchone()


class ModelColumns:
    """The concrete columns of ``model`` under an alias, and the way back from a row slice to
    an instance, with the database's converters applied as the ORM would (JSON, SQLite
    datetimes)."""

    def __init__(self, model, alias: str):
        self.model = model
        self.fields = model._meta.concrete_fields
        self.attnames = [f.attname for f in self.fields]
        self.sql = ", ".join(f"{alias}.{connection.ops.quote_name(f.column)}" for f in self.fields)
        self.width = len(self.fields)
        self._converters = None

    def _converters_by_index(self):
        if self._converters is None:
            found = []
            for index, f in enumerate(self.fields):
                column = f.get_col(self.model._meta.db_table)
                converters = connection.ops.get_db_converters(column) + column.get_db_converters(connection)
                if converters:
                    found.append((index, column, converters))
            self._converters = found
        return self._converters

    def instance(self, row, start: int = 0):
        values = list(row[start:start + self.width])
        for index, column, converters in self._converters_by_index():
            for convert in converters:
                values[index] = convert(values[index], column, connection)
        return self.model.from_db(connection.alias, self.attnames, values)


# --- visibility ----------------------------------------------------------------------------

_GONE = _quoted(*GONE_STATUSES)
_OWN_LIVE = _quoted(Status.PUBLISHED, Status.PENDING, Status.SHADOW)



def private_sql(x: str = "c") -> str:
    """Rows (of alias ``x``) that some readers see and the public does not: the condition of
    the ``comment_private_authors`` index, written so that PostgreSQL's planner matches it."""
    return f"({x}.status IN ({_quoted(Status.PENDING, Status.SHADOW)}) OR {x}.visibility = '{Visibility.FRIENDS}')"


def sees_private_sql(user_id: int, subject_ref: str) -> tuple[str, list]:
    """Does ``user_id`` see comments of the subject at ``subject_ref`` that the public does not:
    are they, or any of their mutual followers, the author of a pending, shadow or friends-only
    comment there? Index probes per author (``comment_private_authors``)."""
    friends, params = friends_sql(user_id)
    private = private_sql("p")
    return (
        f"(EXISTS (SELECT 1 FROM {_COMMENT} p WHERE p.subject_id = {subject_ref} AND p.author_id = %s AND {private})"
        f" OR EXISTS (SELECT 1 FROM ({friends}) m JOIN {_COMMENT} p ON p.subject_id = {subject_ref}"
        f" AND p.author_id = m.followee_id WHERE {private}))",
        [user_id, *params],
    )


def friends_sql(user_id: int) -> tuple[str, list]:
    """Ids of the users who follow ``user_id`` and whom ``user_id`` follows back."""
    return (
        f"SELECT f.followee_id FROM {_FOLLOW} f WHERE f.follower_id = %s AND EXISTS "
        f"(SELECT 1 FROM {_FOLLOW} g WHERE g.follower_id = f.followee_id AND g.followee_id = %s)",
        [user_id, user_id],
    )


def friend_ids_text_sql(user_id: int) -> tuple[str, list]:
    """A scalar subquery: ``user_id``'s mutual followers as comma-separated text (NULL for
    none), so the set rides along the query that loads the subject or comment being read."""
    friends, params = friends_sql(user_id)
    if connection.vendor == "postgresql":
        aggregate = "string_agg(CAST(m.followee_id AS text), ',')"
    else:
        aggregate = "group_concat(m.followee_id, ',')"
    return f"(SELECT {aggregate} FROM ({friends}) m)", params


def parse_id_text(text: str | None) -> set[int]:
    return {int(part) for part in text.split(",")} if text else set()


def _seen_only_by(x: str, user_id: int, friend_ids: set[int]) -> tuple[str, list]:
    """Rows (of alias ``x``) visible to ``user_id`` beyond the public ones: their own, in any
    live status, and friends-only comments of mutual followers. The friends are a literal list
    (most readers have none, and then the clause goes), which plans far faster than the
    follow-table subqueries it replaces."""
    sql, params = f"({x}.author_id = %s AND {x}.status IN ({_OWN_LIVE}))", [user_id]
    if friend_ids:
        among, among_params = any_of(f"{x}.author_id", sorted(friend_ids))
        sql += f" OR ({x}.status = '{Status.PUBLISHED}' AND {x}.visibility = '{Visibility.FRIENDS}' AND {among})"
        params += among_params
    return f"({sql})", params


def visible_sql(viewer, x: str = "c") -> tuple[str, list]:
    """Rows (of alias ``x``) that ``viewer`` may see, placeholders included. A deleted or
    rejected comment stays as a placeholder while its subtree holds anything this viewer sees:
    public comments (``descendant_count``) or, for a signed-in viewer, their own and their
    friends' (a path-range ``EXISTS``, evaluated only for gone rows without public
    descendants)."""
    if viewer.is_moderator:
        return "1 = 1", []
    anonymous = (
        f"(({x}.status = '{Status.PUBLISHED}' AND {x}.visibility = '{Visibility.PUBLIC}') "
        f"OR ({x}.status IN ({_GONE}) AND {x}.descendant_count > 0))"
    )
    if viewer.user is None:
        return anonymous, []
    me, friends = viewer.user.pk, viewer.friend_ids()
    mine, mine_params = _seen_only_by(x, me, friends)
    below, below_params = _seen_only_by("d", me, friends)
    return (
        f"({anonymous} OR {mine} OR ({x}.status IN ({_GONE}) AND {x}.descendant_count = 0 AND EXISTS ("
        f"SELECT 1 FROM {_COMMENT} d WHERE d.subject_id = {x}.subject_id AND d.path > {x}.path "
        f"AND d.path < ({x}.path || '{paths.SUBTREE_END}') AND {below})))",
        [*mine_params, *below_params],
    )

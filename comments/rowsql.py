"""The comment rows of every list, read with one hand-written statement shape.

Lists are the hot path: a page of two-level comments is read several times per second per
busy subject. Built through the ORM, each page spent most of its time in Python (cloning
querysets, compiling the per-viewer visibility filter with its subqueries, instantiating
models with deferred fields), three to five times what PostgreSQL spent answering. Here the
statement's SELECT list and the decoding of its rows are both generated from one column
specification (``LIST_COLUMNS``, read from the row classes' fields), rows arrive as tuples and
become ``CommentRow`` objects with slots, and the statement is composed of ``Sql`` pieces
(text and parameters travelling together) and an ``order`` of column names checked against
the comment table and quoted; its text depends only on the list's shape and the viewer's kind,
never on values (those are parameters).

The SQL is portable between PostgreSQL and SQLite except where a function says otherwise.
The visibility rule lives in ``comments.queries.visibility`` (its SQL and its Python form side
by side).
"""

from __future__ import annotations

import functools
from dataclasses import dataclass, fields
from datetime import UTC, datetime, timedelta
from typing import Any

from django.db import connection

from infra import replicas

from . import paths
from .models import Comment, CommentContent, Follow, User


def _table(model) -> str:
    return connection.ops.quote_name(model._meta.db_table)


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


@dataclass(frozen=True, slots=True)
class Sql:
    """A condition and its parameters, travelling together. Built only by the query modules
    from their own text (code constants, quoted identifiers, ``%s`` placeholders), never from
    input: values are always parameters."""

    text: str
    params: tuple = ()
    # The one subject the condition's rows are of, when it pins one (``in_subject``): ``fetch``
    # names it to the tables it joins, which Citus needs to route the statement.
    subject_id: int | None = None

    def __and__(self, other: Sql) -> Sql:
        subject_id = self.subject_id if self.subject_id is not None else other.subject_id
        return Sql(f"{self.text} AND {other.text}", (*self.params, *other.params), subject_id)

    def negated(self) -> Sql:
        return Sql(f"NOT ({self.text})", self.params)


def in_subject(subject_id: int, text: str = "", params: tuple = ()) -> Sql:
    """Rows of comment_index ``c`` of subject ``subject_id`` (and ``text``, if given)."""
    return Sql("c.subject_id = %s" + (f" AND {text}" if text else ""), (subject_id, *params), subject_id)


def any_of_sql(column: str, ids) -> Sql:
    """``any_of`` as an ``Sql`` piece."""
    text, params = any_of(column, ids)
    return Sql(text, tuple(params))


# Columns a list may be ordered by: the comment table's own, checked and quoted.
_COMMENT_COLUMN_NAMES = frozenset(f.column for f in Comment._meta.concrete_fields)
_DIRECTIONS = {"asc": "ASC", "desc": "DESC"}


def comment_column(name: str, alias: str = "c") -> str:
    """``alias.name`` for a column of the comment table, quoted; ``ValueError`` for any other."""
    if name not in _COMMENT_COLUMN_NAMES:
        raise ValueError(f"not a column of comments: {name}")
    return f"{alias}.{connection.ops.quote_name(name)}"


@functools.lru_cache(maxsize=256)
def order_sql(order: tuple[tuple[str, str], ...], alias: str = "c") -> str:
    """``ORDER BY`` terms from ``(column, "asc" | "desc")`` pairs over the comment table."""
    terms = []
    for column, direction in order:
        if direction not in _DIRECTIONS:
            raise ValueError(f"not a direction: {direction}")
        terms.append(f"{comment_column(column, alias)} {_DIRECTIONS[direction]}")
    return ", ".join(terms)


@dataclass(slots=True)
class UserFace:
    """What public output shows of a user, without loading the user row."""

    pk: int
    username: str
    display_name: str
    avatar_url: str
    is_guest: bool

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
    # The content, read with the row (one statement for a page, not two); None without one.
    body: str | None = None
    html: str | None = None

    @property
    def id(self) -> int:
        return self.pk

    def ancestor_ids(self) -> list[int]:
        return paths.split_path(self.path)[:-1]

    @classmethod
    def of_model(cls, comment: Comment, *, with_content: bool = False) -> CommentRow:
        """The row of a comment read as a model (one just written, one read alone): its author
        and what it replies to as a list row has them (loaded if the model has not got them:
        ``reply_target`` when a reader set it, else ``reply_to``), its content when
        ``with_content`` (the model's content row must be at hand)."""
        target = getattr(comment, "reply_target", None)
        replied = comment.reply_to if target is None and comment.reply_to_id is not None else None
        if replied is not None:
            target = ReplyTarget(
                replied.pk,
                replied.status,
                replied.visibility,
                replied.descendant_count,
                replied.author_id,
                _face(replied.author),
            )
        content = comment.content if with_content else None
        return cls(
            comment.pk,
            comment.subject_id,
            comment.reply_to_id,
            comment.root_id,
            comment.path,
            comment.depth,
            comment.floor,
            comment.author_id,
            comment.status,
            comment.visibility,
            comment.pinned,
            comment.featured,
            comment.like_count,
            comment.reply_count,
            comment.descendant_count,
            comment.created_at,
            comment.edited_at,
            _face(comment.author),
            target,
            content.body if content is not None else None,
            content.html if content is not None else None,
        )


def _face(user: User | None) -> UserFace | None:
    if user is None:
        return None
    return UserFace(user.pk, user.username, user.display_name, user.avatar_url, user.is_guest)


_COMMENT = _table(Comment)
_CONTENT_TABLE = _table(CommentContent)
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
UNIX_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)


def _moment(value):
    if isinstance(value, int):
        return UNIX_EPOCH + timedelta(microseconds=value)
    return aware(value)


def user_faces(ids) -> dict[int, UserFace]:
    """The public faces of users by id, in one statement of fixed text."""
    ids = list(ids)
    if not ids:
        return {}
    among, params = any_of("u.id", ids)
    with replicas.read_connection().cursor() as cursor:
        cursor.execute(
            f"SELECT u.id, u.username, u.display_name, u.avatar_url, u.is_guest FROM {_USER} u WHERE {among}", params
        )
        return {row[0]: UserFace(*row) for row in cursor.fetchall()}


def aware(value):
    """Datetimes as the ORM returns them: aware, UTC (SQLite hands back naive UTC values)."""
    if value is not None and value.tzinfo is None:
        return value.replace(tzinfo=UTC)
    return value


# --- the list row: one column specification for the SELECT list and the decoding ------------


@dataclass(frozen=True, slots=True)
class Column:
    """One column of the list statement: ``alias.name``, read as ``kind`` (a plain value, a
    boolean, or a moment: see ``_moment_sql``)."""

    alias: str
    name: str
    kind: str = "value"

    def sql(self) -> str:
        column = f"{self.alias}.{connection.ops.quote_name(self.name)}"
        return _moment_sql(column) if self.kind == "moment" else column


_KINDS = {"pinned": "bool", "featured": "bool", "created_at": "moment", "edited_at": "moment"}
_NESTED = ("author", "reply_target", "body", "html")


def _columns(alias: str, names) -> tuple[Column, ...]:
    return tuple(Column(alias, "id" if n == "pk" else n, _KINDS.get(n, "value")) for n in names)


# The row classes' fields name the columns: a comment's own (``c``), its author's face (``a``,
# keyed by ``c.author_id``), what it replies to (``t``, keyed by ``c.reply_to_id``) and that
# comment's author's face (``ta``, keyed by ``t.author_id``).
_ROW_NAMES = tuple(f.name for f in fields(CommentRow) if f.name not in _NESTED)
_FACE_NAMES = tuple(f.name for f in fields(UserFace) if f.name != "pk")
_TARGET_NAMES = tuple(f.name for f in fields(ReplyTarget) if f.name not in ("pk", "author"))
_ROW = _columns("c", _ROW_NAMES)
AUTHOR_AND_TARGET = (
    *_columns("a", _FACE_NAMES),
    *_columns("t", _TARGET_NAMES),
    *_columns("ta", _FACE_NAMES),
)
_CONTENT = _columns("cc", ("body", "html"))
LIST_COLUMNS = (*_ROW, *AUTHOR_AND_TARGET, *_CONTENT)


def _face_join(alias: str, user_id: str, vendor: str) -> str:
    """The face of the user ``user_id`` names, joined to each row as ``alias``. PostgreSQL: a
    lookup by primary key per row (LATERAL, kept a lookup by ``OFFSET 0``). Joined as a set, the
    users of a small site (1,800 in the benchmark) were hashed whole for a page of 100 rows, a
    scan that cost a third of the statement."""
    if vendor != "postgresql":
        return f" LEFT JOIN {_USER} {alias} ON {alias}.id = {user_id}"
    face = ", ".join(f"u.{connection.ops.quote_name(name)}" for name in _FACE_NAMES)
    return f" LEFT JOIN LATERAL (SELECT {face} FROM {_USER} u WHERE u.id = {user_id} OFFSET 0) {alias} ON TRUE"


@functools.cache
def _joins(vendor: str) -> str:
    """The joins of ``AUTHOR_AND_TARGET`` and the content to ``comment_index c``."""
    return (
        _face_join("a", "c.author_id", vendor)
        + f" LEFT JOIN {_COMMENT} t ON t.id = c.reply_to_id AND t.subject_id = c.subject_id"
        + _face_join("ta", "t.author_id", vendor)
        + f" LEFT JOIN {_CONTENT_TABLE} cc ON cc.comment_id = c.id AND cc.subject_id = c.subject_id"
    )


def columns_sql(columns) -> str:
    return ", ".join(column.sql() for column in columns)


_LIST_SELECT = f"SELECT {columns_sql(LIST_COLUMNS)} FROM "
_CONVERTERS = tuple(
    (index, bool if column.kind == "bool" else _moment) for index, column in enumerate(_ROW) if column.kind != "value"
)
_WIDTH, _FACE, _TARGET = len(_ROW), len(_FACE_NAMES), len(_TARGET_NAMES)
_AUTHOR_ID, _REPLY_TO_ID = _ROW_NAMES.index("author_id"), _ROW_NAMES.index("reply_to_id")
_TARGET_AUTHOR_ID = _TARGET_NAMES.index("author_id")


def author_and_target(
    author_id: int | None, reply_to_id: int | None, r: tuple, at: int
) -> tuple[UserFace | None, ReplyTarget | None]:
    """The author's face and the reply target of a comment, decoded from the
    ``AUTHOR_AND_TARGET`` columns of row ``r`` starting at index ``at``."""
    author = UserFace(author_id, *r[at : at + _FACE]) if author_id is not None else None
    if reply_to_id is None:
        return author, None
    at += _FACE
    target = r[at : at + _TARGET]
    target_author_id = target[_TARGET_AUTHOR_ID]
    at += _TARGET
    target_author = UserFace(target_author_id, *r[at : at + _FACE]) if target_author_id is not None else None
    return author, ReplyTarget(reply_to_id, *target, target_author)  # type: ignore[call-arg]  # the columns in field order


def _row(r: tuple) -> CommentRow:
    values = list(r[:_WIDTH])
    for index, convert in _CONVERTERS:
        values[index] = convert(values[index])
    author, target = author_and_target(values[_AUTHOR_ID], values[_REPLY_TO_ID], r, _WIDTH)
    return CommentRow(*values, author, target, r[-2], r[-1])  # type: ignore[call-arg]  # the columns in field order


def fetch(where: Sql, *, order: tuple[tuple[str, str], ...] = (), limit: int | None = None) -> list[CommentRow]:
    """Rows of ``comment_index c`` matching ``where``, in ``order`` (``(column, direction)``
    pairs over the comment table).

    With a ``limit``, the rows are chosen in a subquery and joined to their authors after it:
    a prepared statement's generic plan cannot tell a subject of 100 roots from one of 10,000
    (``subject_id = $1``), and, taking the one being read for small, joined and sorted every
    root of the big one before limiting (``docs/benchmarks.md``, core). A subquery with a LIMIT is
    planned apart, so the page is an ordered index scan that stops at ``limit`` whatever the
    estimate."""
    if not isinstance(where, Sql):
        raise TypeError("fetch takes an Sql condition")
    ordered = f" ORDER BY {order_sql(order)}" if order else ""
    params = list(where.params)
    if limit is None:
        sql = f"{_LIST_SELECT}{_COMMENT} c{_joins(connection.vendor)} WHERE {where.text}{ordered}"
    else:
        sql = f"{_LIST_SELECT}(SELECT * FROM {_COMMENT} c WHERE {where.text}{ordered} LIMIT {int(limit)}) c{_joins(connection.vendor)}"
        if where.subject_id is not None:
            # The subject again outside the subquery: it pins the joined reply targets and
            # contents to it too, so Citus sends the whole statement to the subject's shard
            # (without it, both tables were read from every shard).
            sql += " WHERE c.subject_id = %s"
            params.append(where.subject_id)
        sql += ordered
    with replicas.read_connection().cursor() as cursor:
        cursor.execute(sql, params)
        return [_row(r) for r in cursor.fetchall()]


def fetch_ids(ids, where: Sql | None = None) -> list[CommentRow]:
    """Rows by id (any order), optionally filtered further by ``where``."""
    ids = list(ids)
    if not ids:
        return []
    among = any_of_sql("c.id", ids)
    return fetch(among & where if where is not None else among)


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
        self._converters: list[tuple[int, Any, list]] | None = None

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
        values = list(row[start : start + self.width])
        for index, column, converters in self._converters_by_index():
            for convert in converters:
                values[index] = convert(values[index], column, connection)
        return self.model.from_db(connection.alias, self.attnames, values)


# --- follows ---------------------------------------------------------------------------------


def friends_sql(user_id: int) -> tuple[str, list]:
    """Ids of the users who follow ``user_id`` and whom ``user_id`` follows back. A join (a pair
    follows once), not a correlated subquery: Citus plans none beside a reference table when
    the statement is planned on the coordinator (the notification fan-out's)."""
    return (
        f"SELECT f.followee_id FROM {_FOLLOW} f JOIN {_FOLLOW} g "
        "ON g.follower_id = f.followee_id AND g.followee_id = f.follower_id WHERE f.follower_id = %s",
        [user_id],
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

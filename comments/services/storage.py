"""Comment storage: new comments' rows, floors and counters (``comments_store``, the one writer
of them: posts, replies and imports), the locks (in the lock order: the subject row first, then
comment rows) and the subject's cached pages."""

from __future__ import annotations

import json
import string
from collections import Counter, defaultdict
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from functools import partial
from typing import Any, Protocol

from django.conf import settings
from django.db import connection, transaction
from django.db.models import Case, F, Value, When
from psycopg import sql

from infra import citus, pagecache

from .. import paths
from ..exceptions import InvalidInput, NotFound, SubjectClosed
from ..models import Comment, CommentContent, Status, Subject, SubjectState

# --- counters ------------------------------------------------------------------------------


def apply_count_delta(comment: Comment, delta: int, *, subject_counted: bool = False) -> None:
    """Add ``delta`` (+1/-1) to every counter ``comment`` takes part in; the subject's are
    left alone when ``subject_counted`` (the caller did them).

    Call inside the transaction that changes the comment, after locking its subject row.
    """
    top_level = comment.depth == 0
    if not subject_counted:
        Subject.objects.filter(pk=comment.subject_id).update(
            comment_count=F("comment_count") + delta,
            root_count=F("root_count") + (delta if top_level else 0),
        )
    if top_level:
        return
    ancestors, direct_parents = _counted_ancestors(comment)
    Comment.objects.filter(subject_id=comment.subject_id, pk__in={*ancestors, *direct_parents}).update(
        descendant_count=F("descendant_count") + Case(When(pk__in=ancestors, then=Value(delta)), default=Value(0)),
        reply_count=F("reply_count") + Case(When(pk__in=direct_parents, then=Value(delta)), default=Value(0)),
    )


def _counted_ancestors(comment: Comment) -> tuple[list[int], list[int]]:
    """Of a reply: the comments whose ``descendant_count`` counts it (every ancestor in the
    tree) and those whose ``reply_count`` does (its top-level comment and the one it answers)."""
    assert comment.root_id is not None and comment.reply_to_id is not None  # a reply
    return comment.ancestor_ids(), sorted({comment.root_id, comment.reply_to_id})


# --- new comments --------------------------------------------------------------------------


@dataclass(slots=True)
class NewComment:
    """A comment to store: its index row and its content row as the caller made them (id,
    subject, author, the comment answered, status, visibility, dates; its place in the tree
    too, or an empty ``path`` for the store to place it under ``reply_to_id``), whether it
    counts in the public counters, and whether it asks to be pinned or featured. A published
    comment is featured when it asks; a published top-level one pinned when it asks and its
    subject has fewer than ``COMMENTS_PINNED_LIMIT`` pinned comments (the first asking first)."""

    comment: Comment
    content: CommentContent
    counted: bool
    pinned: bool = False
    featured: bool = False


@dataclass(slots=True)
class Stored:
    """What ``comments_store`` did beyond what the comments now say (their floors, flags and
    counters are set on them)."""

    unpinned: list[NewComment] = field(default_factory=list)  # asked to be pinned, over the limit


class Parent(Protocol):
    """A comment as a reply is placed under it: a stored one, or one of the same batch."""

    @property
    def id(self) -> int: ...
    @property
    def path(self) -> str: ...
    @property
    def depth(self) -> int: ...
    @property
    def root_id(self) -> int | None: ...


def comment_place(comment: Comment, parent: Parent | None) -> None:
    """Set ``comment``'s place in the tree from the comment it answers (``parent``; None for
    a top-level comment): path, depth, thread (``root_id``) and ``reply_to_id``; its id must
    be set. At the depth cap (``COMMENTS_MAX_DEPTH``) a reply is stored as its target's
    sibling; ``reply_to_id`` still names the target, so "reply to @name" stays right."""
    if parent is None:
        comment.path, comment.depth, comment.root_id, comment.reply_to_id = paths.encode_step(comment.id), 0, None, None
        return
    comment.root_id, comment.reply_to_id = parent.root_id or parent.id, parent.id
    if parent.depth >= settings.COMMENTS_MAX_DEPTH:
        comment.path, comment.depth = paths.child_path(paths.parent_path(parent.path), comment.id), parent.depth
    else:
        comment.path, comment.depth = paths.child_path(parent.path, comment.id), parent.depth + 1


def comments_store(new: Sequence[NewComment], *, closed_ok: bool) -> Stored:
    """Store new comments, one or a batch, in the caller's order (a reply after the comment
    of the batch it answers): their rows, each its floor, and every counter as it counts
    (``counted``) in its subject and, for a reply, in its ancestors; each comment's floor,
    flags and counters are set on it. A top-level comment's floor comes from its subject's
    sequence (``floor_seq``), a reply's from its thread's (the top-level comment's
    ``reply_floor_seq``); both are taken under the row's lock in the transaction that
    inserts, so floors stay unique and gap-free. A comment without a path is placed under
    its ``reply_to_id`` (``comment_place``).

    Every subject must still be open, unless ``closed_ok`` (a post by a moderator of the
    site, an import): the check the caller made on the subject as it read it is made again
    on the row this updates, under its lock. A closed one stores nothing and raises
    ``SubjectClosed``; a subject or thread deleted meanwhile, ``NotFound``.

    The general path is a handful of set-based statements whatever the batch's size (on
    SQLite too), in the caller's transaction or its own. On PostgreSQL a batch of one that
    asks for no flag is one statement (``_store_in_one_statement``) unless
    ``COMMENTS_ONE_STATEMENT_POST`` is off: run in autocommit, the subject row is locked only
    while the server runs it and commits, with no round trip to this process (which may be
    waiting for the GIL behind other threads) while every other writer of the subject waits.

    The subjects' cached pages are dropped once the comments are committed, and only then: a
    reader reads the subject's version before the rows, so a page rebuilt from the rows as
    they were carries a version the deletion made old."""
    stored = Stored()
    if not new:
        return stored
    _place_unplaced(new)
    for item in new:
        comment = item.comment
        comment.reply_count = comment.descendant_count = comment.reply_floor_seq = 0
        comment.featured = item.featured and comment.status == Status.PUBLISHED
        comment.pinned = False  # granted under the subject's lock
    # Not on Citus: it cannot send an INSERT ... SELECT from a data-modifying CTE to one shard,
    # and runs it through the coordinator with every worker (docs/citus.md).
    one_statement = (
        connection.vendor == "postgresql"
        and settings.COMMENTS_ONE_STATEMENT_POST
        and not citus.is_coordinator(connection)
    )
    if one_statement and len(new) == 1 and not (new[0].pinned or new[0].featured):
        _store_in_one_statement(new[0], closed_ok=closed_ok)
    else:
        stored.unpinned = _store_in_batch(new, closed_ok=closed_ok)
    subject_ids = sorted({item.comment.subject_id for item in new})
    transaction.on_commit(lambda: pagecache.subjects_changed(subject_ids))
    for item in new:
        for row in (item.comment, item.content):
            row._state.adding = False
            row._state.db = connection.alias
    return stored


def _place_unplaced(new: Sequence[NewComment]) -> None:
    """Place the comments given without a path under the comment each answers: one of the
    batch before it, or a stored one of its subject."""
    unplaced = [item.comment for item in new if not item.comment.path]
    if not unplaced:
        return
    batch = {item.comment.id: item.comment for item in new}
    wanted = {c.reply_to_id for c in unplaced if c.reply_to_id is not None and c.reply_to_id not in batch}
    stored = {}
    if wanted:
        stored = {p.id: p for p in Comment.objects.filter(pk__in=wanted).only("subject_id", "path", "depth", "root_id")}
    for comment in unplaced:
        parent: Comment | None = None
        if comment.reply_to_id is not None:
            parent = batch.get(comment.reply_to_id) or stored.get(comment.reply_to_id)
            if parent is None or not parent.path:
                raise NotFound("The comment replied to does not exist.")
            if parent.subject_id != comment.subject_id:
                raise InvalidInput("The comment replied to is in another subject.")
        comment_place(comment, parent)


# --- the rows' columns, named once -------------------------------------------------------------


def _columns(spec: str) -> tuple[tuple[str, str], ...]:
    return tuple((name, kind) for name, kind in (column.split() for column in spec.split(",")))


# (column, PostgreSQL type) of the rows the store writes: a comment's index row (every column
# but the generated ``hot_score``) and its content row, each value the model instance's
# attribute of that name. The type casts a parameter where PostgreSQL infers none (a SELECT
# list, an array). tests/comments/test_storage.py checks them against the models.
COMMENT_COLUMNS = _columns(
    "id bigint, subject_id bigint, author_id bigint, reply_to_id bigint, root_id bigint, path text, depth smallint, "
    "floor integer, status text, visibility text, pinned boolean, featured boolean, like_count integer, "
    "reply_count integer, descendant_count integer, reply_floor_seq integer, created_at timestamptz, "
    "edited_at timestamptz"
)
CONTENT_COLUMNS = _columns(
    "comment_id bigint, subject_id bigint, body text, html text, mentions jsonb, author_ip inet, user_agent text"
)


def _row(instance: Comment | CommentContent, columns: Sequence[tuple[str, str]]) -> dict[str, Any]:
    """The row's values by column, as a hand-written statement takes them (JSON as text; on
    SQLite, times as Django stores them)."""
    values = {}
    for name, kind in columns:
        value = getattr(instance, name)
        if kind == "jsonb":
            value = json.dumps(value)
        elif isinstance(value, datetime) and connection.vendor != "postgresql":
            value = connection.ops.adapt_datetimefield_value(value)
        values[name] = value
    return values


# --- statements ----------------------------------------------------------------------------

_rendered: dict[tuple, str] = {}


def _statement(key: tuple, build: Callable[[], sql.Composable]) -> str:
    """The text of the statement ``build`` composes, made once per database vendor and
    ``key``. Django's cursor hands a query to psycopg as it is, and psycopg would take a
    ``Composed``, but execute wrappers (the tests' and benchmarks' counters, the replica
    router's) read the query as a string; SQLite takes the same text (double-quoted
    identifiers, ``%(name)s`` placeholders, which Django's SQLite cursor turns into ``:name``)
    for the statements that run on both."""
    key = (connection.vendor, *key)
    text = _rendered.get(key)
    if text is None:
        context = None
        if connection.vendor == "postgresql":
            connection.ensure_connection()
            context = connection.connection
        text = _rendered[key] = build().as_string(context)
    return text


def _compose(template: str, **parts: sql.Composable) -> sql.Composed:
    """``template`` with its ``{name}`` fields filled: by ``parts`` where named, by the named
    parameter ``%(name)s`` otherwise; ``{subject}``, ``{comment}`` and ``{content}`` name the
    tables."""
    names = {name for _, name, _, _ in string.Formatter().parse(template) if name}
    parts = {
        "subject": sql.Identifier(Subject._meta.db_table),
        "comment": sql.Identifier(Comment._meta.db_table),
        "content": sql.Identifier(CommentContent._meta.db_table),
        **parts,
    }
    return sql.SQL(template).format(**{name: parts[name] if name in parts else sql.Placeholder(name) for name in names})


def _names(columns: Sequence[tuple[str, str]]) -> sql.Composable:
    return sql.SQL(", ").join(sql.Identifier(name) for name, _ in columns)


def _casts(columns: Sequence[tuple[str, str]], prefix: str = "", **given: sql.Composable) -> sql.Composable:
    """The columns' values as a SELECT list: ``given`` ones as given, the others as named
    parameters (``prefix`` + the column's name), cast to the column's type."""
    return sql.SQL(", ").join(
        given[name] if name in given else sql.SQL("{}::{}").format(sql.Placeholder(prefix + name), sql.SQL(kind))
        for name, kind in columns
    )


# Of the subject row a store updates: still open, or the caller may write in a closed one.
_STILL_OPEN = "({subject}.state <> {closed} OR {closed_ok})"


def _not_stored(subject_id: int, what: str) -> Exception:
    """Why a store stored nothing: its subject was closed since the caller read it, or else
    what ``what`` names was deleted."""
    state = Subject.objects.filter(pk=subject_id).values_list("state", flat=True).first()
    if state == SubjectState.CLOSED:
        return SubjectClosed()
    return NotFound(f"{what} no longer exists.")


# --- the fast path: one comment in one statement (PostgreSQL) --------------------------------


def _one_statement(top_level: bool) -> sql.Composed:
    """A new comment's floor, counters and rows in one data-modifying statement."""
    still_open = _compose(_STILL_OPEN)
    if top_level:
        # The subject row: the floor and the counters.
        steps = _compose(
            "taken AS (UPDATE {subject} SET floor_seq = floor_seq + 1, comment_count = comment_count + {counted}, "
            "root_count = root_count + {counted} WHERE id = {subject_id} AND {still_open} RETURNING floor_seq AS floor)",
            still_open=still_open,
        )
        floor_from: sql.Composable = sql.SQL("taken")
    else:
        # The subject row's counter first (the lock order: the one-time filter below runs this
        # before any comment row is touched), then the thread's rows: the top-level comment's
        # floor sequence and every counter the reply takes part in, in one UPDATE (a statement
        # may change a row only once).
        steps = _compose(
            "subject AS (UPDATE {subject} SET comment_count = comment_count + {counted} "
            "WHERE id = {subject_id} AND {still_open} RETURNING id), "
            "taken AS (UPDATE {comment} SET "
            "reply_floor_seq = reply_floor_seq + CASE WHEN id = {root_id} THEN 1 ELSE 0 END, "
            "descendant_count = descendant_count + CASE WHEN id = ANY({ancestors}::bigint[]) THEN {counted} ELSE 0 END, "
            "reply_count = reply_count + CASE WHEN id = ANY({answered}::bigint[]) THEN {counted} ELSE 0 END "
            "WHERE id = ANY({touched}::bigint[]) AND subject_id = {subject_id} AND (SELECT count(*) FROM subject) = 1 "
            "RETURNING id, reply_floor_seq AS floor)",
            still_open=still_open,
        )
        floor_from = _compose("taken WHERE taken.id = {root_id}")
    return _compose(
        "WITH {steps}, "
        "stored AS (INSERT INTO {comment} ({columns}) SELECT {values} FROM {floor_from} RETURNING id, floor), "
        "stored_content AS (INSERT INTO {content} ({content_columns}) SELECT {content_values} FROM stored) "
        "SELECT floor FROM stored",
        steps=steps,
        columns=_names(COMMENT_COLUMNS),
        # Cast: in a SELECT list, unlike VALUES, parameters get no type from the target column.
        values=_casts(COMMENT_COLUMNS, floor=sql.SQL("taken.floor")),
        floor_from=floor_from,
        content_columns=_names(CONTENT_COLUMNS),
        content_values=_casts(CONTENT_COLUMNS, "content_", comment_id=sql.SQL("stored.id")),
    )


def _store_in_one_statement(item: NewComment, *, closed_ok: bool) -> None:
    comment = item.comment
    top_level = comment.depth == 0
    statement = _statement(("one", top_level), lambda: _one_statement(top_level))
    params = _row(comment, COMMENT_COLUMNS)
    del params["floor"]
    params.update((f"content_{name}", value) for name, value in _row(item.content, CONTENT_COLUMNS).items())
    del params["content_comment_id"]
    params.update(counted=int(item.counted), closed=SubjectState.CLOSED.value, closed_ok=closed_ok)
    if not top_level:
        ancestors, answered = _counted_ancestors(comment)
        params.update(ancestors=ancestors, answered=answered, touched=sorted({*ancestors, *answered}))
    with connection.cursor() as cursor:
        cursor.execute(statement, params)
        row = cursor.fetchone()
    if row is None:
        # The subject was closed, or it or the thread deleted, since they were read: nothing
        # was stored.
        raise _not_stored(comment.subject_id, "The discussion or the comment replied to")
    comment.floor = row[0]


# --- the general path: a batch in a few set-based statements -------------------------------

# Parameters of one SQLite statement: under its limit (32,766 since 3.32).
_SQLITE_PARAMS = 30_000
# From this many rows on, PostgreSQL takes them by COPY: thousands in one round trip, with no
# statement to parse; fewer go in one INSERT each, in one round trip too (psycopg pipelines an
# executemany), prepared once a connection has run it a few times.
_COPY_FROM = 16


def _source(columns: Sequence[tuple[str, str]], rows: Sequence[tuple]) -> Iterator[tuple[sql.Composable, dict]]:
    """``(derived table aliased x with the given columns, its parameters)`` covering ``rows``:
    one on PostgreSQL, an ``unnest`` of one array parameter per column, named after it (the
    statement's text is the same for any rows); on SQLite, ``VALUES`` lists in chunks under its
    parameter limit."""
    if connection.vendor == "postgresql":
        arrays = sql.SQL(", ").join(_casts(((name, f"{kind}[]"),)) for name, kind in columns)
        columns_of = zip(columns, zip(*rows, strict=True), strict=True)
        yield sql.SQL("unnest({}) AS x({})").format(arrays, _names(columns)), {n: list(v) for (n, _), v in columns_of}
        return
    per_chunk = max(1, _SQLITE_PARAMS // len(columns))
    selected = sql.SQL(", ").join(
        sql.SQL("column{} AS {}").format(sql.SQL(str(i + 1)), sql.Identifier(name))
        for i, (name, _) in enumerate(columns)
    )
    for start in range(0, len(rows), per_chunk):
        chunk = rows[start : start + per_chunk]
        params = {f"x{r}_{c}": value for r, row in enumerate(chunk) for c, value in enumerate(row)}
        values = sql.SQL(", ").join(
            sql.SQL("({})").format(sql.SQL(", ").join(sql.Placeholder(f"x{r}_{c}") for c in range(len(columns))))
            for r in range(len(chunk))
        )
        yield sql.SQL("(SELECT {} FROM (VALUES {})) AS x").format(selected, values), params


def _update_from(name: str, template: str, columns: str, rows: Sequence[tuple], params: dict) -> dict[int, int]:
    """Run the UPDATE of ``template`` over the ``rows`` of ``columns`` (its ``{source}``, as
    many as ``_source`` makes); ``{id: value}`` of the rows it returns. On PostgreSQL its text
    is the same for any rows, made once."""
    parts = {"still_open": _compose(_STILL_OPEN)}
    returned: dict[int, int] = {}
    if not rows:
        return returned
    with connection.cursor() as cursor:
        for source, source_params in _source(_columns(columns), rows):
            build = partial(_compose, template, source=source, **parts)
            statement = _statement((name,), build) if connection.vendor == "postgresql" else build().as_string(None)
            cursor.execute(statement, {**params, **source_params})
            returned.update((row[0], row[1]) for row in cursor.fetchall())
    return returned


def _lock_in_order(subject_ids: list[int], comments: dict[int, int]) -> None:
    """Lock the subjects' rows, then the ``comments``' (comment id -> subject id), each in id
    order (PostgreSQL): for a batch of many, whose UPDATEs lock rows in whatever order the plan
    meets them. Two statements whatever the batch.

    A Citus coordinator locks rows within one shard a statement: there the subjects are grouped
    by their shard (one statement asks), and each shard in shard order gets one statement that
    locks its subjects, then their comments, each in id order. The subjects are locked by a CTE
    that the comments' statement reads in a condition on no row of its own, which PostgreSQL
    evaluates once, before the scan. Every batch takes its locks in one order (shard, then id),
    as a single post does (its subject, then its comments)."""

    def lock(name: str, template: str, params: dict) -> None:
        cursor.execute(_statement(("lock", name), partial(_compose, template)), params)

    with connection.cursor() as cursor:
        if not citus.is_coordinator(connection):
            lock(
                "subjects",
                "SELECT id FROM {subject} WHERE id = ANY({ids}::bigint[]) ORDER BY id FOR UPDATE",
                {"ids": subject_ids},
            )
            if comments:
                lock(
                    "comments",
                    "SELECT id FROM {comment} WHERE id = ANY({ids}::bigint[]) ORDER BY id FOR UPDATE",
                    {"ids": sorted(comments)},
                )
            return
        lock(
            "shards",
            "SELECT array_agg(id ORDER BY id) FROM unnest({ids}::bigint[]) AS id "
            "GROUP BY get_shard_id_for_distribution_column({table}::regclass, id) "
            "ORDER BY get_shard_id_for_distribution_column({table}::regclass, id)",
            {"ids": subject_ids, "table": Subject._meta.db_table},
        )
        subjects = "SELECT id FROM {subject} WHERE id = ANY({subjects}::bigint[]) ORDER BY id FOR UPDATE"
        for (group,) in cursor.fetchall():
            members = set(group)
            ids = sorted(c for c, s in comments.items() if s in members)
            if not ids:
                lock("shard's subjects", subjects, {"subjects": group})
                continue
            lock(
                "shard",
                f"WITH locked AS ({subjects}) "
                "SELECT id FROM {comment} WHERE subject_id = ANY({subjects}::bigint[]) AND id = ANY({ids}::bigint[]) "
                "AND (SELECT count(*) FROM locked) > 0 ORDER BY id FOR UPDATE",
                {"subjects": group, "ids": ids},
            )


def _insert(model: type[Comment | CommentContent], columns: Sequence[tuple[str, str]], instances: Sequence) -> None:
    """The instances' rows (``columns``): COPY on PostgreSQL from ``_COPY_FROM`` rows on, one
    INSERT per row otherwise (and on SQLite), run as one ``executemany``."""
    rows = [_row(instance, columns) for instance in instances]
    table = sql.Identifier(model._meta.db_table)
    with connection.cursor() as cursor:
        if connection.vendor == "postgresql" and len(rows) >= _COPY_FROM:
            copy_sql = _statement(
                ("copy", model._meta.db_table),
                lambda: sql.SQL("COPY {} ({}) FROM STDIN").format(table, _names(columns)),
            )
            with connection.wrap_database_errors, cursor.cursor.copy(copy_sql) as copy:  # IntegrityError, as Django's
                for row in rows:
                    copy.write_row(tuple(row.values()))
            return
        values = sql.SQL(", ").join(sql.Placeholder(name) for name, _ in columns)
        insert = _statement(
            ("insert", model._meta.db_table),
            lambda: sql.SQL("INSERT INTO {} ({}) VALUES ({})").format(table, _names(columns), values),
        )
        cursor.executemany(insert, rows)


def _store_in_batch(new: Sequence[NewComment], *, closed_ok: bool) -> list[NewComment]:
    """The general path; returns the comments that asked to be pinned and were not."""
    comments = [item.comment for item in new]
    batch = {c.id: c for c in comments}
    # Of each subject: top-level comments, counted comments, counted top-level comments.
    subjects: dict[int, list[int]] = defaultdict(lambda: [0, 0, 0])
    # Of each comment stored before the batch: subject, reply floors taken, descendants, replies.
    outer: dict[int, list[int]] = defaultdict(lambda: [0, 0, 0, 0])
    for item in new:
        comment = item.comment
        deltas = subjects[comment.subject_id]
        deltas[1] += item.counted
        if comment.depth == 0:
            deltas[0] += 1
            deltas[2] += item.counted
            continue
        assert comment.root_id is not None  # a reply
        if comment.root_id not in batch:
            outer[comment.root_id][0] = comment.subject_id
            outer[comment.root_id][1] += 1
        if not item.counted:
            continue
        # As apply_count_delta counts one comment: every ancestor in the tree counts it as a
        # descendant; the top-level comment and the one it answers as a reply.
        for ids, attribute, index in zip(
            _counted_ancestors(comment), ("descendant_count", "reply_count"), (2, 3), strict=True
        ):
            for pk in ids:
                if pk in batch:
                    setattr(batch[pk], attribute, getattr(batch[pk], attribute) + 1)
                else:
                    outer[pk][0] = comment.subject_id
                    outer[pk][index] += 1
    subject_ids = sorted(subjects)
    # A batch of one subject (a post) names it as a value too: Citus then sends each UPDATE to
    # that subject's shard alone, where a join with the rows' list went to every worker.
    only = {"only_subject": subject_ids[0]} if len(subject_ids) == 1 else {}

    def pinned(column: str) -> str:
        return f" AND {column} = {{only_subject}}" if only else ""

    with transaction.atomic():
        if len(new) > 1 and connection.vendor == "postgresql":
            _lock_in_order(subject_ids, {pk: outer[pk][0] for pk in outer})
        floor_seqs = _update_from(
            "subjects:one" if only else "subjects",
            "UPDATE {subject} SET floor_seq = {subject}.floor_seq + x.tops, "
            "comment_count = {subject}.comment_count + x.counted, root_count = {subject}.root_count + x.roots "
            "FROM {source} WHERE {subject}.id = x.id AND {still_open}"
            + pinned("{subject}.id")
            + " RETURNING {subject}.id, {subject}.floor_seq",
            "id bigint, tops integer, counted integer, roots integer",
            [(pk, *subjects[pk]) for pk in subject_ids],
            {"closed": SubjectState.CLOSED.value, "closed_ok": closed_ok, **only},
        )
        for subject_id in subject_ids:
            if subject_id not in floor_seqs:
                raise _not_stored(subject_id, "The discussion")
        unpinned = _grant_pins(new)
        reply_floor_seqs = _update_from(
            "comments:one" if only else "comments",
            "UPDATE {comment} SET reply_floor_seq = {comment}.reply_floor_seq + x.replies, "
            "descendant_count = {comment}.descendant_count + x.descendants, "
            "reply_count = {comment}.reply_count + x.answers "
            "FROM {source} WHERE {comment}.id = x.id AND {comment}.subject_id = x.subject_id"
            + pinned("{comment}.subject_id")
            + " RETURNING {comment}.id, {comment}.reply_floor_seq",
            "id bigint, subject_id bigint, replies integer, descendants integer, answers integer",
            [(pk, *outer[pk]) for pk in sorted(outer)],
            only,
        )
        if len(reply_floor_seqs) < len(outer):
            raise NotFound("The comment replied to no longer exists.")
        # The floors taken, handed out in the batch's order: the subjects', the threads' of
        # top-level comments stored before, those of the batch's own.
        floors = {pk: floor_seqs[pk] - tops for pk, (tops, _, _) in subjects.items()}
        reply_floors = {pk: reply_floor_seqs[pk] - taken for pk, (_, taken, _, _) in outer.items()}
        for comment in comments:
            if comment.depth == 0:
                floors[comment.subject_id] += 1
                comment.floor = floors[comment.subject_id]
            elif comment.root_id in batch:
                root = batch[comment.root_id]
                root.reply_floor_seq += 1
                comment.floor = root.reply_floor_seq
            else:
                reply_floors[comment.root_id] += 1  # type: ignore[index]  # a reply: it has a root
                comment.floor = reply_floors[comment.root_id]  # type: ignore[index]
        _insert(Comment, COMMENT_COLUMNS, comments)
        _insert(CommentContent, CONTENT_COLUMNS, [item.content for item in new])
    return unpinned


def _grant_pins(new: Sequence[NewComment]) -> list[NewComment]:
    """Pin the published top-level comments that ask, while their subject (locked) has fewer
    than ``COMMENTS_PINNED_LIMIT`` pinned; the others that asked, returned."""
    asking = [i for i in new if i.pinned and i.comment.depth == 0 and i.comment.status == Status.PUBLISHED]
    if not asking:
        return []
    subject_ids = {item.comment.subject_id for item in asking}
    pinned = Counter(
        Comment.objects.filter(subject_id__in=subject_ids, depth=0, pinned=True).values_list("subject_id", flat=True)
    )
    refused = []
    for item in asking:
        if pinned[item.comment.subject_id] >= settings.COMMENTS_PINNED_LIMIT:
            refused.append(item)
        else:
            pinned[item.comment.subject_id] += 1
            item.comment.pinned = True
    return refused

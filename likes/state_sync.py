"""Keeping the Redis like state in step with the database: loading a comment's state when it
is missing (evicted, Redis restarted or flushed), and dropping states that fell behind.

Used by reads and writes alike: loading fills a cache from the rows, it changes no data.
"""

from __future__ import annotations

import time
import uuid
from dataclasses import dataclass
from datetime import UTC, datetime

import redis
from django.db import connection
from redis.cluster import RedisCluster

from comments import rowsql
from comments.exceptions import NotFound
from comments.models import Comment, Subject, SubjectState
from comments.rowsql import aware
from infra import redislink, replicas, streams

from . import keys, live, protocol
from .models import Like, StaleLikeState

LOCK_MS = 30_000  # a load of a million likers takes a few seconds; the lock outlives it
WAIT_SECONDS = 20.0  # how long a request waits for a concurrent load before giving up
CHUNK = 10_000
ZADD_PAIRS = 1_000  # (score, member) pairs per ZADD command
# A comment with at most this many likes is loaded in one statement and one script, without
# the lock.
SMALL_STATE = 1_000
# A process meeting a comment for the first time reads its likers with its place only when it
# has at most this many: shipping them is cheaper than a second round trip. A more popular
# comment's state is usually in Redis already (another process loaded it), so its likers are
# read only when Redis says it lacks the state.
FIRST_MEET_LIKERS = 64
# Seconds for which rows read before asking Redis may still create a state (far within
# ``protocol.WRITTEN_WINDOW_MS``, which is what makes them safe to use).
READ_MAX_AGE = 10.0


class LoadTimeout(Exception):
    """A concurrent load held the lock too long."""


def client() -> redis.Redis | RedisCluster | None:
    """The Redis of like state, after dropping what went stale while it was away; None when
    the database must answer alone."""
    r = redislink.client()
    if r is not None and redislink.take_recovery():
        try:
            drop_stale(r)
        except redislink.ERRORS as exc:
            redislink.mark_down(exc)
            return None
    return r


def ms(moment: datetime) -> int:
    return int(moment.timestamp() * 1000)


def from_ms(value: int) -> datetime:
    return datetime.fromtimestamp(value / 1000, tz=UTC)


@dataclass(frozen=True, slots=True)
class Rows:
    """What the database says of a comment's like state, read in one statement: where the
    comment lives, its flag, whether its subject is open, its like count, its likers as
    ``[ms, user_id, ...]`` in no particular order (None when it has more than were asked for:
    ``read_rows``'s ``likers_up_to``; beyond ``SMALL_STATE`` they are built by ``load``), and
    one user's like row when asked for (``live.like``'s ``user_row``)."""

    subject_id: int
    site_id: int
    flag: int
    subject_open: bool
    like_count: int
    flat_likers: list[int] | None
    read_at: float  # time.monotonic() before the read
    user_row: int | None = None

    def creation(self, since: int | None = None, *, partial: bool = False) -> live.Creation | None:
        """The state to create from these rows (``since``: the Redis time after which they were
        read, None when they were read before asking Redis): whole when they carry the likers,
        else partial if ``partial`` (``protocol.PARTIAL``) and they carry the user's row; None when
        they cannot serve."""
        if since is None and time.monotonic() - self.read_at > READ_MAX_AGE:
            return None
        if self.flat_likers is not None:
            return live.Creation(flag=self.flag, flat_likers=self.flat_likers, since=since)
        if partial and self.user_row is not None:
            return live.Creation(flag=self.flag, flat_likers=[], since=since, unmet=self.like_count)
        return None


_COMMENT = connection.ops.quote_name(Comment._meta.db_table)
_SUBJECT = connection.ops.quote_name(Subject._meta.db_table)
_LIKE = connection.ops.quote_name(Like._meta.db_table)


# The like state is built from the primary: Redis keeps it as the truth the flush applies to, and
# a replica's older rows would lose likes the primary already has.
@replicas.primary_reads()
def read_rows(comment_id: int, *, likers_up_to: int = SMALL_STATE, user_id: int | None = None) -> Rows:
    """The comment's ``Rows``, with its likers if it has at most ``likers_up_to`` (at most
    ``SMALL_STATE``) and ``user_id``'s like row; ``NotFound`` for an unknown id. On PostgreSQL
    one statement (the likers come as two arrays); elsewhere a second for the likers."""
    likers_up_to = min(likers_up_to, SMALL_STATE)
    read_at = time.monotonic()
    likers_sql, likers_join = "", ""
    user_sql, user_join, user_params = "", "", []
    if user_id is not None:
        # One probe of the unique (comment, user, subject) index.
        user_sql = ", u.active, u.created_at"
        user_join = f"LEFT JOIN {_LIKE} u ON u.comment_id = c.id AND u.user_id = %s AND u.subject_id = c.subject_id "
        user_params = [user_id]
    if connection.vendor == "postgresql":
        # The likers' times and ids as two arrays of one aggregation: the same rows in the same
        # order, so the n-th time is the n-th liker's. Unsorted: a sorted set takes its members
        # in any order, and sorting a thousand likers' pairs was most of the statement's work.
        likers_sql = ", x.times, x.users"
        likers_join = (
            "LEFT JOIN LATERAL (SELECT array_agg(floor(extract(epoch FROM l.created_at) * 1000)::bigint) AS times, "
            f"array_agg(l.user_id) AS users FROM {_LIKE} l WHERE l.comment_id = c.id AND l.subject_id = c.subject_id "
            f"AND l.active AND c.like_count BETWEEN 1 AND {int(likers_up_to)}) x ON true "
        )
    row = rowsql.fetch_one(
        f"SELECT c.subject_id, s.site_id, c.status, c.visibility, s.state, c.like_count{user_sql}{likers_sql} "
        f"FROM {_COMMENT} c JOIN {_SUBJECT} s ON s.id = c.subject_id {user_join}{likers_join}WHERE c.id = %s",
        [*user_params, comment_id],
    )
    if row is None:
        raise NotFound("Unknown comment.")
    subject_id, site_id, status, visibility, subject_state, like_count = row[:6]
    rest = row[6:]
    user_row = None
    if user_id is not None:
        active, liked_at = rest[:2]
        rest = rest[2:]
        user_row = ms(aware(liked_at)) if active else protocol.UNLIKED
    if like_count > likers_up_to:
        flat = None
    elif likers_sql:
        times, users = rest[0] or [], rest[1] or []
        flat = [value for pair in zip(times, users, strict=True) for value in pair]
    else:
        flat = [value for chunk in _active_likers(comment_id, chunked=False) for value in chunk] if like_count else []
    flag = live.sentinel_score(status=status, visibility=visibility)
    return Rows(subject_id, site_id, flag, subject_state == SubjectState.OPEN, like_count, flat, read_at, user_row)


@replicas.primary_reads()
def user_row(comment_id: int, subject_id: int, user_id: int) -> int:
    """``user_id``'s like row of the comment for ``live.like``: the like's time in ms, or
    ``protocol.UNLIKED`` when there is none or it is not active."""
    row = rowsql.fetch_one(
        f"SELECT active, created_at FROM {_LIKE} WHERE comment_id = %s AND user_id = %s AND subject_id = %s",
        [comment_id, user_id, subject_id],
    )
    return ms(aware(row[1])) if row is not None and row[0] else protocol.UNLIKED


@replicas.primary_reads()
def load(r: redis.Redis | RedisCluster, *, comment_id: int, subject_id: int) -> None:
    """Make sure the comment's like state is in Redis. A comment with few likes and no action
    waiting in the stream (most comments) is loaded at once (``_load_small``); a big one is
    built from the database under a lock so that concurrent requests build it once; the
    others wait for it."""
    if _load_small(r, comment_id=comment_id, subject_id=subject_id):
        return
    key = keys.likers(subject_id, comment_id)
    lock_key = keys.rebuild_lock(subject_id, comment_id)
    token = uuid.uuid4().hex
    deadline = time.monotonic() + WAIT_SECONDS
    pause = 0.002
    while True:
        if live.acquire(r, lock_key, token, LOCK_MS):
            try:
                if not live.is_loaded(r, key):
                    _build(r, comment_id=comment_id, subject_id=subject_id, token=token)
            finally:
                live.release(r, lock_key, token)
            return
        if live.is_loaded(r, key):
            return
        if time.monotonic() > deadline:
            raise LoadTimeout(f"like state of comment {comment_id} is still being loaded")
        time.sleep(pause)
        pause = min(pause * 2, 0.05)


def _load_small(r: redis.Redis | RedisCluster, *, comment_id: int, subject_id: int) -> bool:
    """Load the state of a comment of at most ``SMALL_STATE`` likes and no action in the stream:
    a word with Redis, one statement and one script that creates the state only if it is still
    missing, so concurrent loaders need no lock. False when the comment is bigger, has actions
    waiting or a partial state, or is gone: ``load``'s careful road takes it.

    Redis is asked before the database is read, and no action on the comment can be appended
    until its state exists, so the rows read are the whole truth (the script checks that the
    flush wrote none since)."""
    careful, since = live.cold_check(r, subject_id=subject_id, comment_id=comment_id)
    if careful:
        return False
    try:
        creation = read_rows(comment_id).creation(since)
    except NotFound:
        return False
    if creation is None:
        return False
    return live.create_state(r, subject_id=subject_id, comment_id=comment_id, creation=creation) is not None


def _build(r: redis.Redis | RedisCluster, *, comment_id: int, subject_id: int, token: str) -> None:
    """The database's likers, with the actions still in the stream (not yet flushed, or being
    flushed right now) laid over them where newer, assembled aside and renamed into place.

    No action for this comment can be appended meanwhile: the like script refuses to run on a
    state that is not loaded."""
    pending: dict[int, tuple[bool, int, int]] = {}
    for entry_id, fields in streams.stream_entries(r, keys.events(subject_id)):
        action = live.parse_action(fields)
        if action is not None and action[0] == comment_id:
            pending[action[1]] = (action[2], action[3], streams.entry_version(entry_id))
    build_key = keys.likers_build(subject_id, comment_id, token)
    r.delete(build_key)
    flag = _flag(comment_id)
    r.zadd(build_key, {protocol.SENTINEL: flag})
    for chunk in _active_likers(comment_id):
        # Flat ZADDs, in score order: Redis inserts in order several times faster than in
        # random order, and redis-py builds no dict per liker.
        pipe = r.pipeline(transaction=False)
        for start in range(0, len(chunk), 2 * ZADD_PAIRS):
            pipe.execute_command("ZADD", build_key, *chunk[start : start + 2 * ZADD_PAIRS])
        pipe.execute()
    row_versions = _row_versions(comment_id, pending)
    pipe = r.pipeline(transaction=False)
    for user_id, (liked, at, version) in pending.items():
        if version > row_versions.get(user_id, 0):
            if liked:
                pipe.zadd(build_key, {str(user_id): at}, nx=True)
            else:
                pipe.zrem(build_key, str(user_id))
    pipe.expire(build_key, LOCK_MS // 1000)  # a build left behind by a crash goes away
    pipe.execute()
    live.publish(r, build_key, subject_id=subject_id, comment_id=comment_id)
    # A status change that committed while the state was being built set the flag of no
    # state; read it again now that the state is in place.
    if (now := _flag(comment_id)) != flag:
        live.reflag(r, comment_id=comment_id, subject_id=subject_id, flag=now)


def _active_likers(comment_id: int, *, chunked: bool = True):
    """The comment's likers as flat ``[ms, user_id, ms, user_id, ...]`` chunks, oldest first:
    an index-only scan of ``like_likers_by_time`` on PostgreSQL, which also turns the times
    into integer milliseconds (converting a million ``timestamptz`` values to ``datetime`` took
    most of a load's time). ``chunked``: a server-side cursor, so a million likers arrive in
    chunks (it costs statements of its own, which a small comment need not pay)."""
    in_sql = connection.vendor == "postgresql"
    moment = "floor(extract(epoch FROM created_at) * 1000)::bigint" if in_sql else "created_at"
    with connection.chunked_cursor() if chunked else connection.cursor() as cursor:
        cursor.execute(
            f"SELECT {moment}, user_id FROM {_LIKE} WHERE comment_id = %s AND active ORDER BY created_at, user_id",
            [comment_id],
        )
        while rows := cursor.fetchmany(CHUNK):
            flat: list = []
            for at, user_id in rows:
                flat += (at if in_sql else ms(aware(at)), user_id)
            yield flat


def _row_versions(comment_id: int, pending: dict[int, tuple]) -> dict[int, int]:
    """``{user_id: version}`` of the rows of the users with actions still in the stream."""
    if not pending:
        return {}
    among, params = rowsql.any_of("user_id", pending)
    with connection.cursor() as cursor:
        cursor.execute(f"SELECT user_id, version FROM {_LIKE} WHERE comment_id = %s AND {among}", [comment_id, *params])
        return dict(cursor.fetchall())


def _flag(comment_id: int) -> int:
    """The OPEN/CHECK flag of a comment as the database has it now."""
    row = Comment.objects.filter(pk=comment_id).values_list("status", "visibility").first()
    return protocol.CHECK if row is None else live.sentinel_score(status=row[0], visibility=row[1])


@replicas.primary_reads()
def drop_stale(r: redis.Redis | RedisCluster) -> int:
    """Drop the Redis state of comments whose likes went straight to the database while Redis
    was unreachable; it is loaded again, from the rows, on next use."""
    stale = list(StaleLikeState.objects.values_list("comment_id", "subject_id", "created_at")[:1000])
    if not stale:
        return 0
    live.drop(r, [(c, s) for c, s, _ in stale])
    for comment_id, _, created_at in stale:
        # Only the marks that were read: one made since then stays for the next round.
        StaleLikeState.objects.filter(comment_id=comment_id, created_at=created_at).delete()
    return len(stale)

"""Like state in Redis: the live answer to every like, unlike, count and "liked" flag.

Per comment, a sorted set of its likers (member = user id, score = like time in ms) plus a
sentinel member, so that a comment with no likers still has a key: "loaded, nobody likes it"
(the negative entry) is told apart from "not loaded" (evicted, Redis restarted). Count =
cardinality - 1; "did I like it" = the member's score; the likers list = a range by rank. A
popular comment's first like makes a partial state instead (``PARTIAL``): its count, and the
users met since, so that it need not load every liker. The members, flags and answer codes are
defined once in ``protocol`` (which the scripts get as their prelude); docs/likes-protocol.md
draws the states and what moves between them.

Each like or unlike is one Lua script: it changes the set and appends the action, as absolute
state ("user U likes / does not like comment C"), to the subject's event stream, which the
flush (``services.likes_flush``) drains into the database. The script runs only on a loaded
key; on a missing one it first creates the state from the rows the caller read, when those
rows cannot be behind: no action of the comment waits in the stream (a count per comment,
``keys.pending``, kept by the script and the flush) and the flush wrote none to the rows since
they were read (``keys.written``). Otherwise it answers "cold" and the caller reads the rows,
or loads the state carefully (``state_sync.load``).

The state lives on the state Redis (``infra.redislink.client()``): when it is not configured,
or failed within the last ``LIKES_REDIS_RETRY`` seconds, callers use the database alone.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from pathlib import Path
from typing import cast

import redis
from django.conf import settings
from django.core.signals import setting_changed
from redis.cluster import RedisCluster

from infra.luascript import Script
from infra.redislink import is_cluster, round_trip

from . import keys
from .protocol import (
    CHECK,
    CREATE_REFUSED,
    MARKED_CLOSED,
    OPEN,
    PARTIAL,
    SENTINEL,
    SUBJECT_OPEN_SECONDS,
    VIEWER_NOT_MET,
    LikeOutcome,
    LikeResult,
    lua_prelude,
)


def sentinel_score(*, status: str, visibility: str) -> int:
    from comments.models import Status, Visibility

    return OPEN if status == Status.PUBLISHED and visibility == Visibility.PUBLIC else CHECK


def mark_empty_commands(comments: list[tuple[int, int, int]]) -> list[tuple]:
    """What ``mark_empty`` sends, as commands for ``hand_off``."""
    commands = []
    for comment_id, subject_id, flag in comments:
        key = keys.likers(subject_id, comment_id)
        commands += [("ZADD", key, flag, SENTINEL), ("EXPIRE", key, settings.LIKES_STATE_TTL)]
    return commands


# --- scripts -------------------------------------------------------------------------------


_LUA_DIR = Path(__file__).resolve().parent / "lua"


# The scripts; each file says what its KEYS and ARGV are and what it answers. Each is declared
# after the protocol's constants (``protocol.LUA_CONSTANTS``): no script spells a flag or an
# answer code as a number of its own.
def _script(name: str, *, includes: tuple[str, ...] = ()) -> Script:
    return Script.load(_LUA_DIR, name, prelude=lua_prelude(), includes=includes)


LIKE = _script("like", includes=("clock", "creating", "partial"))
PUBLISH = _script("publish")
CREATE_STATE = _script("create_state", includes=("clock", "creating"))
COLD_CHECK = _script("cold_check", includes=("clock",))
ACKNOWLEDGE = _script("acknowledge", includes=("clock",))
RELEASE = _script("release")
LIKERS = _script("likers")
FORGET_DIRTY = _script("forget_dirty")
PAGE_STATE = _script("page_state", includes=("partial",))


# --- reads ---------------------------------------------------------------------------------


def page_state(
    r: redis.Redis | RedisCluster, comments: list[tuple[int, int]], user_id: int | None
) -> dict[int, tuple[int, bool | None]]:
    """``{comment_id: (like_count, liked)}`` for the loaded comments among ``comments``
    (``(comment_id, subject_id)`` pairs; ``liked`` None where a partial state has not met the
    viewer), in one round trip: one script call per subject (a
    page is almost always one subject), pipelined. One call of a script instead of two
    commands per comment also spares the client most of its packing and parsing, which for a
    page with its previews cost milliseconds."""
    by_subject: dict[int, list[int]] = {}
    for comment_id, subject_id in comments:
        by_subject.setdefault(subject_id, []).append(comment_id)
    calls = [([keys.likers(s, c) for c in ids], ids) for s, ids in by_subject.items()]
    viewer = "" if user_id is None else str(user_id)
    if len(calls) == 1 or is_cluster(r):  # a cluster pipeline runs no scripts
        replies = [PAGE_STATE(r, key_list, [viewer]) for key_list, _ in calls]
    else:
        pipe = r.pipeline(transaction=False)
        for key_list, _ in calls:
            PAGE_STATE.queue(pipe, key_list, [viewer])
        replies = pipe.execute(raise_on_error=False)
        if any(isinstance(reply, redis.exceptions.NoScriptError) for reply in replies):
            replies = [PAGE_STATE(r, key_list, [viewer]) for key_list, _ in calls]
        for reply in replies:
            if isinstance(reply, Exception):
                raise reply
    state = {}
    for (_, ids), reply in zip(calls, replies, strict=True):
        for index, comment_id in enumerate(ids):
            cardinality = reply[2 * index]
            if cardinality:
                liked = reply[2 * index + 1]
                state[comment_id] = (cardinality - 1, None if liked == VIEWER_NOT_MET else bool(liked))
    return state


# --- writes --------------------------------------------------------------------------------


def now_ms() -> int:
    return int(time.time() * 1000)


# Registering subjects for the flush. The flush forgets a drained subject only once its
# registration is ``DIRTY_QUIET_MS`` old (services.likes_flush), so a registration covers the
# actions appended for a while after it: each process registers a subject again only when its
# own last registration is ``REGISTER_EVERY`` seconds old, not with every action.
DIRTY_QUIET_MS = 60_000
# Seconds; far below the quiet minute. A registration's time is the app server's clock and the
# flush reads it with its own: the margin holds while the clocks agree within 50 s.
REGISTER_EVERY = 10.0
_registered: dict[int, float] = {}  # subject id -> time.monotonic() of this process's registration
_REGISTERED_MAX = 10_000


def _remember_registered(subject_id: int, at: float) -> None:
    if len(_registered) >= _REGISTERED_MAX:
        _registered.clear()
    _registered[subject_id] = at


def forget_registrations(**kwargs) -> None:
    """Forget which subjects this process registered (another state Redis, or tests)."""
    if kwargs.get("setting") in {"LIKES_REDIS_URL", None}:
        _registered.clear()


setting_changed.connect(forget_registrations)


@dataclass(frozen=True, slots=True)
class UserRow:
    """A user's like row of a comment as read for ``like``: the like's time in ms, or
    ``protocol.UNLIKED`` (no row, or not active), and ``since``, the Redis time after which it
    was read (None: before any word with Redis, less than ``state_sync.READ_MAX_AGE`` ago)."""

    value: int
    since: int | None = None


@dataclass(frozen=True, slots=True)
class Creation:
    """A missing state for ``like`` to create first: the sentinel's ``flag``, the likers as
    ``[ms, user_id, ...]`` (a whole state), or how many there are (``unmet``: a partial state,
    ``protocol.PARTIAL``), and ``since``, the Redis time (ms) after which they were read; None
    when they were read before any word with Redis, less than ``state_sync.READ_MAX_AGE`` ago."""

    flag: int
    flat_likers: list[int]
    since: int | None = None
    unmet: int | None = None


def like(
    r: redis.Redis | RedisCluster,
    *,
    subject_id: int,
    comment_id: int,
    user_id: int,
    liked: bool,
    checked: bool,
    subject_open: bool = False,
    user_row: UserRow | None = None,
    create: Creation | None = None,
) -> LikeResult:
    """Apply one action, in one round trip; the ``LikeResult`` says what came of it
    (``protocol.LikeOutcome``):

    - DONE, with the comment's count and the user's flag: applied, and appended to the stream.
    - NEEDS_CHECK: ``checked`` is false and the comment is not OPEN, or its subject is not
      marked open (``subject_open``: the caller read the subject open just now, which marks it
      so unless it was just closed).
    - NEEDS_USER, with ``since``: the state is partial and has not met the user, and
      ``user_row`` was not given or was read before the flush last wrote the comment's actions
      to the rows (one read after ``since`` will do: the state then meets the user).
    - COLD, with ``since``: the state is missing and ``create`` was not given, or the flush
      wrote to the rows after it was read (rows read after ``since`` will do).
    - LOAD_CAREFULLY: the state is missing and actions of the comment wait in the stream, so
      no rows can make it: only ``state_sync.load``, which lays those actions over the rows.

    With ``create``, a missing state is made from it first when those rows cannot be behind.

    An appended action always belongs to a registered subject: the subject is registered
    before the action is appended, in the same round trip, unless this process registered it
    less than ``REGISTER_EVERY`` seconds ago. An action that finds its stream otherwise empty
    registers the subject again at once: Redis may have lost the registration with the
    stream (a restart, ``FLUSHALL``) since this process made it."""
    keys_ = [
        keys.likers(subject_id, comment_id),
        keys.events(subject_id),
        keys.pending(subject_id),
        keys.written(subject_id),
        keys.subject_open(subject_id),
    ]
    row, row_since = ("", "") if user_row is None else (user_row.value, user_row.since)
    args: list[int | str] = [user_id, int(liked), comment_id, int(checked), int(subject_open), row]
    args.append("" if row_since is None else row_since)
    if create is not None:
        since = "" if create.since is None else create.since
        unmet = "" if create.unmet is None else create.unmet
        args += [create.flag, since, settings.LIKES_STATE_TTL, unmet, *create.flat_likers]
    started = time.monotonic()
    register = started - _registered.get(subject_id, -REGISTER_EVERY) >= REGISTER_EVERY
    registration = ("ZADD", keys.DIRTY_SUBJECTS, now_ms(), subject_id)
    result = round_trip(r, [registration, LIKE.command(keys_, args)] if register else [LIKE.command(keys_, args)])[-1]
    if isinstance(result, redis.exceptions.NoScriptError):
        result = LIKE(r, keys_, args)
    elif isinstance(result, Exception):
        raise result
    answer = LikeResult.of_reply(result[0], result[1])
    if answer.outcome is not LikeOutcome.DONE:
        return answer
    if not register and result[2] == 1:
        round_trip(r, [registration])
        register = True
    if register:
        _remember_registered(subject_id, started)
    return answer


def mark_empty(r: redis.Redis | RedisCluster, comments: list[tuple[int, int, int]]) -> None:
    """Load the state of comments known to have no likes (just posted): the negative entry, so
    they never need a rebuild. ``comments``: ``(comment_id, subject_id, sentinel score)``."""
    pipe = r.pipeline(transaction=False)
    for command in mark_empty_commands(comments):
        pipe.execute_command(*command)
    pipe.execute()


def mark_subject(r: redis.Redis | RedisCluster, *, subject_id: int, open: bool) -> None:
    """A subject was opened (its mark goes: the next like asks the database, and marks it) or
    closed (marked closed, so that a like that read it open before cannot mark it open)."""
    if open:
        r.delete(keys.subject_open(subject_id))
    else:
        r.set(keys.subject_open(subject_id), MARKED_CLOSED, ex=SUBJECT_OPEN_SECONDS)


def reflag(r: redis.Redis | RedisCluster, *, comment_id: int, subject_id: int, flag: int) -> None:
    """Set a loaded state's OPEN/CHECK flag (a state not loaded takes it when it loads)."""
    r.zadd(keys.likers(subject_id, comment_id), {SENTINEL: flag}, xx=True)


def likers_page(
    r: redis.Redis | RedisCluster, *, subject_id: int, comment_id: int, after: tuple[int, int] | None, limit: int
):
    """``(open, rows)``: whether the comment is OPEN (anyone who can read the subject may see
    it), and up to ``limit + 1`` ``(user_id, liked_at_ms)`` after ``after`` = (ms, user id),
    oldest first; None when the state is not loaded."""
    args = ["", "", limit] if after is None else [after[0], str(after[1]), limit]
    rows = LIKERS(r, [keys.likers(subject_id, comment_id)], args)
    if rows is None:
        return None
    return float(rows[0]) == OPEN, [(int(rows[i]), int(float(rows[i + 1]))) for i in range(1, len(rows), 2)]


# --- rebuilding ----------------------------------------------------------------------------


def acquire(r: redis.Redis | RedisCluster, lock_key: str, token: str, ttl_ms: int) -> bool:
    return bool(r.set(lock_key, token, nx=True, px=ttl_ms))


def release(r: redis.Redis | RedisCluster, lock_key: str, token: str) -> None:
    RELEASE(r, [lock_key], [token])


def publish(r: redis.Redis | RedisCluster, build_key: str, *, subject_id: int, comment_id: int) -> bool:
    key = keys.likers(subject_id, comment_id)
    return bool(PUBLISH(r, [build_key, key, keys.pending(subject_id)], [settings.LIKES_STATE_TTL, comment_id]))


def cold_check(r: redis.Redis | RedisCluster, *, subject_id: int, comment_id: int) -> tuple[bool, int]:
    """``(careful, since)``: whether only the careful load may make the comment's whole state
    (an action waits in its subject's stream, or a partial state is there), and the Redis time
    (ms) of the answer, after which rows read are complete if not."""
    careful, since = COLD_CHECK(r, [keys.pending(subject_id), keys.likers(subject_id, comment_id)], [comment_id])
    return bool(careful), since


def create_state(r: redis.Redis | RedisCluster, *, subject_id: int, comment_id: int, creation: Creation) -> bool | None:
    """Create the comment's whole state from ``creation`` unless it is loaded already (False),
    or the rows may be behind (None: ``may_create`` in the scripts), or a partial state is
    there (None: the careful load builds over it). True when made."""
    made = CREATE_STATE(
        r,
        [keys.likers(subject_id, comment_id), keys.pending(subject_id), keys.written(subject_id)],
        [comment_id, creation.flag, creation.since, settings.LIKES_STATE_TTL, *creation.flat_likers],
    )
    return None if made == CREATE_REFUSED else bool(made)


def is_loaded(r: redis.Redis | RedisCluster, key: str) -> bool:
    """Whether the whole state is loaded (a partial one is not)."""
    flag, partial = r.zmscore(key, [SENTINEL, PARTIAL])
    return flag is not None and partial is None


def drop(r: redis.Redis | RedisCluster, comments: list[tuple[int, int]]) -> None:
    """Forget comments' states; UNLINK frees them in the background (a million likers take
    Redis half a second to free, blocking everyone, with DEL)."""
    if comments:
        r.unlink(*(keys.likers(s, c) for c, s in comments))


def dirty_subjects(r: redis.Redis | RedisCluster) -> list[tuple[int, float]]:
    dirty = cast(list[tuple[bytes, float]], r.zrange(keys.DIRTY_SUBJECTS, 0, -1, withscores=True))
    return [(int(member), score) for member, score in dirty]


def forget_dirty(r: redis.Redis | RedisCluster, subject_id: int, score: float) -> None:
    FORGET_DIRTY(r, [keys.DIRTY_SUBJECTS], [subject_id, score])


def acknowledge(r: redis.Redis | RedisCluster, subject_id: int, entries: list[tuple[str, int | None]]) -> None:
    """Acknowledge and delete applied entries, ``(entry id, comment id or None when it held no
    action)``, in one script: their comments count them no longer pending; those with none
    left may expire again, and are remembered as just written (``keys.written``)."""
    by_comment: dict[int, list[str]] = {}
    loose = []
    for entry_id, comment_id in entries:
        if comment_id is None:
            loose.append(entry_id)
        else:
            by_comment.setdefault(comment_id, []).append(entry_id)
    stream = keys.events(subject_id)
    keys_ = [
        stream,
        keys.pending(subject_id),
        keys.written(subject_id),
        *(keys.likers(subject_id, c) for c in by_comment),
    ]
    args = [keys.FLUSH_GROUP, settings.LIKES_STATE_TTL, len(by_comment)]
    for comment_id, ids in by_comment.items():
        args += [comment_id, len(ids)]
    for ids in by_comment.values():
        args += ids
    ACKNOWLEDGE(r, keys_, [*args, *loose])


def parse_action(fields: list) -> tuple[int, int, bool, int] | None:
    """A stream entry's action, from its ``[field, value, ...]``: ``(comment_id, user_id,
    liked, like time ms)``; None for an entry that is not one. One field ``a`` =
    ``comment:user:1|0:ms`` (one field instead of four: reading a batch of entries is mostly
    the client parsing fields)."""
    try:
        if len(fields) != 2 or fields[0] != "a":
            return None
        comment_id, user_id, liked, at = fields[1].split(":")
        return int(comment_id), int(user_id), liked == "1", int(at)
    except (TypeError, ValueError, AttributeError):
        return None

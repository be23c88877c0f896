"""Like state in Redis: the live answer to every like, unlike, count and "liked" flag.

Per comment, a sorted set of its likers (member = user id, score = like time in ms) plus a
sentinel member, so that a comment with no likers still has a key: "loaded, nobody likes it"
(the negative entry) is told apart from "not loaded" (evicted, Redis restarted). Count =
cardinality - 1; "did I like it" = the member's score; the likers list = a range by rank. A
popular comment's first like makes a partial state instead (``PARTIAL``): its count, and the
users met since, so that it need not load every liker.

Each like or unlike is one Lua script: it changes the set and appends the action, as absolute
state ("user U likes / does not like comment C"), to the subject's event stream, which the
flush (``services.likes_flush``) drains into the database. The script runs only on a loaded
key; on a missing one it first creates the state from the rows the caller read, when those
rows cannot be behind: no action of the comment waits in the stream (a count per comment,
``keys.pending``, kept by the script and the flush) and the flush wrote none to the rows since
they were read (``keys.written``). Otherwise it answers "cold" and the caller reads the rows,
or loads the state carefully (``state_sync.load``).

When Redis is not configured, or failed within the last ``LIKES_REDIS_RETRY`` seconds,
``client()`` answers None and callers use the database alone.
"""

from __future__ import annotations

import functools
import hashlib
import logging
import os
import socket
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, cast

import redis
from django.conf import settings
from django.core.signals import setting_changed
from redis.cluster import RedisCluster

from comments.redislink import connect, is_cluster, round_trip

from . import keys

logger = logging.getLogger("likes")

SENTINEL = "0"  # never a user id; scored below every like time, so it sorts before every liker
# The sentinel's score tells the like script whether anyone who can read the subject may like
# the comment (published and public: OPEN), or whether the database must be asked who may see
# it first (pending, shadow, friends-only, deleted: CHECK). States written before the flag
# existed carry -inf, which counts as CHECK.
OPEN = -1
CHECK = -2
NEEDS_CHECK = "check"  # ``like`` answers this for a CHECK comment not yet checked
# A partial state: what a popular comment's first like makes instead of loading every liker.
# Besides the sentinel it holds a marker member whose score counts the likers it has not met
# (``PARTIAL_BASE - score``), and the users it met since it was made: a liker scored with the
# like's time, as in a whole state, or ``UNLIKED`` for one who does not like the comment. A
# like by a user it has not met needs that user's row first (``NeedsUser``); the likers list
# needs the whole state, built over it (``state_sync.load``). Count = likers met + not met.
PARTIAL = "p"
PARTIAL_BASE = -10  # below the sentinel's flags and UNLIKED: likers are the members scored >= 0
UNLIKED = -3


def sentinel_score(*, status: str, visibility: str) -> int:
    from comments.models import Status, Visibility

    return OPEN if status == Status.PUBLISHED and visibility == Visibility.PUBLIC else CHECK


# What makes a process use the database alone for a while: Redis not answering, (a cluster)
# a slot without a reachable master for longer than the client's retries, or Redis refusing
# writes because it is full (a like-state Redis runs with maxmemory-policy noeviction, since
# evicting a stream or the flush's bookkeeping would lose likes or miscount them;
# docs/production.md).
ERRORS = (
    redis.exceptions.ConnectionError,
    redis.exceptions.TimeoutError,
    redis.exceptions.ClusterError,
    redis.exceptions.OutOfMemoryError,
)

_lock = threading.Lock()
_client: redis.Redis | RedisCluster | None = None
_client_url: str | None = None
_down_until = 0.0
_recovering = False


def client() -> redis.Redis | RedisCluster | None:
    """The Redis of like state (a cluster client for a ``redis+cluster://`` URL); None when
    there is none, or while it is considered down."""
    global _client, _client_url
    url = settings.LIKES_REDIS_URL
    if not url or time.monotonic() < _down_until:
        return None
    if _client is None or _client_url != url:
        with _lock:
            if _client is None or _client_url != url:
                timeout = settings.LIKES_REDIS_TIMEOUT
                _client = connect(
                    url,
                    decode_responses=True,
                    socket_timeout=timeout,
                    socket_connect_timeout=timeout,
                    health_check_interval=30,
                )
                _client_url = url
    return _client


def mark_down(exc: BaseException) -> None:
    """Stop using Redis in this process for ``LIKES_REDIS_RETRY`` seconds."""
    global _down_until, _recovering
    logger.warning("likes: Redis unavailable (%s); using the database for %.0f s", exc, settings.LIKES_REDIS_RETRY)
    _down_until = time.monotonic() + settings.LIKES_REDIS_RETRY
    _recovering = True


def stream_add(stream: str, fields: dict, *, otherwise: Callable[[], object] | None = None) -> bool:
    """Queue one entry on ``stream`` in this Redis (moderation's second checks, notifications'
    events): a fraction of a broker publish for the request. False without that Redis, or while
    it fails: the work must then go to a Celery task of its own. With ``otherwise`` (that
    hand-off to a task), ``stream_add`` runs it itself when the entry cannot be queued, and
    inside ``together()`` the entry travels with the block's other hand-offs."""
    command = ("XADD", stream, "*", *(part for pair in fields.items() for part in pair))
    return hand_off([command], otherwise=otherwise)


def mark_empty_commands(comments: list[tuple[int, int, int]]) -> list[tuple]:
    """What ``mark_empty`` sends, as commands for ``hand_off``."""
    commands = []
    for comment_id, subject_id, flag in comments:
        key = keys.likers(subject_id, comment_id)
        commands += [("ZADD", key, flag, SENTINEL), ("EXPIRE", key, settings.LIKES_STATE_TTL)]
    return commands


# --- hand-offs in one round trip -------------------------------------------------------------
#
# What a request hands on to other processes after its commit (a post: its empty like state, its
# second check, its notifications and webhooks events) is a few writes to this Redis, each from
# another app's receiver of one core hook. Inside ``together()`` (the core opens it around its
# hooks: ``comments.hooks.send_together``) they wait and go in one round trip at the end of the
# block, instead of one round trip each.

_gathering = threading.local()


@contextmanager
def together() -> Iterator[None]:
    """Hand-offs (``hand_off`` with an ``otherwise``) made in the block are sent together when it
    ends; each whose commands fail then runs its ``otherwise``. Nested blocks join the outer one."""
    if getattr(_gathering, "handoffs", None) is not None:
        yield
        return
    _gathering.handoffs = []
    try:
        yield
    finally:
        handoffs, _gathering.handoffs = _gathering.handoffs, None
        if handoffs:
            _send(handoffs)


def hand_off(commands: list[tuple], *, otherwise: Callable[[], object] | None = None) -> bool:
    """Send ``commands`` to this Redis, in one round trip with the other hand-offs of an enclosing
    ``together()`` when there is one and ``otherwise`` says what to do if they fail (True:
    queued). Else now: True when every command succeeded; False, after running ``otherwise``,
    without that Redis, while it fails, or when a command fails."""
    handoffs = getattr(_gathering, "handoffs", None)
    if handoffs is not None and otherwise is not None:
        handoffs.append((commands, otherwise))
        return True
    return _send([(commands, otherwise)])[0]


def _send(handoffs: list[tuple[list[tuple], Callable[[], object] | None]]) -> list[bool]:
    sent = [False] * len(handoffs)
    r = client()
    if r is not None:
        try:
            replies = iter(round_trip(r, [command for commands, _ in handoffs for command in commands]))
        except ERRORS as exc:
            mark_down(exc)
        else:
            for n, (commands, _) in enumerate(handoffs):
                failures = [reply for reply in (next(replies) for _ in commands) if isinstance(reply, Exception)]
                sent[n] = not failures
                down = [reply for reply in failures if isinstance(reply, ERRORS)]
                if down:
                    mark_down(down[0])
                elif failures:
                    logger.error("likes: a hand-off to Redis failed: %s", failures[0])
    for (_, otherwise), ok in zip(handoffs, sent, strict=True):
        if not ok and otherwise is not None:
            otherwise()
    return sent


def stream_drain(stream: str, handle, *, batch: int, reclaim_seconds: float, max_seconds: float) -> int:
    """Work through what waits on ``stream`` (queued by ``stream_add``), a batch at a time, until
    a read finds less than a batch (what was queued until then is done) or ``max_seconds`` have
    passed; returns the sum of what ``handle`` returned.

    ``handle(entries)`` gets a batch's ``[(entry id, fields)]`` and must have committed all it
    causes when it returns: only then is the batch acknowledged, so entries read by a worker that
    died are taken over by a later drain after ``reclaim_seconds`` (``handle`` must therefore be
    idempotent)."""
    r = client()
    if r is None:
        return 0
    consumer = consumer_name()
    reclaim_ms = int(reclaim_seconds * 1000)
    handled = 0
    started = time.monotonic()
    while time.monotonic() - started < max_seconds:
        entries = read_events(r, stream, consumer, batch, reclaim_ms)
        if not entries:
            break
        handled += handle(entries)
        forget_entries(r, stream, [entry_id for entry_id, _ in entries])
        if len(entries) < batch:
            # Less than a batch: the stream was drained as of the read. What came in since waits
            # for the next run, a beat later, with whatever else comes in by then. Reading on
            # chased the writers: under load each further batch held the few entries of the
            # last batch's duration, and paid its transaction, statements and acknowledgement
            # for them (a like flush of ten likes at a time cost ten times a like's share).
            break
    drop_idle_consumers(r, stream)
    return handled


def take_recovery() -> bool:
    """True once after Redis came back from being down in this process: the caller then drops
    the Redis state of comments written to the database meanwhile."""
    global _recovering
    if _recovering:
        _recovering = False
        return True
    return False


def _reset(**kwargs) -> None:
    global _client, _client_url, _down_until, _recovering
    if kwargs.get("setting") in {"LIKES_REDIS_URL", "LIKES_REDIS_TIMEOUT", None}:
        _client, _client_url, _down_until, _recovering = None, None, 0.0, False
        _registered.clear()


setting_changed.connect(_reset)


def reset() -> None:
    """Forget the client and any outage (tests, after forking)."""
    _reset(setting=None)


# --- scripts -------------------------------------------------------------------------------


# How long the flush remembers that it wrote a comment's actions to the rows (``keys.written``):
# a state is created from rows read before the create only if no write came in meanwhile, and a
# read is used for that only while it is younger than ``READ_MAX_AGE`` (state_sync.py), far within.
WRITTEN_WINDOW_MS = 60_000

# How long a like that read the subject open lets the likes after it through without asking
# the database whether it is still open (``keys.subject_open``), and how long a closing stops
# such a like from saying so again. A closing that could not reach Redis takes effect in the
# database at once and here within this time.
SUBJECT_OPEN_SECONDS = 60

_LUA_DIR = Path(__file__).resolve().parent / "lua"
# Constants the scripts share with this module, declared before every script.
_LUA_CONSTANTS = (
    f"local WRITTEN_WINDOW_MS = {WRITTEN_WINDOW_MS}\nlocal SUBJECT_OPEN_SECONDS = {SUBJECT_OPEN_SECONDS}\n"
    f"local PARTIAL_BASE = {PARTIAL_BASE}\nlocal UNLIKED = {UNLIKED}\n"
)


class Script:
    """A Lua script of ``likes/lua/``, run by its SHA, loaded into Redis on the first NOSCRIPT
    (one round trip normally)."""

    def __init__(self, source: str):
        self.source = source
        self.sha = hashlib.sha1(source.encode()).hexdigest()

    @classmethod
    def load(cls, name: str, *, includes: tuple[str, ...] = ()) -> Script:
        """``lua/<name>.lua``, after the shared constants and the files it ``includes``
        (functions it calls), read once when this module is imported."""
        parts = [_LUA_CONSTANTS, *((_LUA_DIR / f"{part}.lua").read_text() for part in (*includes, name))]
        return cls("".join(parts))

    def __call__(self, r: redis.Redis | RedisCluster, keys_: list[str], args: list) -> Any:
        try:
            return r.evalsha(self.sha, len(keys_), *keys_, *args)
        except redis.exceptions.NoScriptError:
            r.script_load(self.source)
            return r.evalsha(self.sha, len(keys_), *keys_, *args)

    def queue(self, pipe, keys_: list[str], args: list) -> None:
        pipe.evalsha(self.sha, len(keys_), *keys_, *args)

    def command(self, keys_: list[str], args: list) -> tuple:
        """The call as a command for ``redislink.round_trip``."""
        return ("EVALSHA", self.sha, len(keys_), *keys_, *args)


# The scripts; each file says what its KEYS and ARGV are and what it answers.
LIKE = Script.load("like", includes=("clock", "creating", "partial"))
PUBLISH = Script.load("publish")
CREATE_STATE = Script.load("create_state", includes=("clock", "creating"))
COLD_CHECK = Script.load("cold_check", includes=("clock",))
ACKNOWLEDGE = Script.load("acknowledge", includes=("clock",))
RELEASE = Script.load("release")
LIKERS = Script.load("likers")
FORGET_DIRTY = Script.load("forget_dirty")
DROP_IDLE_CONSUMERS = Script.load("drop_idle_consumers")
PAGE_STATE = Script.load("page_state", includes=("partial",))


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
                state[comment_id] = (cardinality - 1, None if liked == 2 else bool(liked))
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


@dataclass(frozen=True, slots=True)
class Cold:
    """``like``'s answer when the comment's state is missing: rows read from now on (``since``,
    Redis time in ms) may create it."""

    since: int


LOAD_CAREFULLY = "load carefully"  # ``like``'s answer when only ``state_sync.load`` may make the state


@dataclass(frozen=True, slots=True)
class NeedsUser:
    """``like``'s answer when the state is partial and has not met the user: the user's row
    read from now on (``since``, Redis time in ms) will do."""

    since: int


@dataclass(frozen=True, slots=True)
class UserRow:
    """A user's like row of a comment as read for ``like``: the like's time in ms, or
    ``UNLIKED`` (no row, or not active), and ``since``, the Redis time after which it was read
    (None: before any word with Redis, less than ``state_sync.READ_MAX_AGE`` ago)."""

    value: int
    since: int | None = None


@dataclass(frozen=True, slots=True)
class Creation:
    """A missing state for ``like`` to create first: the sentinel's ``flag``, the likers as
    ``[ms, user_id, ...]`` (a whole state), or how many there are (``unmet``: a partial state,
    ``PARTIAL``), and ``since``, the Redis time (ms) after which they were read; None when they
    were read before any word with Redis, less than ``state_sync.READ_MAX_AGE`` ago."""

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
):
    """Apply one action; ``(count, liked)``; ``NEEDS_CHECK`` when ``checked`` is false and the
    comment is not OPEN or its subject is not marked open (``subject_open``: the caller read
    the subject open just now, which marks it so unless it was just closed); ``NeedsUser``
    when the state is partial and has not met the user, unless ``user_row`` was read after the
    flush last wrote the comment's actions to the rows (then the state meets it). When the
    comment's state is missing, ``create`` makes it first if the rows it was read from cannot
    be behind; else the answer is ``Cold`` (read the rows and call again) or
    ``LOAD_CAREFULLY`` (actions wait in the stream: ``state_sync.load``). ``Cold`` also
    when the flush wrote to the rows after ``create`` was read.

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
    count, now_liked = result[0], result[1]
    if count == -1:
        return Cold(since=now_liked)
    if count == -3:
        return LOAD_CAREFULLY
    if count == -2:
        return NEEDS_CHECK
    if count == -4:
        return NeedsUser(since=now_liked)
    if not register and result[2] == 1:
        round_trip(r, [registration])
        register = True
    if register:
        _remember_registered(subject_id, started)
    return count, bool(now_liked)


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
        r.set(keys.subject_open(subject_id), "0", ex=SUBJECT_OPEN_SECONDS)


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


def publish(r: redis.Redis | RedisCluster, build_key: str, key: str) -> bool:
    return bool(PUBLISH(r, [build_key, key], [settings.LIKES_STATE_TTL]))


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
    return None if made == -1 else bool(made)


def is_loaded(r: redis.Redis | RedisCluster, key: str) -> bool:
    """Whether the whole state is loaded (a partial one is not)."""
    flag, partial = r.zmscore(key, [SENTINEL, PARTIAL])
    return flag is not None and partial is None


def drop(r: redis.Redis | RedisCluster, comments: list[tuple[int, int]]) -> None:
    """Forget comments' states; UNLINK frees them in the background (a million likers take
    Redis half a second to free, blocking everyone, with DEL)."""
    if comments:
        r.unlink(*(keys.likers(s, c) for c, s in comments))


# --- the event streams ---------------------------------------------------------------------


def consumer_name() -> str:
    return f"{socket.gethostname()}-{os.getpid()}"


def dirty_subjects(r: redis.Redis | RedisCluster) -> list[tuple[int, float]]:
    dirty = cast(list[tuple[bytes, float]], r.zrange(keys.DIRTY_SUBJECTS, 0, -1, withscores=True))
    return [(int(member), score) for member, score in dirty]


def forget_dirty(r: redis.Redis | RedisCluster, subject_id: int, score: float) -> None:
    FORGET_DIRTY(r, [keys.DIRTY_SUBJECTS], [subject_id, score])


def ensure_group(r: redis.Redis | RedisCluster, stream: str) -> None:
    try:
        r.xgroup_create(stream, keys.FLUSH_GROUP, id="0", mkstream=True)
    except redis.exceptions.ResponseError as exc:
        if "BUSYGROUP" not in str(exc):
            raise


def read_events(
    r: redis.Redis | RedisCluster, stream: str, consumer: str, count: int, reclaim_idle_ms: int
) -> list[list]:
    """Up to ``count`` entries ``(id, [field, value, ...])`` for this consumer: first those
    another consumer read and did not acknowledge for ``reclaim_idle_ms`` (it died), then new
    ones. The consumer group is made on first need (a stream's first flush, or after Redis
    lost it)."""
    try:
        return _read_events(r, stream, consumer, count, reclaim_idle_ms)
    except redis.exceptions.ResponseError as exc:
        if "NOGROUP" not in str(exc):
            raise
    ensure_group(r, stream)
    return _read_events(r, stream, consumer, count, reclaim_idle_ms)


def _read_events(
    r: redis.Redis | RedisCluster, stream: str, consumer: str, count: int, reclaim_idle_ms: int
) -> list[list]:
    raw = _as_sent(r)
    claimed = raw.xautoclaim(stream, keys.FLUSH_GROUP, consumer, reclaim_idle_ms, start_id="0-0", count=count)
    entries = [_flat(e) for e in claimed[1] if e and e[1]]
    if len(entries) < count:
        fresh = raw.xreadgroup(keys.FLUSH_GROUP, consumer, {stream: ">"}, count=count - len(entries))
        # RESP3 answers a map of streams, RESP2 a list of [stream, entries] pairs.
        for stream_entries in (fresh or {}).values() if isinstance(fresh, dict) else (e for _, e in fresh or []):
            entries.extend(_flat(e) for e in stream_entries if e and e[1])
    return entries


@functools.lru_cache(maxsize=4)
def _as_sent(r: redis.Redis | RedisCluster) -> redis.Redis | RedisCluster:
    """A client over ``r``'s connections whose stream reads answer as Redis sent them,
    each entry ``[id, [field, value, ...]]``: redis-py would build a dict per entry, and for a
    batch of 5,000 that took longer than Redis took to read it."""
    if isinstance(r, RedisCluster):
        # Its nodes' clients parse before the cluster's callbacks run; entries come as
        # redis-py builds them and ``_flat`` lays them out as sent.
        return r
    view = redis.Redis(connection_pool=r.connection_pool)
    for command in ("XAUTOCLAIM", "XREADGROUP", "XRANGE"):
        view.set_response_callback(command, _unchanged)
    return view


def _unchanged(response, **options):
    return response


def _flat(entry) -> list:
    """A stream entry as Redis sent it, ``[id, [field, value, ...]]``, from redis-py's
    ``(id, {field: value})`` too."""
    entry_id, fields = entry[0], entry[1]
    if isinstance(fields, dict):
        fields = [item for pair in fields.items() for item in pair]
    return [entry_id, fields]


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


def forget_entries(r: redis.Redis | RedisCluster, stream: str, entry_ids: list[str]) -> None:
    """Acknowledge and delete entries that were dealt with (another stream read with
    ``read_events``: moderation's queue of second checks)."""
    pipe = r.pipeline(transaction=False)
    _forget(pipe, stream, entry_ids)
    pipe.execute()


def _forget(pipe, stream: str, entry_ids: list[str]) -> None:
    pipe.xack(stream, keys.FLUSH_GROUP, *entry_ids)
    pipe.xdel(stream, *entry_ids)


def drop_idle_consumers(r: redis.Redis | RedisCluster, stream: str) -> int:
    """Forget the consumers (one per flushing process that ever read the stream) that hold no
    entry, so processes that restarted do not pile up in every stream. Atomic: a consumer that
    reads meanwhile is not forgotten with entries in hand."""
    try:
        return DROP_IDLE_CONSUMERS(r, [stream], [keys.FLUSH_GROUP])
    except redis.exceptions.ResponseError:
        return 0  # no stream or no group: nothing to forget


def stream_length(r: redis.Redis | RedisCluster, stream: str) -> int:
    return r.xlen(stream)


def stream_entries(r: redis.Redis | RedisCluster, stream: str) -> list[list]:
    """Every entry ``(id, [field, value, ...])`` still in the stream (read or not): the
    actions not yet known to be in the database. The flush deletes what it applied, so this is
    about a second's worth."""
    return [_flat(e) for e in _as_sent(r).xrange(stream, "-", "+") or [] if e and e[1]]


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


def entry_version(entry_id: str) -> int:
    """A stream entry id ``<ms>-<seq>`` as one integer that orders like the ids."""
    ms, seq = entry_id.split("-")
    return (int(ms) << 20) | int(seq)

"""Reads on PostgreSQL read replicas, everything else on the primary (``DATABASE_REPLICA_URLS``).

Which reads may go to a replica: those of a request that changes nothing (GET, HEAD, OPTIONS),
outside any transaction of the primary, made while the request's client has nothing of its own
that a replica may lack. Everything else reads the primary: requests that write (what they read
decides what they write), anything inside ``transaction.atomic`` (a read-then-write must see the
rows it writes over), ``select_for_update`` and ``get_or_create`` (Django sends them to the
write alias), Celery tasks, management commands and the shell (no request: the flush, the
fan-out and the checks need exact rows), credentials (sessions, tokens, users: a revoked token
is refused at once, a new one works at once), and whatever fills a cache other readers share
(``primary_reads``: a page or a like state built from a lagging replica would serve the old
rows to everyone until the next write).

**Read your writes.** After a request that wrote on the primary (a non-safe method answered
below 400 that ran a statement other than a SELECT there: a like answered from Redis does not), the
primary's WAL insert position (``pg_current_wal_insert_lsn()``, one small query: a post's commit
may not be written out yet) is kept in the shared cache
(Redis) under the client's credentials: its bearer token or session cookie (and a session cookie
the response sets, as a sign-in does), and under its user, so the user's other devices count
too. That client's reads go to the primary until a
replica has replayed past that position, or until the entry expires after
``DATABASE_REPLICA_MAX_LAG`` seconds (by then any replica still in use is within that lag). Kept
in Redis rather than in a cookie or a header the client sends back: the widget holds its bearer
token in memory and has no cookies (a third-party frame), API clients echo nothing, and every
app host sees the same entry. The cost: one cache read per request of a signed-in client that
reads the database, only when replicas are configured; the entries are looked up lazily, so a
page served from the cache costs nothing more. While the cache is down, a signed-in client reads
the primary (its writes cannot be known).

**Lag and failure.** A replica is probed at most once a second per process (its replay position
and how far behind it is); one more than ``DATABASE_REPLICA_MAX_LAG`` seconds behind is left
alone until it catches up. A replica that refuses a connection or fails a statement is left
alone for ``DATABASE_REPLICA_RETRY`` seconds by this process (a circuit breaker: a dead replica
costs one connection attempt per process and period, not one per request; connections to a
replica time out after ``connect_timeout``, 2 s unless its URL says otherwise). A safe request
whose replica failed midway is answered again from the primary, so the reader sees no error.
"""

from __future__ import annotations

import hashlib
import logging
import random
import threading
import time
from contextlib import ContextDecorator
from contextvars import ContextVar
from dataclasses import dataclass, field

from django.conf import settings
from django.core.cache import cache
from django.db import DEFAULT_DB_ALIAS, connections

from . import citus, sharedcache
from .errors import DATABASE_UNAVAILABLE

logger = logging.getLogger("infra.replicas")

PRIMARY = DEFAULT_DB_ALIAS
_citus_warned = threading.Event()
SAFE_METHODS = frozenset({"GET", "HEAD", "OPTIONS"})
# Seconds a replica's probe (replay position, lag) is trusted by a process.
PROBE_SECONDS = 1.0
# Seconds between probes of a replica that a cache fill waits for (DATABASE_REPLICA_CATCH_UP).
CATCH_UP_POLL = 0.005
# Models read on the primary whatever the request: the credentials of every request.
PRIMARY_MODELS = frozenset({"comments.user", "comments.apitoken", "sessions.session"})

# What a replica reports: where it has replayed to and how far behind it is. On a server that is
# not in recovery (a test's mirror of the primary) both say "up to date".
_PROBE_SQL = """
SELECT CASE WHEN pg_is_in_recovery() THEN pg_last_wal_replay_lsn() ELSE pg_current_wal_insert_lsn() END::text,
       CASE WHEN NOT pg_is_in_recovery() OR pg_last_wal_receive_lsn() = pg_last_wal_replay_lsn() THEN 0
            ELSE COALESCE(EXTRACT(EPOCH FROM now() - pg_last_xact_replay_timestamp()), 0) END
"""


def replica_aliases() -> list[str]:
    """The replicas reads may go to. None on a Citus coordinator: its WAL position does not
    cover the writes its workers hold, so no replica's position could tell whether it holds a
    client's write (docs/citus.md, "Read replicas"); its reads stay on the coordinator."""
    aliases = list(getattr(settings, "DATABASE_REPLICAS", []))
    if aliases and citus.is_coordinator(connections[PRIMARY]):
        if not _citus_warned.is_set():
            _citus_warned.set()
            logger.warning("DATABASE_REPLICA_URLS is ignored: the database is a Citus coordinator")
        return []
    return aliases


def lsn_value(text: str | None) -> int | None:
    """A WAL position as PostgreSQL writes it (``16/B374D848``) as a number, comparable."""
    if not text:
        return None
    high, low = text.split("/")
    return (int(high, 16) << 32) | int(low, 16)


# --- per process: the circuit breaker and the probes -----------------------------------------


@dataclass
class _Probe:
    at: float
    replayed: int | None
    lag: float


_lock = threading.Lock()
_down_until: dict[str, float] = {}
_probes: dict[str, _Probe] = {}


def trip(alias: str, reason: object) -> None:
    """Leave ``alias`` alone for ``DATABASE_REPLICA_RETRY`` seconds."""
    with _lock:
        first = _down_until.get(alias, 0.0) <= time.monotonic()
        _down_until[alias] = time.monotonic() + settings.DATABASE_REPLICA_RETRY
        _probes.pop(alias, None)
    if first:
        logger.warning(
            "replica %s unavailable (%s); reading the primary for %.0f s",
            alias,
            reason,
            settings.DATABASE_REPLICA_RETRY,
        )


def reset() -> None:
    """Forget outages and probes (tests)."""
    with _lock:
        _down_until.clear()
        _probes.clear()


def _probe(alias: str, *, fresh: bool = False) -> _Probe:
    held = _probes.get(alias)
    now = time.monotonic()
    if held is not None and not fresh and now - held.at < PROBE_SECONDS:
        return held
    conn = connections[alias]
    if conn.vendor == "postgresql":
        with conn.cursor() as cursor:
            cursor.execute(_PROBE_SQL)
            replayed, lag = cursor.fetchone()
        probe = _Probe(now, lsn_value(replayed), float(lag))
    else:  # a test's mirror of the embedded default's SQLite file: the primary itself
        conn.ensure_connection()
        probe = _Probe(now, None, 0.0)
    _probes[alias] = probe
    return probe


def replica_states() -> dict[str, str]:
    """Each replica as ``/healthz`` reports it, measured now: ``ok``, ``behind`` (more than
    ``DATABASE_REPLICA_MAX_LAG`` seconds: not read until it catches up) or ``down``."""
    states = {}
    for alias in replica_aliases():
        try:
            probe = _probe(alias, fresh=True)
        except DATABASE_UNAVAILABLE:
            connections[alias].close()
            states[alias] = "down"
        else:
            states[alias] = "behind" if probe.lag > settings.DATABASE_REPLICA_MAX_LAG else "ok"
    return states


# --- per request ------------------------------------------------------------------------------


@dataclass
class _RequestReads:
    may_use_replica: bool
    request: object
    credentials: list[str]
    chosen: str | None = None
    failed: bool = False
    _pin: tuple | None = field(default=None, repr=False)

    def pin(self) -> tuple[bool, int | None]:
        """(pinned, position): whether the client, or its user on another device, wrote lately,
        and the furthest WAL position those writes reached (None: unknown, so only the primary
        has them for sure)."""
        if self._pin is None:
            self._pin = _read_pin([*self.credentials, *_user_key(self.request)] if self.credentials else [])
        return self._pin


_request: ContextVar[_RequestReads | None] = ContextVar("comments_replica_request", default=None)
_primary_only: ContextVar[int] = ContextVar("comments_primary_only", default=0)
_current: ContextVar[str | None] = ContextVar("comments_current_reads", default=None)


class _Scope(ContextDecorator):
    def _recreate_cm(self):
        # A decorator's every call gets a scope of its own: threads and recursion each keep
        # their own token to reset.
        return type(self)()


class primary_reads(_Scope):
    """Reads inside go to the primary: decorate what fills a shared cache, or must be exact."""

    def __enter__(self):
        self._token = _primary_only.set(_primary_only.get() + 1)
        return self

    def __exit__(self, *exc):
        _primary_only.reset(self._token)
        return False


class current_reads(_Scope):
    """Reads inside see every write committed before they began, whoever made it: a replica
    that has replayed up to the primary's position at the start (one small query on each; the
    position is the whole server's, so a replica of a busy primary is always a little behind it,
    and the fill waits up to ``DATABASE_REPLICA_CATCH_UP`` seconds for it), else the primary. For
    what fills a cache every reader shares (a page built after a write made the old one out of date
    must hold that write), without sending every fill to the primary."""

    def __enter__(self):
        alias = read_alias()
        if alias != PRIMARY:
            try:
                if not _holds(alias, _primary_position(), wait=settings.DATABASE_REPLICA_CATCH_UP):
                    alias = PRIMARY
            except DATABASE_UNAVAILABLE as exc:
                connections[alias].close()
                trip(alias, exc)
                alias = PRIMARY
        self._token = _current.set(alias)
        return self

    def __exit__(self, *exc):
        _current.reset(self._token)
        return False


def read_alias(model=None) -> str:
    """The database a read of ``model`` (None: raw SQL of the comment tables) goes to now."""
    state = _request.get()
    if state is None or not state.may_use_replica or _primary_only.get():
        return PRIMARY
    if connections[PRIMARY].in_atomic_block:
        return PRIMARY
    if model is not None and model._meta.label_lower in PRIMARY_MODELS:
        return PRIMARY
    current = _current.get()
    if current is not None:
        return current
    if state.chosen is None:
        state.chosen = _choose(state)
    return state.chosen


def read_connection():
    """The connection for a hand-written read of the comment tables (``rowsql``)."""
    return connections[read_alias()]


def _choose(state: _RequestReads) -> str:
    """A replica that answers, is not too far behind and holds the client's writes; else the
    primary. Chosen once per request, so the request reads one consistent snapshot's source."""
    aliases = replica_aliases()
    start = random.randrange(len(aliases)) if aliases else 0
    for alias in aliases[start:] + aliases[:start]:
        if _down_until.get(alias, 0.0) > time.monotonic():
            continue
        try:
            _watch(alias)
            probe = _probe(alias)
            if probe.lag > settings.DATABASE_REPLICA_MAX_LAG:
                continue
            pinned, position = state.pin()
            if pinned and not _holds(alias, position):
                continue
        except DATABASE_UNAVAILABLE as exc:
            connections[alias].close()
            trip(alias, exc)
            state.failed = False  # nothing was read there yet: no need to answer again
            continue
        return alias
    return PRIMARY


def _holds(alias: str, position: int | None, *, wait: float = 0.0) -> bool:
    """Whether ``alias`` has replayed up to ``position`` (None: a position nobody knows, so
    only the primary holds it), waiting up to ``wait`` seconds for it. A probe that is not
    recent enough to tell is taken again: what a replica has replayed only grows, so an older
    probe that is far enough is enough."""
    if position is None:
        return False
    probe = _probe(alias)
    deadline = time.monotonic() + wait
    while probe.replayed is None or probe.replayed < position:
        probe = _probe(alias, fresh=True)
        if probe.replayed is not None and probe.replayed >= position:
            break
        if time.monotonic() >= deadline:
            return False
        time.sleep(CATCH_UP_POLL)
    return True


def _watch(alias: str) -> None:
    """Connect to ``alias`` (a closed or failed connection is replaced first) and watch its
    statements: one that fails trips the breaker and has the request answered again."""
    conn = connections[alias]
    conn.close_if_health_check_failed()
    conn.ensure_connection()
    if _on_failure not in conn.execute_wrappers:
        conn.execute_wrappers.append(_on_failure)


def _on_failure(execute, sql, params, many, context):
    try:
        return execute(sql, params, many, context)
    except DATABASE_UNAVAILABLE as exc:
        trip(context["connection"].alias, exc)
        state = _request.get()
        if state is not None:
            state.failed = True
        raise


# --- read your writes -------------------------------------------------------------------------


def _pin_key(credential: str) -> str:
    return "rw:" + hashlib.sha256(credential.encode()).hexdigest()[:32]


def _credentials(request) -> list[str]:
    found = []
    header = request.META.get("HTTP_AUTHORIZATION", "")
    if header[:7].lower() == "bearer ":
        found.append("t:" + header[7:].strip())
    session = request.COOKIES.get(settings.SESSION_COOKIE_NAME)
    if session:
        found.append("s:" + session)
    return found


def _user_key(request) -> list[str]:
    """The signed-in user's own entry: their writes from one device count on the others. Asked
    only of a request with credentials, when it first reads a replica: the user is known by then
    (DRF authenticates before the view reads; a session's user is read on the primary)."""
    user = getattr(request, "user", None)
    return [f"u:{user.pk}"] if user is not None and user.is_authenticated else []


def _read_pin(credentials: list[str]) -> tuple[bool, int | None]:
    if not credentials:
        return False, None
    found = sharedcache.call(lambda: cache.get_many([_pin_key(c) for c in credentials]), None)
    if found is None:
        return True, None  # the cache is down: the client's writes cannot be known
    if not found:
        return False, None
    positions = [lsn_value(value) for value in found.values()]
    known = [p for p in positions if p is not None]
    return True, max(known) if len(known) == len(positions) else None


def _primary_position() -> int | None:
    """The primary's WAL position now (None on SQLite: no replica can be known to hold it)."""
    primary = connections[PRIMARY]
    if primary.vendor != "postgresql":
        return None
    with primary.cursor() as cursor:
        # The insert position, not the write position: a transaction that commits
        # asynchronously (synchronous_commit off) may not have its commit written out yet.
        cursor.execute("SELECT pg_current_wal_insert_lsn()::text")
        position = lsn_value(cursor.fetchone()[0])
    return None if position is None else _record_end(position)


# PostgreSQL's WAL pages (its default build) and the headers that open them: a long one on the
# first page of a segment, a short one on the others.
WAL_PAGE = 8192
WAL_PAGE_HEADERS = (24, 40)


def _record_end(insert_position: int) -> int:
    """The end of the last record inserted, from the insert position. When that record ended
    a page, the insert position is past the next page's header, and a replica that replayed
    everything is at the page's end (``pg_last_wal_replay_lsn()``), below it until more is
    written."""
    offset = insert_position % WAL_PAGE
    return insert_position - offset if offset in WAL_PAGE_HEADERS else insert_position


def record_write(credentials: list[str]) -> None:
    """The client behind ``credentials`` wrote: its reads go to the primary until a replica has
    replayed this far, for ``DATABASE_REPLICA_MAX_LAG`` seconds at most."""
    if not credentials:
        return
    lsn = _primary_position()
    # Kept as text ("" on SQLite: the primary until the entry expires).
    position = "" if lsn is None else f"{lsn >> 32:X}/{lsn & 0xFFFFFFFF:X}"
    seconds = settings.DATABASE_REPLICA_MAX_LAG + PROBE_SECONDS
    # One key per credential, set apart: on a Redis Cluster they live in different slots.
    for credential in credentials:
        sharedcache.call(lambda: cache.set(_pin_key(credential), position, timeout=seconds), None)  # noqa: B023 - called before the loop moves on


# Statements that change no row: a request that ran only these on the primary wrote nothing there
# (a like answered from Redis), and its client needs no pin.
_READING = ("SELECT", "SAVEPOINT", "RELEASE", "ROLLBACK", "SET ", "SHOW")


class _PrimaryWrites:
    """Watches the primary's statements during a request: did any of them write?"""

    def __init__(self):
        self.seen = False

    def __call__(self, execute, sql, params, many, context):
        if not self.seen and not sql.lstrip()[:9].upper().startswith(_READING):
            self.seen = True
        return execute(sql, params, many, context)


class ReplicaMiddleware:
    """Opens each request's choice of database (``read_alias``), answers a safe request again
    from the primary when its replica failed midway, and records the writes of the others."""

    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        credentials = _credentials(request)
        safe = request.method in SAFE_METHODS
        token = _request.set(_RequestReads(safe and bool(replica_aliases()), request, credentials))
        writes = _PrimaryWrites()
        try:
            if safe:
                response = self.get_response(request)
            else:
                with connections[PRIMARY].execute_wrapper(writes):
                    response = self.get_response(request)
            state = _request.get()
            if state is not None and state.failed:
                logger.warning("replica failed during %s %s; answering from the primary", request.method, request.path)
                _request.set(_RequestReads(False, request, credentials))
                response = self.get_response(request)
        finally:
            _request.reset(token)
        if writes.seen and response.status_code < 400:
            issued = response.cookies.get(settings.SESSION_COOKIE_NAME)
            if issued is not None and issued.value:
                credentials = [*credentials, "s:" + issued.value]
            credentials += _user_key(request)
            try:
                record_write(credentials)
            except DATABASE_UNAVAILABLE as exc:
                logger.warning("could not record a write's WAL position: %s", exc)
        return response


class ReplicaRouter:
    """Django's side of ``read_alias``: ORM reads as it says, writes and migrations on the
    primary."""

    def db_for_read(self, model, **hints):
        return read_alias(model)

    def db_for_write(self, model, **hints):
        return PRIMARY

    def allow_relation(self, obj1, obj2, **hints):
        return True  # every alias holds the same rows

    def allow_migrate(self, db, app_label, model_name=None, **hints):
        return db == PRIMARY

"""The shared read cache of a subject's pages: what every reader of a hot subject asks for,
built once and served from the cache instead of PostgreSQL and the template engine.

**What is cached.** An *entry* is one page of one subject exactly as an anonymous reader gets
it (the API's JSON bytes of a list page, the widget's rendered HTML), keyed by the subject and
everything else that shapes the page (mode, sort, limit, cursor, language ...). Signed-in
readers share these entries: what only they see (``liked`` flags, live like counts) is laid
over the shared page by the caller (``queries.list_comments_json``).

**Versions.** Each subject has a version token in the cache; an entry carries the token it was
built under and counts only while the subject still has that token. A write that changes what
readers of the subject see calls ``subject_changed`` (after its transaction commits, and most
services at the write too), which *deletes* the token; the next reader draws a new random one, so
every page of the subject is rebuilt once, when it is next asked for. Deleting rather than counting
up means a write never creates a key that nobody reads, and a token lost to eviction can never come
back with an old value that old entries still carry. The token is read *before* the database is, so
an entry never holds rows older than its token.

**Single flight.** On a miss, one process (thread) takes a short-lived rebuild flag (``add``,
so set-if-absent) and builds; the others serve the entry they found under an older token when
they may (anonymous readers) or wait a little for the new one, and build it themselves only if
it does not come.

**Hot pages** (``infra.hotpages``). Each process counts the reads of each entry over a sliding
window; an entry read at least ``COMMENTS_HOT_PAGE_READS`` times a second is *hot* and is kept in
the process's own memory for ``COMMENTS_HOT_PAGE_SECONDS``, so the first page of a hot subject costs
no round trip at all. Other processes' hot copies are not told of a write and live out their second;
this process's copies of a subject go at once.

**Preloading.** A reader who follows a cursor is walking a list: when such a reader is served a
page that this process built, the pages after it are built ahead by a background thread of the
process (``Preloads``) while the reader reads this one, at most ``PRELOAD_DEPTH`` pages beyond the
last one the reader took, so that a reader who reads on finds each next page built. A reader who
asks for a page this process built ahead (or is building) gets it after reading only the subject's
token, and the walk goes on one page further. At most ``PRELOADS_BUILDING`` pages are built ahead
at once per process; a build beyond waits for the reader's next page. A page read from the cache,
as a hot subject's pages are by everyone after the first reader, leads on to nothing, and neither
does a first page (most readers read no further).

**Failure.** A cache that does not answer is treated as a miss and left alone for
``COMMENTS_CACHE_RETRY`` seconds (``sharedcache``): pages come from the database, slower, and
nothing fails.
A database that does not answer while a page is rebuilt leaves the reader the page's previous
version, when the cache still has one, marked ``stale``.

**Fast paths and their switches** (docs/fast-paths.md; each read at call time, each with a
differential test in tests/fastpaths/ that runs the same reads with it on and off):

- the shared cache of pages, ``COMMENTS_PAGE_CACHE_TTL`` (0: off, and the three below with it):
  a page never holds rows older than its version token;
- hot copies, ``COMMENTS_HOT_PAGE_SECONDS`` (0: off): this process's copies of a subject go at
  its write; another process's live out their seconds;
- pages built ahead, ``COMMENTS_PAGE_PRELOAD`` (off: each page built when asked for): a page
  built before a write is never served after it.

The page cache's key builders are here and only here. Every key of a subject carries the hash tag
``{s<subject id>}``, so a page and its version are read in one ``get_many`` on Redis Cluster too.
"""

from __future__ import annotations

import hashlib
import logging
import os
import secrets
import threading
import time
from collections import OrderedDict
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from concurrent.futures import TimeoutError as FutureTimeout
from typing import Any, NamedTuple, TypeAlias

from django.conf import settings
from django.core.cache import cache
from django.db import close_old_connections, connections

from . import cachestats, replicas, sharedcache
from .errors import database_unavailable
from .hotpages import hot
from .redislink import round_trip

logger = logging.getLogger("comments.cache")

# What names the page after a page's entry, and builds it: ``(variant, build)``, or None.
Follow: TypeAlias = Callable[[Any], "tuple[str, Callable[[], object]] | None"]

# How long a rebuild flag holds: longer than a page takes to build, short enough that a builder
# that died is soon replaced.
FLIGHT_SECONDS = 5
# How long a reader that lost the flight waits for the winner's entry before building it itself.
FLIGHT_WAIT_SECONDS = 0.25
FLIGHT_POLL_SECONDS = 0.005
# Pages a process builds ahead at once, at most (one thread builds them, one after the other).
PRELOADS_BUILDING = 2
# Pages a reader's walk is built ahead of the reader, at most: two, so that the thread builds
# one while the reader's request takes the other, and is not left waiting for the request.
PRELOAD_DEPTH = 2
# A build ahead checks its database connection (as a request does) only when the thread has
# been idle this long: a walk's builds follow each other closely.
PRELOAD_CONNECTION_CHECK_SECONDS = 1.0
# Pages built ahead and not yet asked for that a process keeps track of, at most.
PRELOADS_KEPT = 16
# How long a reader waits for this process's build of the page it asks for.
PRELOAD_WAIT_SECONDS = 1.0


# --- keys ----------------------------------------------------------------------------------


def _tag(subject_id: int) -> str:
    return f"cmt:{{s{int(subject_id)}}}"


def version_key(subject_id: int) -> str:
    return f"{_tag(subject_id)}:v"


def entry_key(subject_id: int, variant: str) -> str:
    """The entry of one page variant (``variant`` names everything but the subject that shapes
    the page; digested, since cursors are long)."""
    digest = hashlib.blake2b(variant.encode(), digest_size=12).hexdigest()
    return f"{_tag(subject_id)}:e:{digest}"


def site_key(key: str) -> str:
    """A site's row, by its public key."""
    return f"cmt:site:{hashlib.blake2b(key.encode(), digest_size=12).hexdigest()}"


def lookup_key(site_key: str, key: str) -> str:
    """The id of a subject found by its site and key (no hash tag: it is read before the
    subject is known)."""
    digest = hashlib.blake2b(f"{site_key}\x00{key}".encode(), digest_size=12).hexdigest()
    return f"cmt:lookup:{digest}"


def _flight_key(key: str) -> str:
    return f"{key}:flight"


def enabled() -> bool:
    return settings.COMMENTS_PAGE_CACHE_TTL > 0


# --- the shared cache, guarded ---------------------------------------------------------------


def _usable() -> bool:
    return enabled() and sharedcache.available()


def _guarded(call: Callable, default=None):
    """``call()``, or ``default`` when the page cache is off or the cache does not answer."""
    return sharedcache.call(call, default) if enabled() else default


def reset() -> None:
    """Forget an outage and every hot copy (tests)."""
    sharedcache.reset()
    hot.clear()
    preloads.stop()


# --- versions --------------------------------------------------------------------------------


def _current_token(subject_id: int, found: str | None) -> str:
    """The subject's token: ``found`` if the cache had one, else a new one (the first reader
    to add it wins; the others read the winner's)."""
    if found is not None:
        return found
    key = version_key(subject_id)
    token = secrets.token_hex(8)
    if _guarded(lambda: cache.add(key, token, timeout=settings.COMMENTS_PAGE_CACHE_TTL * 4), False):
        return token
    return _guarded(lambda: cache.get(key)) or token


def subject_changed(subject_id: int) -> None:
    """Every cached page of the subject is out of date. Call it after the write's transaction
    commits (``transaction.on_commit``), so that no reader keeps a page rebuilt from the rows
    as they were before it (``comments.services.pages_change`` calls it at the write too)."""
    subjects_changed([subject_id])


def subjects_changed(subject_ids: list[int]) -> None:
    """``subject_changed`` for many subjects at once: one round trip to the cache (a write of
    many subjects, as an import's batch is, would otherwise pay one per subject)."""
    if not subject_ids:
        return
    hot.forget_subjects(subject_ids)
    _guarded(lambda: cache.delete_many([version_key(s) for s in subject_ids]))


# --- lookups ---------------------------------------------------------------------------------


def lookups_get(keys: list[str]) -> dict:
    return _guarded(lambda: cache.get_many(keys), {})


def lookup_set(key: str, value) -> None:
    _guarded(lambda: cache.set(key, value, timeout=settings.COMMENTS_PAGE_CACHE_TTL))


def site_changed(site_key_: str) -> None:
    """A site's settings changed (allowed origins, mode, moderation): its cached row goes, and
    so do this process's hot copies, which may hold it."""
    hot.clear()
    _guarded(lambda: cache.delete(site_key(site_key_)))


# --- entries ---------------------------------------------------------------------------------


class Read(NamedTuple):
    entry: Any  # bytes of an API page, str of the widget's HTML
    cached: bool  # from a cache, not built by this reader
    stale: bool = False  # an older version, served because the database could not rebuild it


def shared_entry(
    subject_id: int, variant: str, build: Callable[[], object], *, stale_ok: bool, fresh: bool = False
) -> Read:
    """The entry of a page: from this process's hot copies, the shared cache, or ``build()``
    (which reads the database). ``stale_ok``: while another process rebuilds it, an entry of
    an older version will do. ``fresh``: skip the hot copies (a reader who may have just
    written, whose write other processes' copies have not seen)."""
    key = entry_key(subject_id, variant)
    if not fresh:
        copy = hot.get(key)
        if copy is not None:
            cachestats.hit()
            return Read(copy, True)
    if not _usable():
        cachestats.miss()
        return Read(build(), False)
    if preloads.holds(key):
        # Built ahead by this process (perhaps still being built): only the token is read, not
        # the entry the build kept.
        ahead = preloads.take(key, _token(subject_id))
        if ahead is not None:
            cachestats.hit()
            hot.offer(subject_id, key, ahead, counted=not fresh)
            return Read(ahead, True)
    token, held = _lookup(subject_id, key)
    if held is not None and held[0] == token:
        cachestats.hit()
        hot.offer(subject_id, key, held[1], counted=not fresh)
        return Read(held[1], True)
    cachestats.miss()
    won = _take_flight(key, unknown=True)
    if not won:
        if stale_ok and held is not None:
            return Read(held[1], True)
        waited = _wait_for(key, token)
        if waited is not None:
            return Read(waited, True)
    try:
        entry = _build_current(build)
    except BaseException as exc:
        if won:
            _end_flight(key)
        if database_unavailable(exc) and stale_ok and held is not None:
            logger.warning("database unavailable: serving subject %s's page %s stale", subject_id, key)
            return Read(held[1], True, stale=True)
        raise
    _keep(key, token, entry, flight=won)
    hot.offer(subject_id, key, entry, counted=not fresh)
    return Read(entry, False)


def _lookup(subject_id: int, key: str) -> tuple[str, Any]:
    """The subject's token and what the shared cache holds under ``key`` (``(token, entry)`` or
    None), in one round trip."""
    vkey = version_key(subject_id)
    found = _guarded(lambda: cache.get_many([vkey, key]), {})
    return _current_token(subject_id, found.get(vkey)), found.get(key)


def _token(subject_id: int) -> str:
    return _current_token(subject_id, _guarded(lambda: cache.get(version_key(subject_id))))


def _take_flight(key: str, *, unknown: bool) -> bool:
    """Take the rebuild flag of ``key``; ``unknown``: the answer when the cache does not say."""
    return _guarded(lambda: cache.add(_flight_key(key), 1, timeout=FLIGHT_SECONDS), unknown)


def _end_flight(key: str) -> None:
    _guarded(lambda: cache.delete(_flight_key(key)))


def _build_current(build: Callable[[], object]):
    # The entry will be every reader's until the next write: it must hold every write made
    # before it (a replica that has replayed them all, else the primary).
    with replicas.current_reads():
        return build()


def _keep(key: str, token: str, entry, *, flight: bool) -> None:
    """Keep the entry built under ``token``; ``flight``: the builder took the rebuild flag, which
    goes in the same round trip (on Redis: a cold page pays one round trip fewer)."""
    ttl = settings.COMMENTS_PAGE_CACHE_TTL
    redis = sharedcache.redis_client() if flight else None
    if redis is None:
        _guarded(lambda: cache.set(key, (token, entry), timeout=ttl))
        if flight:
            _end_flight(key)
        return
    commands = [
        ("SET", cache.make_key(key), cache.client.encode((token, entry)), "EX", ttl),  # type: ignore[attr-defined]
        ("DEL", cache.make_key(_flight_key(key))),
    ]

    def keep_and_land() -> None:
        for reply in round_trip(redis, commands):
            if isinstance(reply, Exception):
                raise reply

    _guarded(keep_and_land)


def _wait_for(key: str, token: str):
    deadline = time.monotonic() + FLIGHT_WAIT_SECONDS
    while time.monotonic() < deadline:
        time.sleep(FLIGHT_POLL_SECONDS)
        held = _guarded(lambda: cache.get(key))
        if held is not None and held[0] == token:
            return held[1]
        if not _usable():
            return None
    return None


# --- pages built ahead in this process -----------------------------------------------------


class _Walk:
    """A reader walking a list by cursor, with pages built ahead of them: ``ahead`` pages built
    (or being built) and not yet taken; ``last``, the last page built, while no build of the
    walk is under way (None: one is, or the list ended); ``follow(entry)``, the variant of the
    page after ``entry`` and its build, or None at the end of the list."""

    __slots__ = ("subject_id", "follow", "last", "ahead")

    def __init__(self, subject_id: int, follow: Follow, last: Any) -> None:
        self.subject_id = subject_id
        self.follow = follow
        self.last = last
        self.ahead = 0


class Preloads:
    """Pages built ahead by one background thread of this process (see *Preloading* above).

    A page built ahead goes to the shared cache as any other, under the subject's token read
    before its rows (so a write meanwhile leaves it unused), and is kept here for the reader of
    this process who asks for it next. The thread reads on a database connection of its own,
    renewed as a request's is (``CONN_MAX_AGE``, health checks) when it has been idle."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._builds: OrderedDict[str, tuple[Future, _Walk]] = OrderedDict()
        self._executor: ThreadPoolExecutor | None = None
        self._pid = 0
        self._last_build = 0.0  # monotonic; only the thread reads and writes it

    def offer(self, subject_id: int, entry: Any, follow: Follow) -> bool:
        """A reader following a cursor was served ``entry``, a page this process built: build
        the pages after it ahead, at most ``PRELOAD_DEPTH`` beyond the one the reader last took;
        whether a build starts (not when this process is already building the next page, or
        ``PRELOADS_BUILDING`` pages)."""
        if not settings.COMMENTS_PAGE_PRELOAD or not _usable():
            return False
        with self._lock:
            return self._advance(_Walk(subject_id, follow, entry))

    def holds(self, key: str) -> bool:
        """Whether this process built (or is building) ``key`` ahead, not yet taken."""
        with self._lock:
            return key in self._builds

    def take(self, key: str, token: str):
        """The entry of ``key`` this process built ahead under ``token`` (waiting for a build
        under way), or None; the reader's walk goes on being built ahead."""
        with self._lock:
            held = self._builds.pop(key, None)
        if held is None:
            return None
        future, walk = held
        try:
            built = future.result(timeout=PRELOAD_WAIT_SECONDS)
        except FutureTimeout:
            built = None  # the reader goes the usual way; the walk counts the page as taken
        with self._lock:
            walk.ahead -= 1
            self._advance(walk)
        return built[1] if built is not None and built[0] == token else None

    def stop(self) -> None:
        """Let the builds under way finish, forget them, and stop the thread, closing its
        database connections (tests; the next offer starts a new thread)."""
        with self._lock:
            executor, self._executor = self._executor, None
            self._builds.clear()
        if executor is not None:
            executor.submit(connections.close_all).result()
            executor.shutdown()

    def _advance(self, walk: _Walk) -> bool:
        """Start the build of the walk's next page, unless one is under way, the walk is
        ``PRELOAD_DEPTH`` pages ahead of its reader, its list ended, the page is being built
        already, or this process builds ``PRELOADS_BUILDING`` pages (the reader's next take
        tries again). Called with the lock held."""
        if walk.last is None or walk.ahead >= PRELOAD_DEPTH:
            return False
        following = walk.follow(walk.last)
        if following is None:
            walk.last = None
            return False
        variant, build = following
        key = entry_key(walk.subject_id, variant)
        if key in self._builds or sum(not f.done() for f, _ in self._builds.values()) >= PRELOADS_BUILDING:
            return False
        while len(self._builds) >= PRELOADS_KEPT:
            self._builds.popitem(last=False)
        if self._executor is None or self._pid != os.getpid():  # none yet, or forked
            self._executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix="page-preload")
            self._pid = os.getpid()
        walk.last, walk.ahead = None, walk.ahead + 1
        self._builds[key] = (self._executor.submit(self._build, walk, key, build), walk)
        return True

    def _build(self, walk: _Walk, key: str, build: Callable[[], object]) -> tuple[str, Any] | None:
        """The page's ``(token, entry)`` (see ``_built``); then the walk's next page, if it is
        not far enough ahead."""
        if time.monotonic() - self._last_build > PRELOAD_CONNECTION_CHECK_SECONDS:
            # A connection used a moment ago needs no check: a walk's builds skip its round trip.
            close_old_connections()
        try:
            built = self._built(walk.subject_id, key, build)
        finally:
            self._last_build = time.monotonic()
        if built is not None:
            with self._lock:
                walk.last = built[1]
                self._advance(walk)
        return built

    @staticmethod
    def _built(subject_id: int, key: str, build: Callable[[], object]) -> tuple[str, Any] | None:
        """``(token, entry)`` of the page, from the shared cache or built; None when another
        process is building it or the build failed (the reader then goes the usual way)."""
        try:
            token, held = _lookup(subject_id, key)
            if held is not None and held[0] == token:
                return held
            if not _take_flight(key, unknown=False):
                return None
            try:
                entry = _build_current(build)
            except BaseException:
                _end_flight(key)
                raise
            _keep(key, token, entry, flight=True)
            return token, entry
        except Exception:
            logger.warning("building subject %s's page %s ahead failed", subject_id, key, exc_info=True)
            return None


preloads = Preloads()


# --- hot copies in this process ------------------------------------------------------------


def hot_request_copy(subject_id: int, query_string: str) -> bytes | None:
    """This process's hot copy of an anonymous reader's page, found by the request's raw query
    string: a hot page is answered before its query is even validated (it was, when the copy
    was made)."""
    copy = hot.get(_request_key(subject_id, query_string))
    if copy is not None:
        cachestats.hit()
    return copy


def keep_request_copy(subject_id: int, query_string: str, entry) -> None:
    """After an anonymous reader's page was served from ``entry``: keep it under the raw query
    string too, if that is hot (the bytes are shared, not copied)."""
    hot.offer(subject_id, _request_key(subject_id, query_string), entry, counted=True)


def _request_key(subject_id: int, query_string: str) -> str:
    return f"request:{subject_id}?{query_string}"

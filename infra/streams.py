"""Durable hand-offs through Redis streams on the state Redis (``redislink.client()``).

A request hands work on to the workers (a comment's second check, its notifications and webhook
events, the like actions) by appending an entry to a stream: a fraction of a broker publish.
A worker drains the stream in batches (``stream_drain``) as a member of the consumer group
``GROUP``; a batch is acknowledged and deleted only after its handler committed, and entries a
dead worker read are claimed by the next drain, so nothing is lost and handlers must be
idempotent. Without the state Redis, or while it fails, ``stream_add`` answers False (or runs
the caller's ``otherwise``): the work then goes to a Celery task of its own.
"""

from __future__ import annotations

import functools
import logging
import os
import socket
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

import redis
from django.conf import settings
from redis.cluster import RedisCluster

from .luascript import Script
from .redislink import ERRORS, client, mark_down, round_trip

logger = logging.getLogger("infra.streams")

# The consumer group of every stream.
GROUP = "flush"

DROP_IDLE_CONSUMERS = Script.load(Path(__file__).resolve().parent / "lua", "drop_idle_consumers")


def stream_add(stream: str, fields: dict, *, otherwise: Callable[[], object] | None = None) -> bool:
    """Queue one entry on ``stream`` in the state Redis (moderation's second checks, notifications'
    events): a fraction of a broker publish for the request. False without that Redis, or while
    it fails: the work must then go to a Celery task of its own. With ``otherwise`` (that
    hand-off to a task), ``stream_add`` runs it itself when the entry cannot be queued, and
    inside ``together()`` the entry travels with the block's other hand-offs."""
    command = ("XADD", stream, "*", *(part for pair in fields.items() for part in pair))
    return hand_off([command], otherwise=otherwise)


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
    ends; each whose commands fail then runs its ``otherwise``. Nested blocks join the outer one.
    With ``STREAMS_HANDOFFS_TOGETHER`` off each hand-off goes at once, in a round trip of its
    own."""
    if getattr(_gathering, "handoffs", None) is not None or not settings.STREAMS_HANDOFFS_TOGETHER:
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
                    logger.error("a hand-off to Redis failed: %s", failures[0])
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


def consumer_name() -> str:
    return f"{socket.gethostname()}-{os.getpid()}"


def ensure_group(r: redis.Redis | RedisCluster, stream: str) -> None:
    try:
        r.xgroup_create(stream, GROUP, id="0", mkstream=True)
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
    claimed = raw.xautoclaim(stream, GROUP, consumer, reclaim_idle_ms, start_id="0-0", count=count)
    entries = [_flat(e) for e in claimed[1] if e and e[1]]
    if len(entries) < count:
        fresh = raw.xreadgroup(GROUP, consumer, {stream: ">"}, count=count - len(entries))
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


def forget_entries(r: redis.Redis | RedisCluster, stream: str, entry_ids: list[str]) -> None:
    """Acknowledge and delete entries that were dealt with (another stream read with
    ``read_events``: moderation's queue of second checks)."""
    pipe = r.pipeline(transaction=False)
    _forget(pipe, stream, entry_ids)
    pipe.execute()


def _forget(pipe, stream: str, entry_ids: list[str]) -> None:
    pipe.xack(stream, GROUP, *entry_ids)
    pipe.xdel(stream, *entry_ids)


def drop_idle_consumers(r: redis.Redis | RedisCluster, stream: str) -> int:
    """Forget the consumers (one per flushing process that ever read the stream) that hold no
    entry, so processes that restarted do not pile up in every stream. Atomic: a consumer that
    reads meanwhile is not forgotten with entries in hand."""
    try:
        return DROP_IDLE_CONSUMERS(r, [stream], [GROUP])
    except redis.exceptions.ResponseError:
        return 0  # no stream or no group: nothing to forget


def stream_length(r: redis.Redis | RedisCluster, stream: str) -> int:
    return r.xlen(stream)


def stream_entries(r: redis.Redis | RedisCluster, stream: str) -> list[list]:
    """Every entry ``(id, [field, value, ...])`` still in the stream (read or not): the
    actions not yet known to be in the database. The flush deletes what it applied, so this is
    about a second's worth."""
    return [_flat(e) for e in _as_sent(r).xrange(stream, "-", "+") or [] if e and e[1]]


def entry_version(entry_id: str) -> int:
    """A stream entry id ``<ms>-<seq>`` as one integer that orders like the ids."""
    ms, seq = entry_id.split("-")
    return (int(ms) << 20) | int(seq)

"""53-bit time-ordered ids, made in the application.

Layout (most significant first): 41 bits of milliseconds since ``EPOCH`` (enough until 2094),
8 bits of worker number, 4 bits of sequence within the millisecond. 53 bits because ids travel
to browsers as JSON numbers and serve as Redis sorted-set scores: both are IEEE-754 doubles,
exact only up to 2**53.

The worker number is leased once per process from the database (``IdWorkerLease``), so every
process that shares a database gets a distinct number as long as fewer than 256 of them were
started since the oldest one still running — a property of the lease counter, not of pids,
which repeat across containers.
"""

from __future__ import annotations

import os
import threading
import time
from datetime import UTC, datetime

EPOCH_MS = 1735689600000  # 2025-01-01T00:00:00Z
TIME_BITS = 41
WORKER_BITS = 8
SEQUENCE_BITS = 4
MAX_WORKER = (1 << WORKER_BITS) - 1
MAX_SEQUENCE = (1 << SEQUENCE_BITS) - 1
MAX_ID = (1 << 53) - 1
WORKER_SHIFT = SEQUENCE_BITS
TIME_SHIFT = SEQUENCE_BITS + WORKER_BITS


class IdGenerator:
    """Thread-safe generator for one process; ``worker`` must be unique among live processes."""

    def __init__(self, worker: int, clock=time.time) -> None:
        if not 0 <= worker <= MAX_WORKER:
            raise ValueError(f"worker must be in 0..{MAX_WORKER}")
        self.worker = worker
        self._clock = clock
        self._lock = threading.Lock()
        self._last_ms = -1
        self._sequence = 0

    def _now_ms(self) -> int:
        return int(self._clock() * 1000) - EPOCH_MS

    def next_id(self) -> int:
        with self._lock:
            now = self._now_ms()
            if now < self._last_ms:
                # The clock stepped back (NTP): keep issuing from the last millisecond we used
                # rather than risk repeating an id; the sequence bounds how far we run ahead.
                now = self._last_ms
            if now == self._last_ms:
                self._sequence += 1
                if self._sequence > MAX_SEQUENCE:
                    while now <= self._last_ms:
                        time.sleep(0.0001)
                        now = self._now_ms()
                    self._sequence = 0
            else:
                self._sequence = 0
            self._last_ms = now
            if now >> TIME_BITS:
                raise OverflowError("id time bits exhausted")
            return (now << TIME_SHIFT) | (self.worker << WORKER_SHIFT) | self._sequence


def id_floor_at(moment: datetime) -> int:
    """The smallest id that could have been made at ``moment``: ids are time-ordered, so
    ``id >= id_floor_at(t)`` selects rows created since ``t`` through the primary key."""
    ms = int(moment.timestamp() * 1000) - EPOCH_MS
    return max(ms, 0) << TIME_SHIFT


def id_time(value: int) -> datetime:
    return datetime.fromtimestamp(((value >> TIME_SHIFT) + EPOCH_MS) / 1000, tz=UTC)


_generator: IdGenerator | None = None
_generator_pid: int | None = None
_generator_lock = threading.Lock()


def _lease_worker_number() -> int:
    from .models import IdWorkerLease

    lease = IdWorkerLease.objects.create(pid=os.getpid(), host=os.uname().nodename[:255])
    return lease.pk % (MAX_WORKER + 1)


def new_id() -> int:
    """A fresh id for this process. Forked children lease their own worker number.

    Call it outside ``transaction.atomic``: the first call in a process writes its lease, which
    must not be rolled back with the caller's transaction.
    """
    global _generator, _generator_pid
    pid = os.getpid()
    if _generator is None or _generator_pid != pid:
        with _generator_lock:
            if _generator is None or _generator_pid != pid:
                _generator = IdGenerator(_lease_worker_number())
                _generator_pid = pid
    return _generator.next_id()

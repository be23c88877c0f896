"""Hot copies: the pages read often in this process, kept in its memory for a short while
(``COMMENTS_HOT_PAGE_READS``, ``COMMENTS_HOT_PAGE_SECONDS``; a fast path of the page cache,
``infra.pagecache``, "Hot pages", and docs/fast-paths.md)."""

from __future__ import annotations

import threading
import time
from collections import OrderedDict
from typing import Any

from django.conf import settings


class HotPages:
    """Entries read often in this process, kept in its memory for a short while.

    Reads are counted per entry in one-second buckets (this second's and the last one's,
    weighted by how much of the last one the window still covers); only the ``capacity`` most
    recently hot entries are kept, so a crawler walking every page fills nothing."""

    def __init__(self, capacity: int = 256, tracked: int = 4096):
        self.capacity = capacity
        self.tracked = tracked
        self._lock = threading.Lock()
        # key: (expires, subject id, entry)
        self._copies: OrderedDict[str, tuple[float, int, Any]] = OrderedDict()
        self._second = 0
        self._now: dict[str, int] = {}
        self._before: dict[str, int] = {}

    def _rate(self, key: str, now: float) -> float:
        """Reads of ``key`` in the second up to ``now``."""
        second = int(now)
        if second != self._second:
            self._before = self._now if second == self._second + 1 else {}
            self._now = {}
            self._second = second
        return self._now.get(key, 0) + self._before.get(key, 0) * (1.0 - (now - second))

    def _count(self, key: str, now: float) -> float:
        """Count a read of ``key``; its reads in the second up to ``now``."""
        rate = self._rate(key, now)
        if len(self._now) < self.tracked or key in self._now:
            self._now[key] = self._now.get(key, 0) + 1
            rate += 1
        return rate

    def get(self, key: str) -> Any:
        """The copy of ``key``, or None."""
        if settings.COMMENTS_HOT_PAGE_SECONDS <= 0:
            return None
        now = time.monotonic()
        with self._lock:
            self._count(key, now)
            held = self._copies.get(key)
            if held is None:
                return None
            if held[0] <= now:
                del self._copies[key]
                return None
        return held[2]

    def offer(self, subject_id: int, key: str, entry, *, counted: bool) -> None:
        """A read of ``key`` that went to the shared cache or the database (``counted`` when
        ``get`` already counted it): keep ``entry`` here if the key is hot."""
        seconds = settings.COMMENTS_HOT_PAGE_SECONDS
        if seconds <= 0:
            return
        now = time.monotonic()
        with self._lock:
            reads = self._rate(key, now) if counted else self._count(key, now)
            if reads < settings.COMMENTS_HOT_PAGE_READS:
                return
            self._copies[key] = (now + seconds, subject_id, entry)
            self._copies.move_to_end(key)
            while len(self._copies) > self.capacity:
                self._copies.popitem(last=False)

    def forget_subjects(self, subject_ids) -> None:
        subject_ids = set(subject_ids)
        with self._lock:
            for key in [k for k, held in self._copies.items() if held[1] in subject_ids]:
                del self._copies[key]

    def clear(self) -> None:
        with self._lock:
            self._copies.clear()
            self._now, self._before = {}, {}

    def hot_keys(self) -> list[str]:
        with self._lock:
            return list(self._copies)


hot = HotPages()
